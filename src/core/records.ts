/**
 * Record schema conventions. Every persisted record carries a versioned schema id
 * (`baton.<name>/v<N>`). Records are parsed loosely: unknown fields are preserved, never
 * rejected, and a field added later is optional with a default so old records stay readable.
 */
import { z } from 'zod';
import { BatonError } from './errors.ts';

export type SchemaId = `baton.${string}/v${number}`;

export const schemaIdPattern = /^baton\.[a-z][a-z0-9-]*\/v[1-9][0-9]*$/;

/** A record schema: the given fields plus `schema: <id>`, keeping any field it does not know. */
export function recordSchema<const Id extends SchemaId, const Shape extends z.ZodRawShape>(
  id: Id,
  shape: Shape,
) {
  if (!schemaIdPattern.test(id)) throw new Error(`bad schema id ${id}`);
  return z.looseObject({ schema: z.literal(id), ...shape });
}

export interface SchemaIssue {
  readonly path: string;
  readonly message: string;
}

export function schemaIssues(error: z.ZodError): SchemaIssue[] {
  return error.issues.map((issue) => ({
    path: issue.path.map(String).join('.'),
    message: issue.message,
  }));
}

/** Refuse input that is not a JSON object before reading any field of it. */
export function requireObject(input: unknown, what: string): asserts input is Record<string, unknown> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new BatonError('invalid_input', `${what} is invalid: expected a JSON object`, {
      issues: [{ path: '', message: 'expected a JSON object' }],
    });
  }
}

/** Parse a value with a schema, or throw invalid_input naming every issue. */
export function parseRecord<T extends z.ZodType>(schema: T, value: unknown, what: string): z.output<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = schemaIssues(result.error);
  const first = issues[0];
  const where = first && first.path !== '' ? ` at ${first.path}` : '';
  throw new BatonError('invalid_input', `${what} is invalid${where}: ${first?.message ?? 'unknown issue'}`, {
    issues,
  });
}
