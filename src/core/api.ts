import { z } from 'zod';
import { errorCodes, type ErrorData } from './errors.ts';

export { batonApiHeader, batonApiVersion } from './api-header.ts';

/** Where `baton serve` listens unless told otherwise: loopback only (the default). */
export const defaultHost = '127.0.0.1';
export const defaultPort = 4680;

/**
 * The most bytes a request body may have (2 MiB): the server answers a larger one 413
 * payload_too_large, and the typed client refuses to send one.
 */
export const bodyLimit = 2 * 1024 * 1024;

/** The error codes an answer may carry: a BatonError's, and internal for a failure that is not one. */
export const wireCodes = [...errorCodes, 'internal'] as const;
export type WireCode = (typeof wireCodes)[number];

export interface ErrorEnvelope {
  readonly error: { readonly code: WireCode; readonly message: string; readonly details: ErrorData };
}

/** Every refusal's body, over HTTP and as an MCP tool error's structured content. */
export const errorEnvelopeSchema = z.strictObject({
  error: z.strictObject({
    code: z.enum(wireCodes),
    message: z.string(),
    details: z.record(z.string(), z.unknown()),
  }),
});
