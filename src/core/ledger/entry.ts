/**
 * Ledger entries: what a caller appends, how it is sealed (canonical body and digest), and
 * what a read returns. The digest of an entry is SHA-256 of the RFC 8785 JSON of
 * `{content, metadata}`; the stored body is exactly that canonical text, so a torn entry
 * shows itself as a body whose digest does not match.
 */
import { z } from 'zod';
import { canonicalJson, sha256Digest, type Digest } from '../canonical.ts';
import { BatonError } from '../errors.ts';
import { jsonObjectSchema, jsonValueSchema, type JsonObject, type JsonValue } from '../json.ts';
import { parseRecord } from '../records.ts';
import { entryTypeSchema, sourceIdSchema, type StreamKey } from './names.ts';

/** Limits on what one append may write; over them the store answers payload_too_large. */
export const ledgerLimits = {
  /** Bytes of one entry's canonical body `{content, metadata}`. */
  entryBytes: 1024 * 1024,
  /** Entries in one atomic append. */
  batchEntries: 1000,
  /** Bytes of all bodies in one atomic append. */
  batchBytes: 16 * 1024 * 1024,
} as const;

export const entryInputSchema = z.strictObject({
  type: entryTypeSchema,
  source_id: sourceIdSchema.optional(),
  content: jsonValueSchema,
  metadata: jsonObjectSchema.default({}),
});

export type EntryInput = Readonly<z.input<typeof entryInputSchema>>;

/** An entry ready to write: validated, canonical, digested. */
export interface SealedEntry {
  readonly type: string;
  readonly source_id: string | null;
  /** metadata.kind when it is a short string: indexed, so a projection reads only its kinds. */
  readonly kind: string | null;
  readonly body: string;
  readonly digest: Digest;
}

export interface Retraction {
  readonly at: string;
  readonly reason: string;
}

/** One entry as read back from a stream. A retracted entry keeps its identity, not its content. */
export interface Entry {
  readonly stream: StreamKey;
  readonly position: number;
  readonly global_seq: number;
  readonly type: string;
  readonly source_id: string | null;
  readonly digest: Digest;
  readonly recorded_at: string;
  readonly content: JsonValue | null;
  readonly metadata: JsonObject | null;
  readonly retracted: Retraction | null;
}

export function entryBody(content: JsonValue, metadata: JsonObject): string {
  return canonicalJson({ content, metadata });
}

/** Validate and seal one entry; throws invalid_input or payload_too_large. */
export function sealEntry(input: unknown): SealedEntry {
  const parsed = parseRecord(entryInputSchema, input, 'entry');
  // Digest what the caller sent, not zod's copy: parsing drops a "__proto__" key.
  const given = input as { content: JsonValue; metadata?: JsonObject };
  const body = entryBody(given.content, given.metadata ?? {});
  const bytes = Buffer.byteLength(body, 'utf8');
  if (bytes > ledgerLimits.entryBytes) {
    throw new BatonError(
      'payload_too_large',
      `entry is ${bytes} bytes; the limit is ${ledgerLimits.entryBytes}`,
      {
        bytes,
        limit: ledgerLimits.entryBytes,
      },
    );
  }
  return {
    type: parsed.type,
    source_id: parsed.source_id ?? null,
    kind: kindOf(given.metadata ?? {}),
    body,
    digest: sha256Digest(body),
  };
}

/** Validate and seal a whole batch; nothing of it may be written if any entry fails. */
export function sealBatch(inputs: readonly unknown[]): SealedEntry[] {
  if (!Array.isArray(inputs) || inputs.length === 0) {
    throw new BatonError('invalid_input', 'an append needs at least one entry');
  }
  if (inputs.length > ledgerLimits.batchEntries) {
    throw new BatonError(
      'payload_too_large',
      `an append holds at most ${ledgerLimits.batchEntries} entries, got ${inputs.length}`,
      { entries: inputs.length, limit: ledgerLimits.batchEntries },
    );
  }
  const sealed = inputs.map((input, index) => {
    try {
      return sealEntry(input);
    } catch (error) {
      if (error instanceof BatonError) {
        throw new BatonError(error.code, `entry ${index}: ${error.message}`, { ...error.data, index });
      }
      throw error;
    }
  });
  const bytes = sealed.reduce((sum, entry) => sum + Buffer.byteLength(entry.body, 'utf8'), 0);
  if (bytes > ledgerLimits.batchBytes) {
    throw new BatonError(
      'payload_too_large',
      `append is ${bytes} bytes; the limit is ${ledgerLimits.batchBytes}`,
      {
        bytes,
        limit: ledgerLimits.batchBytes,
      },
    );
  }
  return sealed;
}

/** The indexed kind of an entry: its metadata.kind when that is a string of 1-64 characters. */
export function kindOf(metadata: JsonObject): string | null {
  const kind = metadata.kind;
  return typeof kind === 'string' && kind.length > 0 && kind.length <= 64 ? kind : null;
}

/** Parse a stored body back into content and metadata. */
export function openBody(body: string): { content: JsonValue; metadata: JsonObject } {
  return JSON.parse(body) as { content: JsonValue; metadata: JsonObject };
}

/** Whether a stored body still matches its digest (false means the entry is torn). */
export function bodyMatches(body: string, digest: Digest): boolean {
  return sha256Digest(body) === digest;
}

/**
 * Entry types this version of Baton knows. Others are kept and reported, never dropped: a
 * newer Baton may have written them.
 */
export const knownEntryTypes: ReadonlySet<string> = new Set([
  'source',
  // Session streams (src/core/work/session.ts, which a test keeps in step with this list).
  'session_header',
  'user_message',
  'assistant_message',
  'tool_call',
  'tool_result',
  'work_event',
  'receipt',
  'checkpoint',
  'terminal',
]);

/** A Prepared Handoff body as stored: its canonical text and the digest that names it. */
export interface PreparedText {
  readonly text: string;
  readonly digest: Digest;
}

/** Validate, canonicalise and digest a Prepared Handoff body before any transaction opens. */
export function sealPrepared(body: unknown): PreparedText {
  parseRecord(jsonObjectSchema, body, 'prepared handoff body');
  // Canonicalise the caller's own object: zod's copy would drop a "__proto__" key.
  const text = canonicalJson(body);
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > ledgerLimits.entryBytes) {
    throw new BatonError(
      'payload_too_large',
      `prepared handoff is ${bytes} bytes; the limit is ${ledgerLimits.entryBytes}`,
      {
        bytes,
        limit: ledgerLimits.entryBytes,
      },
    );
  }
  return { text, digest: sha256Digest(text) };
}
