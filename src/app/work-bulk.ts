/**
 * The two bulk operations of managed work (the spec's "single and bulk endpoints"): each
 * composes the single operation per entry and answers per entry, an entry's refusal as its own
 * error, so one bad id never hides the others' results.
 */
import { z } from 'zod';
import { BatonError, type ErrorCode, type ErrorData } from '../core/errors.ts';
import { sessionIdSchema } from '../core/ledger/names.ts';
import { parseRecord } from '../core/records.ts';
import { workIdSchema, type Actor } from '../core/work/model.ts';
import type { AppDeps } from './deps.ts';
import { cancelItem, readWork, type WorkSnapshot } from './work.ts';

/** At most this many sessions in one query, and items in one bulk cancel. */
export const bulkLimit = 100;

export const queryWorkFields = {
  session_ids: z.array(sessionIdSchema).min(1).max(bulkLimit),
};
export const cancelItemsFields = {
  session_id: sessionIdSchema,
  contract_id: workIdSchema.optional(),
  item_ids: z.array(workIdSchema).min(1).max(bulkLimit),
  reason: z.string().max(4000).optional(),
};
// Built once: a zod schema costs far more to build than to run.
const queryWorkInput = z.strictObject(queryWorkFields);
const cancelItemsInput = z.strictObject(cancelItemsFields);

/** An error as a bulk answer carries it for one entry: the envelope's fields. */
export interface EntryError {
  readonly code: ErrorCode;
  readonly message: string;
  readonly details: ErrorData;
}

export type QueriedWork =
  | { readonly session_id: string; readonly work: WorkSnapshot }
  | { readonly session_id: string; readonly error: EntryError };

export interface QueryWorkResult {
  readonly sessions: readonly QueriedWork[];
}

export type CancelledItem =
  | { readonly item_id: string; readonly status: 'cancelled'; readonly position: number }
  | { readonly item_id: string; readonly error: EntryError };

export interface CancelItemsResult {
  readonly session_id: string;
  readonly items: readonly CancelledItem[];
  /** The work after the last change (or as it was, when nothing changed). */
  readonly work: WorkSnapshot;
}

/** A refusal as one entry of a bulk answer; anything else is not the entry's to answer. */
export function entryError(error: unknown): EntryError {
  if (!(error instanceof BatonError)) throw error;
  return { code: error.code, message: error.message, details: error.data };
}

export async function queryWork(deps: AppDeps, project_id: string, input: unknown): Promise<QueryWorkResult> {
  const { session_ids } = parseRecord(queryWorkInput, input, 'work query');
  const sessions: QueriedWork[] = [];
  for (const session_id of session_ids) {
    try {
      sessions.push({ session_id, work: await readWork(deps, project_id, { session_id }) });
    } catch (error) {
      sessions.push({ session_id, error: entryError(error) });
    }
  }
  return { sessions };
}

export async function cancelItems(
  deps: AppDeps,
  project_id: string,
  input: unknown,
  actor: Actor,
): Promise<CancelItemsResult> {
  const parsed = parseRecord(cancelItemsInput, input, 'bulk cancellation');
  const { session_id, item_ids, ...rest } = parsed;
  // A session outside the caller's project is not found as a whole, before anything is written.
  let work = await readWork(deps, project_id, { session_id });
  const items: CancelledItem[] = [];
  for (const item_id of item_ids) {
    try {
      work = await cancelItem(deps, project_id, { session_id, item_id, ...rest }, actor);
      items.push({ item_id, status: 'cancelled', position: work.position });
    } catch (error) {
      items.push({ item_id, error: entryError(error) });
    }
  }
  return { session_id, items, work };
}
