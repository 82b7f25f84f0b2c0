/**
 * Sources on scope streams: exact references, receipts, and the pure rule that makes capture
 * idempotent. The same source_id with the same digest returns the original receipt; with a
 * different digest it is a conflict carrying the digest already stored.
 */
import { z } from 'zod';
import { digestPattern, type Digest } from '../canonical.ts';
import { BatonError } from '../errors.ts';
import type { SealedEntry } from './entry.ts';
import { scopeIdSchema, sourceIdSchema } from './names.ts';

export const sourceRefSchema = z.strictObject({
  scope_id: scopeIdSchema,
  source_id: sourceIdSchema,
  digest: z.string().regex(digestPattern, 'a digest is sha256:<64 hex>') as z.ZodType<Digest>,
});

export type SourceRef = Readonly<z.infer<typeof sourceRefSchema>>;

/**
 * Why a source was retracted: not blank, at most 1,000 characters, no control character but tab
 * and line feed, no lone surrogate (stored as text, where SQLite and PostgreSQL would turn one
 * into U+FFFD). The stores hold the reason to it trimmed.
 */
export const retractionReasonSchema = z
  .string()
  .min(1, { abort: true, message: 'a reason is not blank' })
  .max(1000)
  .regex(/\S/, 'a reason is not blank')
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  .regex(/^[^\u0000-\u0008\u000b-\u001f\u007f]*$/, 'a reason has no control characters')
  .refine((text) => text.isWellFormed(), 'a reason has no lone surrogate');

/** WorkSourceReceipt: the exact ref, the journal position and the canonical digest. */
export interface SourceReceipt {
  readonly source_ref: SourceRef;
  readonly position: number;
  readonly digest: Digest;
}

/** The receipt of a stored source; a pure function of what is stored, so retries are identical. */
export function sourceReceipt(
  scope_id: string,
  source_id: string,
  digest: Digest,
  position: number,
): SourceReceipt {
  return { source_ref: { scope_id, source_id, digest }, position, digest };
}

export type UnavailableReason = 'missing' | 'digest_mismatch' | 'retracted';

/** What the store holds under a source_id of a stream, as the append plan needs it. */
export interface StoredSource {
  readonly source_id: string;
  readonly digest: Digest;
  readonly position: number;
  readonly retracted: boolean;
}

/** The outcome for one entry of an append: where it is, and whether this append wrote it. */
export interface AppendResult {
  readonly position: number;
  readonly digest: Digest;
  readonly source_id: string | null;
  readonly created: boolean;
}

export interface AppendPlan {
  /** Entries to write, in order, at head+1, head+2, ... */
  readonly writes: readonly SealedEntry[];
  readonly results: readonly AppendResult[];
}

/**
 * Decide what an append writes, given the stream head and the sources already stored under
 * the batch's source_ids. Pure: the backends run it inside their write transaction.
 */
export function planAppend(
  head: number,
  batch: readonly SealedEntry[],
  stored: ReadonlyMap<string, StoredSource>,
  describe: string,
): AppendPlan {
  const writes: SealedEntry[] = [];
  const results: AppendResult[] = [];
  const seen = new Map<string, AppendResult>();
  for (const entry of batch) {
    const id = entry.source_id;
    if (id !== null) {
      const existing = stored.get(id);
      if (existing) {
        if (existing.retracted) {
          throw new BatonError(
            'conflict',
            `source ${id} in ${describe} was retracted; its id cannot be reused`,
            {
              source_id: id,
              existing_digest: existing.digest,
              retracted: true,
            },
          );
        }
        if (existing.digest !== entry.digest)
          throw sourceConflict(describe, id, existing.digest, entry.digest);
        results.push({ position: existing.position, digest: existing.digest, source_id: id, created: false });
        continue;
      }
      const earlier = seen.get(id);
      if (earlier) {
        if (earlier.digest !== entry.digest) throw sourceConflict(describe, id, earlier.digest, entry.digest);
        results.push({ ...earlier, created: false });
        continue;
      }
    }
    writes.push(entry);
    const result: AppendResult = {
      position: head + writes.length,
      digest: entry.digest,
      source_id: id,
      created: true,
    };
    if (id !== null) seen.set(id, result);
    results.push(result);
  }
  return { writes, results };
}

function sourceConflict(
  describe: string,
  source_id: string,
  existing: Digest,
  attempted: Digest,
): BatonError {
  return new BatonError(
    'conflict',
    `source ${source_id} in ${describe} already holds different content (digest ${existing})`,
    { source_id, existing_digest: existing, attempted_digest: attempted },
  );
}
