/**
 * Record schema conventions. Every persisted record carries a versioned schema id
 * (`baton.<name>/v<N>`). Records are parsed loosely: unknown fields are preserved, never
 * rejected, and a field added later is optional with a default so old records stay readable.
 */
import { z } from 'zod';
import { BatonError } from './errors.ts';
import { echoed } from './text.ts';

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

/** Unknown keys named in one issue; more are counted. */
const keysNamed = 5;

/** zod's message, with the input's keys it repeats cut (echoed) and at most keysNamed of them. */
function issueMessage(issue: z.core.$ZodIssue): string {
  if (issue.code !== 'unrecognized_keys') return issue.message;
  const named = issue.keys.slice(0, keysNamed).map((key) => JSON.stringify(echoed(key)));
  const more = issue.keys.length - named.length;
  return `Unrecognized key${issue.keys.length === 1 ? '' : 's'}: ${named.join(', ')}${more > 0 ? ` and ${more} more` : ''}`;
}

/** Each issue's path and message; keys from the input are cut to about 100 characters. */
export function schemaIssues(error: z.ZodError): SchemaIssue[] {
  return error.issues.map((issue) => ({
    path: issue.path.map((segment) => echoed(String(segment))).join('.'),
    message: issueMessage(issue),
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
