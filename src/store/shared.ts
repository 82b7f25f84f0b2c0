/**
 * What every backend does the same way: argument checks, row decoding, exact-ref availability,
 * paged reads and checks on imported entries. Backends keep only their SQL and transactions.
 */
import { z } from 'zod';
import { isDigest, type Digest } from '../core/canonical.ts';
import { BatonError } from '../core/errors.ts';
import { bodyMatches, entryBody, kindOf, openBody, type Entry } from '../core/ledger/entry.ts';
export { sealPrepared, type PreparedText } from '../core/ledger/entry.ts';
import {
  describeStream,
  projectIdSchema,
  scopeKeySchema,
  sourceIdSchema,
  streamKeySchema,
  type ScopeKey,
  type StreamKey,
} from '../core/ledger/names.ts';
import { checkExpectedHead } from '../core/ledger/revision.ts';
import { retractionReasonSchema, sourceRefSchema, type SourceRef } from '../core/ledger/source.ts';
import { parseRecord } from '../core/records.ts';
import type {
  NewSession,
  NewToken,
  PortableEntry,
  PositionRange,
  SessionRecord,
  SourceAvailability,
  TokenRecord,
} from './store.ts';

/** One entry row as both backends select it. */
export interface EntryRow {
  readonly position: number;
  readonly global_seq: number;
  readonly type: string;
  readonly source_id: string | null;
  readonly digest: string;
  readonly body: string | null;
  readonly recorded_at: string;
  readonly retracted_at: string | null;
  readonly retraction_reason: string | null;
}

export const entryColumns =
  'position, global_seq, type, source_id, digest, body, recorded_at, retracted_at, retraction_reason';

export const pageSize = 512;

export function checkProjectId(project_id: unknown): string {
  return parseRecord(projectIdSchema, project_id, 'project_id');
}

export function checkStream(stream: unknown): StreamKey {
  return parseRecord(streamKeySchema, stream, 'stream');
}

export function checkScope(scope: unknown): ScopeKey {
  return parseRecord(scopeKeySchema, scope, 'scope');
}

export function checkSourceRef(ref: unknown): SourceRef {
  return parseRecord(sourceRefSchema, ref, 'source ref');
}

export function checkSourceId(source_id: unknown): string {
  return parseRecord(sourceIdSchema, source_id, 'source_id');
}

// Schemas are built once, at load: zod compiles a schema on its first parse, which costs more
// than the parse itself.
const reasonSchema = z.string().trim().pipe(retractionReasonSchema);

export function checkReason(reason: unknown): string {
  return parseRecord(reasonSchema, reason, 'retraction reason');
}

const hashSchema = z.string().regex(/^[0-9a-f]{64}$/, 'a secret hash is 64 lower-case hex');

const newTokenSchema = z.strictObject({
  token_id: z.string().min(1).max(64),
  project_id: projectIdSchema,
  token_hash: hashSchema,
  read_only: z.boolean(),
  label: z.string().max(200),
});

export function checkNewToken(token: unknown): NewToken {
  return parseRecord(newTokenSchema, token, 'token');
}

const newSessionSchema = z.strictObject({
  session_hash: hashSchema,
  token_id: z.string().min(1).max(64),
  csrf_hash: hashSchema,
  expires_at: z.iso.datetime(),
});

export function checkNewSession(session: unknown): NewSession {
  return parseRecord(newSessionSchema, session, 'session');
}

/** A moment as the store compares it: an ISO 8601 UTC time. */
export function checkTime(time: unknown): string {
  return parseRecord(z.iso.datetime(), time, 'time');
}

export function checkHash(hash: unknown): string {
  return parseRecord(hashSchema, hash, 'secret hash');
}

export interface TokenRow {
  readonly token_id: string;
  readonly project_id: string;
  readonly token_hash: string;
  readonly read_only: boolean | number;
  readonly label: string;
  readonly created_at: string;
  readonly revoked_at: string | null;
}

export function rowToToken(row: TokenRow): TokenRecord {
  return {
    token_id: row.token_id,
    project_id: row.project_id,
    token_hash: row.token_hash,
    read_only: row.read_only === true || row.read_only === 1,
    label: row.label,
    created_at: row.created_at,
    revoked_at: row.revoked_at,
  };
}

/** A session row joined with its token row, as both backends select it. */
export type SessionRow = TokenRow & { session_hash: string; csrf_hash: string; expires_at: string };

export function rowToSession(row: SessionRow): SessionRecord {
  return {
    session_hash: row.session_hash,
    token_id: row.token_id,
    csrf_hash: row.csrf_hash,
    expires_at: row.expires_at,
    token: rowToToken(row),
  };
}

export function checkDigest(digest: unknown): Digest {
  if (!isDigest(digest)) throw new BatonError('invalid_input', 'a digest is sha256:<64 lower-case hex>');
  return digest;
}

export function checkRevisionNumber(revision: unknown): number {
  if (typeof revision !== 'number' || !Number.isSafeInteger(revision) || revision < 1) {
    throw new BatonError('invalid_input', 'a revision is a whole number >= 1', { revision });
  }
  return revision;
}

const kindsSchema = z.array(z.string().min(1).max(64)).min(1).max(64);

/** Kinds a read is limited to: 1-64 entries of 1-64 characters. */
export function checkKinds(kinds: unknown): readonly string[] | undefined {
  if (kinds === undefined) return undefined;
  return parseRecord(kindsSchema, kinds, 'kinds');
}

