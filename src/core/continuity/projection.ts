/**
 * WorkContinuity: a pure projection of one scope's Source journal. It reads only the four work
 * kinds, counts them, excludes (and counts) records that fail their schema, keeps the latest
 * 64 events in journal position order, and decides transfer and outcome state for the current
 * exact revision. Projecting the same entries twice gives the same result.
 */
import type { Digest } from '../canonical.ts';
import type { Entry } from '../ledger/entry.ts';
import type { SourceRef } from '../ledger/source.ts';
import {
  isWorkKind,
  managedWorkSourceIdPrefix,
  readWorkRecord,
  type WorkKind,
  type WorkRecord,
} from './records.ts';

export const timelineLimit = 64;

export type TransferState =
  'not_applicable' | 'awaiting_receipt' | 'needs_clarification' | 'declined' | 'accepted';
export type OutcomeState = 'not_expected' | 'awaiting_outcome' | 'covered';

export interface TimelineEvent {
  /** Journal position: a stable order, not a time. */
  readonly position: number;
  readonly kind: WorkKind;
  readonly source_ref: SourceRef;
  readonly summary: string;
  /** Receipt or outcome status, or the boundary's disposition. */
  readonly status?: string;
  /**
   * The managed session Baton wrote this record for (an ended contract's Task Outcome, an
   * interrupted run's boundary). Only Baton writes under the `managed-work:` prefix, so this is
   * never a caller's claim; a caller's attribution is not read.
   */
  readonly session_id?: string;
}

function runtimeSession(record: ValidWorkRecord): { session_id: string } | Record<string, never> {
  if (!record.source_ref.source_id.startsWith(managedWorkSourceIdPrefix)) return {};
  const { work } = record;
  const session =
    work.kind === 'task-outcome' || work.kind === 'handoff-boundary'
      ? work.record.attribution?.session
      : undefined;
  return session ? { session_id: session } : {};
}

export interface WorkContinuity {
  readonly scope_id: string;
  /** The exact revision transfer state is decided for; null when none is committed. */
  readonly current: { readonly revision: number; readonly digest: Digest } | null;
  readonly counts: Readonly<Record<WorkKind, number>>;
  readonly invalid_record_count: number;
  readonly timeline: readonly TimelineEvent[];
  readonly truncated: boolean;
  readonly transfer_state: TransferState;
  readonly outcome_state: OutcomeState;
  /** The last receipt for the current exact revision, which decides the transfer state. */
  readonly active_receipt_ref: SourceRef | null;
  /** The outcome that covers the active accepted receipt. */
  readonly covering_outcome_ref: SourceRef | null;
}

export interface ValidWorkRecord {
  readonly position: number;
  readonly source_ref: SourceRef;
  readonly work: WorkRecord;
}

export function sameRef(a: SourceRef | undefined, b: SourceRef): boolean {
  return !!a && a.scope_id === b.scope_id && a.source_id === b.source_id && a.digest === b.digest;
}

function summary(work: WorkRecord): Pick<TimelineEvent, 'summary' | 'status'> {
  switch (work.kind) {
    case 'work-contract':
      return { summary: work.record.objective };
    case 'handoff-boundary':
      return { summary: work.record.objective, status: work.record.disposition };
    case 'handoff-receipt': {
      const target = work.record.target;
      const what = target.kind === 'exact' ? `revision ${target.revision}` : `prepared ${target.digest}`;
      return { summary: `${work.record.status} for ${what}`, status: work.record.status };
    }
    case 'task-outcome':
      return { summary: work.record.summary, status: work.record.status };
  }
}

/** Split a scope's entries into valid work records and the counts of what was left out. */
export function readWorkEntries(
  scope_id: string,
  entries: Iterable<Entry>,
): {
  records: ValidWorkRecord[];
  invalid: number;
} {
  const records: ValidWorkRecord[] = [];
  let invalid = 0;
  for (const entry of entries) {
    if (entry.type !== 'source' || entry.source_id === null) continue;
    // Only this scope's journal counts: entries of another stream never change the projection.
    if (entry.stream.kind !== 'scope' || entry.stream.scope_id !== scope_id) continue;
    // A retracted record was purged: it is no longer history, valid or not.
    if (entry.retracted) continue;
    const kind = entry.metadata?.kind;
    if (!isWorkKind(kind)) continue;
    const work = readWorkRecord(kind, entry.content);
    if (!work) {
      invalid += 1;
      continue;
    }
    records.push({
      position: entry.position,
      source_ref: { scope_id, source_id: entry.source_id, digest: entry.digest },
      work,
    });
  }
  return { records, invalid };
}

export function projectContinuity(
  scope_id: string,
  entries: Iterable<Entry>,
  current: { revision: number; digest: Digest } | null,
): WorkContinuity {
  const { records, invalid } = readWorkEntries(scope_id, entries);
  records.sort((a, b) => a.position - b.position);
  const counts: Record<WorkKind, number> = {
    'work-contract': 0,
    'handoff-boundary': 0,
    'handoff-receipt': 0,
    'task-outcome': 0,
  };
  for (const { work } of records) counts[work.kind] += 1;

  let active: ValidWorkRecord | undefined;
  if (current) {
    for (const record of records) {
      if (record.work.kind !== 'handoff-receipt') continue;
      const target = record.work.record.target;
      if (
        target.kind === 'exact' &&
        target.revision === current.revision &&
        target.digest === current.digest
      ) {
        active = record;
      }
    }
  }
  const transfer_state: TransferState = !current
    ? 'not_applicable'
    : !active || active.work.kind !== 'handoff-receipt'
      ? 'awaiting_receipt'
      : active.work.record.status;
  let covering: ValidWorkRecord | undefined;
  if (transfer_state === 'accepted' && active) {
    covering = records.find(
      (record) =>
        record.work.kind === 'task-outcome' &&
        sameRef(record.work.record.handoff_receipt_ref, active.source_ref),
    );
  }
  const outcome_state: OutcomeState =
    transfer_state !== 'accepted' ? 'not_expected' : covering ? 'covered' : 'awaiting_outcome';

  const shown = records.slice(-timelineLimit);
  return {
    scope_id,
    current: current ? { revision: current.revision, digest: current.digest } : null,
    counts,
    invalid_record_count: invalid,
    timeline: shown.map((record) => ({
      position: record.position,
      kind: record.work.kind,
      source_ref: record.source_ref,
      ...summary(record.work),
      ...runtimeSession(record),
    })),
    truncated: records.length > shown.length,
    transfer_state,
    outcome_state,
    active_receipt_ref: active?.source_ref ?? null,
    covering_outcome_ref: covering?.source_ref ?? null,
  };
}
