/**
 * Where the two specifications meet (docs/managed-work.md, "Bound to a workstream"): a managed
 * session bound to a Workstream is a completion-aware integration. When one of its contracts
 * ends, Baton stores the criterion verdicts in the workstream as a source and records a Task
 * Outcome whose checks are those verdicts, each citing that source. Pure: the app layer writes.
 */
import { sha256Digest } from '../canonical.ts';
import { managedWorkSourceIdPrefix } from '../continuity/experience.ts';
import type { CheckStatus, TaskOutcome } from '../continuity/records.ts';
import type { SourceRef } from '../ledger/source.ts';
import { clipText } from '../text.ts';
import type { ContractStatus } from './model.ts';
import type { ContractProjection } from './projector.ts';

/**
 * The id prefix of the sources Baton writes for a session in a workstream: `managed-work:` and
 * 32 hex digits of the hash of what identifies them, so that the same parts give the same ids.
 */
export function managedWorkSourceKey(parts: readonly unknown[]): string {
  const hash = sha256Digest(JSON.stringify(parts)).slice('sha256:'.length, 'sha256:'.length + 32);
  return `${managedWorkSourceIdPrefix}${hash}`;
}

/** The two sources one ended contract writes: the same ids on every retry, so each is written once. */
export function contractOutcomeSourceIds(
  session_id: string,
  contract_id: string,
): { readonly verdicts: string; readonly outcome: string } {
  const key = managedWorkSourceKey([session_id, contract_id]);
  return { verdicts: `${key}:verdicts`, outcome: `${key}:outcome` };
}

/** How an ended contract reads as a Task Outcome status. Unverified is not a success: unknown. */
export const outcomeStatusOf = {
  completed: 'succeeded',
  failed: 'failed',
  cancelled: 'cancelled',
  unverified: 'unknown',
} as const satisfies Partial<Record<ContractStatus, TaskOutcome['status']>>;

export type EndedContractStatus = keyof typeof outcomeStatusOf;

export function isEndedContractStatus(status: ContractStatus): status is EndedContractStatus {
  return Object.hasOwn(outcomeStatusOf, status);
}

const reasonChars = 300;
const checksKept = 64;
const objectiveChars = 2000;
const remainingKept = 64;

/** A criterion's standing at the end: its verdict, or unknown when it has none or a stale one. */
function checkStatusOf(criterion: ContractProjection['criteria'][number]): CheckStatus {
  if (criterion.result === null || criterion.stale) return 'unknown';
  return criterion.result.verdict;
}

/** The verdicts source: every criterion of the contract as it ended, with its verdict. */
export function contractVerdicts(session_id: string, contract: ContractProjection) {
  const required = new Map(
    contract.contract.criteria.map((criterion) => [criterion.criterion_id, criterion.required]),
  );
  return {
    schema: 'baton.managed-work-verdicts/v1',
    session_id,
    contract_id: contract.contract_id,
    revision: contract.revision,
    status: contract.status,
    criteria: contract.criteria.map((criterion) => ({
      criterion_id: criterion.criterion_id,
      required: required.get(criterion.criterion_id) ?? true,
      status: checkStatusOf(criterion),
      stale: criterion.stale,
      reason: clipText(criterion.result?.reason ?? '', reasonChars),
    })),
  };
}

/**
 * The Task Outcome of an ended contract. Each check is `verified` by the verdicts source when
 * a verdict was recorded, `declared` (status unknown) when none was; required criteria come
 * first, and the summary says how many did not fit the record's 64 checks.
 */
export function contractOutcome(input: {
  readonly session_id: string;
  readonly contract: ContractProjection & { readonly status: EndedContractStatus };
  readonly verdicts: SourceRef;
  readonly handoff_receipt_ref: SourceRef | null;
}): Omit<TaskOutcome, 'schema'> {
  const { session_id, contract, verdicts } = input;
  const rows = contractVerdicts(session_id, contract).criteria;
  const ordered = [...rows.filter((row) => row.required), ...rows.filter((row) => !row.required)];
  const checks = ordered.slice(0, checksKept).map((row) => {
    const recorded = contract.criteria.find(
      (criterion) => criterion.criterion_id === row.criterion_id,
    )?.result;
    return recorded === null || recorded === undefined
      ? { name: row.criterion_id, status: row.status, basis: 'declared' as const, evidence: [] }
      : { name: row.criterion_id, status: row.status, basis: 'verified' as const, evidence: [verdicts] };
  });
  const requiredRows = rows.filter((row) => row.required);
  const passed = requiredRows.filter((row) => row.status === 'passed').length;
  const left = rows.length - checks.length;
  const done = new Set(['succeeded', 'skipped']);
  const remaining = contract.items
    .filter((item) => !done.has(item.status))
    .map((item) => {
      const title = contract.contract.items.find((definition) => definition.item_id === item.item_id)?.title;
      return clipText(`${item.item_id} (${item.status}): ${title ?? item.item_id}`, 4000);
    });
  return {
    objective: clipText(
      contract.contract.objective.trim() || `contract ${contract.contract_id}`,
      objectiveChars,
    ),
    status: outcomeStatusOf[contract.status],
    summary:
      `Managed work contract ${contract.contract_id} (revision ${contract.revision}) in session ${session_id} ended ` +
      `${contract.status}: ${passed} of ${requiredRows.length} required criteria passed` +
      (left > 0 ? `; ${left} more criteria are in the verdicts source` : '') +
      '.',
    ...(input.handoff_receipt_ref === null ? {} : { handoff_receipt_ref: input.handoff_receipt_ref }),
    observations: [],
    checks,
    produced_artifacts: [],
    remaining_work: remaining.slice(0, remainingKept),
    attribution: { agent: 'baton-runtime', session: session_id },
  };
}
