/** The identifiers of the ledger and the streams they name: projects, scope and session streams. */
import { z } from 'zod';

/** Project ids are slugs: lower-case letters, digits, `.`, `_`, `-`; 1..64 characters. */
export const projectIdSchema = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9._-]{0,63}$/,
    'a project id is 1-64 of a-z 0-9 . _ - starting with a letter or digit',
  );

const visible = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

/** A Workstream's stable identity: 1..200 visible ASCII characters, no leading or trailing space. */
export const scopeIdSchema = z
  .string()
  .max(200)
  .regex(visible, 'a scope_id is 1-200 visible ASCII characters');

/**
 * A session id as the ledger holds it: 1..200 visible ASCII characters. Records are read with
 * this, so a session named before the rule below still projects.
 */
export const storedSessionIdSchema = z
  .string()
  .max(200)
  .regex(visible, 'a session id is 1-200 visible ASCII characters');

/**
 * A new session's identity, as scope_ids are, except "." and "..": a session is named in URL
 * paths (/v1/sessions/<id>/work), where every URL parser removes such a segment, even
 * percent-encoded.
 */
export const sessionIdSchema = storedSessionIdSchema.regex(
  /^(?!\.\.?$)/,
  'a session id is not "." or "..", which no URL path can name',
);

/** A caller-chosen stable source id: 1..256 visible ASCII characters. */
export const sourceIdSchema = z
  .string()
  .max(256)
  .regex(visible, 'a source_id is 1-256 visible ASCII characters');

export const entryTypeSchema = z
  .string()
  .regex(/^[a-z][a-z0-9_.-]{0,63}$/, 'an entry type is 1-64 of a-z 0-9 _ . - starting with a letter');

export const scopeKeySchema = z.strictObject({
  project_id: projectIdSchema,
  scope_id: scopeIdSchema,
});

export const streamKeySchema = z.discriminatedUnion('kind', [
  z.strictObject({ project_id: projectIdSchema, kind: z.literal('scope'), scope_id: scopeIdSchema }),
  z.strictObject({ project_id: projectIdSchema, kind: z.literal('session'), session_id: sessionIdSchema }),
]);

export type ScopeKey = Readonly<z.infer<typeof scopeKeySchema>>;
export type StreamKey = Readonly<z.infer<typeof streamKeySchema>>;
export type StreamKind = StreamKey['kind'];

export function scopeStream(scope: ScopeKey): StreamKey {
  return { project_id: scope.project_id, kind: 'scope', scope_id: scope.scope_id };
}

/** The stream's name within its project and kind: the scope_id or the session id. */
export function streamName(stream: StreamKey): string {
  return stream.kind === 'scope' ? stream.scope_id : stream.session_id;
}

export function streamKey(project_id: string, kind: StreamKind, name: string): StreamKey {
  return kind === 'scope' ? { project_id, kind, scope_id: name } : { project_id, kind, session_id: name };
}

export function describeStream(stream: StreamKey): string {
  return `${stream.project_id}/${stream.kind}/${streamName(stream)}`;
}
