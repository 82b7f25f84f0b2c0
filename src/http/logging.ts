/**
 * Structured logs through Fastify's pino logger. Credentials never reach a log line: the
 * Authorization, Cookie, Set-Cookie and X-CSRF-Token headers are redacted wherever a request or
 * response is logged, and no Baton log call writes a request body.
 */
import type { FastifyServerOptions } from 'fastify';

export const redactedPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-csrf-token"]',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
  'headers["x-csrf-token"]',
];

/** Fastify's logger option: off, or pino's options (level info unless given) with redaction added. */
export function loggerOptions(logger: boolean | object | undefined): FastifyServerOptions['logger'] {
  if (logger === false) return false;
  const given = (logger === true || logger === undefined ? {} : logger) as {
    redact?: string[] | { paths: string[]; censor?: string; remove?: boolean };
  };
  const extra = Array.isArray(given.redact) ? given.redact : (given.redact?.paths ?? []);
  return {
    level: 'info',
    ...given,
    redact: { paths: [...redactedPaths, ...extra], censor: '[redacted]' },
  };
}