/**
 * Resolve a position range against the head. An empty range (from = to + 1) is allowed, so a
 * reader can ask for what follows the head; a position past it is not_found.
 */
export function checkRange(
  stream: StreamKey,
  head: number,
  range: PositionRange = {},
): { from: number; to: number } {
  const from = range.from ?? 1;
  if (!Number.isSafeInteger(from) || from < 1) {
    throw new BatonError('invalid_input', 'from is a position >= 1', { from });
  }
  // Without an end, a start past the head reads nothing: nothing is there yet.
  const to = range.to ?? (from > head ? from - 1 : head);
  if (range.to === undefined && from > head) return { from, to };
  if (!Number.isSafeInteger(to) || to < from - 1) {
    throw new BatonError('invalid_input', `to is a position >= from - 1 (${from - 1})`, { from, to });
  }
  if (to > head) {
    throw new BatonError(
      'not_found',
      `${describeStream(stream)} has no position ${to}; its head is ${head}`,
      {
        position: to,
        head,
      },
    );
  }
  return { from, to };
}

export function rowToEntry(stream: StreamKey, row: EntryRow): Entry {
  const opened = row.body === null ? null : openBody(row.body);
  return {
    stream,
    position: Number(row.position),
    global_seq: Number(row.global_seq),
    type: row.type,
    source_id: row.source_id,
    digest: row.digest as Digest,
    recorded_at: row.recorded_at,
    content: opened ? opened.content : null,
    metadata: opened ? opened.metadata : null,
    retracted:
      row.retracted_at === null ? null : { at: row.retracted_at, reason: row.retraction_reason ?? '' },
  };
}

/** The columns that say whether a stored source is readable by an exact ref. */
export const identityColumns = 'digest, retracted_at';

export interface IdentityRow {
  readonly digest: string;
  readonly retracted_at: string | null;
}

/** Whether the stored row (or its absence) makes an exact ref readable. */
export function availability(ref: SourceRef, row: IdentityRow | undefined): SourceAvailability {
  if (!row) return { status: 'unavailable', reason: 'missing' };
  if (row.retracted_at !== null) return { status: 'unavailable', reason: 'retracted' };
  if (row.digest !== ref.digest) return { status: 'unavailable', reason: 'digest_mismatch' };
  return { status: 'available' };
}

/** The entry an exact ref reads, or not_found saying why it is unreadable. */
export function readableEntry(
  project_id: string,
  stream: StreamKey,
  ref: SourceRef,
  row: EntryRow | undefined,
): Entry {
  const result = availability(ref, row);
  if (result.status === 'unavailable') throw unavailableError(project_id, ref, result.reason);
  return rowToEntry(stream, row!);
}

export function unavailableError(project_id: string, ref: SourceRef, reason: string): BatonError {
  return new BatonError(
    'not_found',
    `source ${ref.source_id} in ${project_id}/${ref.scope_id} is ${reason}`,
    {
      ...ref,
      project_id,
      reason,
    },
  );
}

/** Read a stream page by page, so a long stream never sits in memory whole. */
export async function* pagedRead(
  range: { from: number; to: number },
  fetchPage: (from: number, to: number, limit: number) => Promise<Entry[]>,
): AsyncGenerator<Entry> {
  let next = range.from;
  while (next <= range.to) {
    const page = await fetchPage(next, range.to, pageSize);
    if (page.length === 0) return;
    for (const entry of page) yield entry;
    next = page[page.length - 1]!.position + 1;
  }
}

/** Check exported entries before an import writes any of them: positions 1..n, sound digests. */
export function checkImport(
  entries: readonly PortableEntry[],
): { body: string | null; kind: string | null; entry: PortableEntry }[] {
  const sourceIds = new Set<string>();
  return entries.map((entry, index) => {
    if (entry.position !== index + 1) {
      throw new BatonError(
        'invalid_input',
        `imported entry ${index} has position ${entry.position}, not ${index + 1}`,
        {
          index,
          position: entry.position,
        },
      );
    }
    if (entry.source_id !== null) {
      if (sourceIds.has(entry.source_id)) {
        throw new BatonError('invalid_input', `source ${entry.source_id} appears twice in the import`, {
          source_id: entry.source_id,
        });
      }
      sourceIds.add(entry.source_id);
    }
    if (entry.retracted !== null) return { body: null, kind: null, entry };
    if (entry.content === null || entry.metadata === null) {
      throw new BatonError('invalid_input', `imported entry at position ${entry.position} has no content`, {
        position: entry.position,
      });
    }
    const body = entryBody(entry.content, entry.metadata);
    if (!bodyMatches(body, entry.digest)) {
      throw new BatonError(
        'invalid_input',
        `imported entry at position ${entry.position} does not match its digest`,
        {
          position: entry.position,
          digest: entry.digest,
        },
      );
    }
    return { body, kind: kindOf(entry.metadata), entry };
  });
}

/** revision_conflict unless the stream's head is still the one the caller read. */
export function requireStreamHead(describe: string, expected: number | undefined, actual: number): void {
  if (expected === undefined) return;
  checkExpectedHead(expected);
  if (expected !== actual) {
    throw new BatonError('revision_conflict', `${describe} moved: its head is ${actual}, not ${expected}`, {
      expected_head: expected,
      actual_head: actual,
    });
  }
}
