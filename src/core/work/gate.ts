/**
 * The work completion gate: may the agent stop and report its work complete? It blocks while a
 * required item is pending, running, blocked or awaiting verification (the spec's list), or
 * failed, cancelled or skipped (the contract cannot complete without it), while a child session
 * is still live, while a required criterion lacks passing evidence, and when the workspace has
 * moved past the checkpoint a verdict was taken at. A pure function of the projection and the
 * live state the caller observed; it never trusts what the agent says about its own progress.
 */
import { terminalContractStatuses, type WorkItemStatus } from './model.ts';
import { activeContract, type ContractProjection, type WorkProjection } from './projector.ts';

export interface LiveState {
  /** Child sessions still running (from a worker registry; the ledger alone cannot know). */
  readonly live_children: readonly string[];
  /** The workspace's checkpoint now, when the caller could compute it. */
  readonly checkpoint: string | null;
}

export type GateReasonCode =
  | 'item_pending'
  | 'item_running'
  | 'item_blocked'
  | 'item_awaiting_verification'
  | 'item_failed'
  | 'item_skipped'
  | 'child_live'
  | 'criterion_unverified'
  | 'evidence_stale'
  | 'awaiting_input'
  | 'awaiting_confirmation';

export interface GateReason {
  readonly code: GateReasonCode;
  readonly id: string;
  readonly message: string;
}

export type GateDecision =
  | { readonly decision: 'allow'; readonly contract_id: string | null; readonly status: string | null }
  | {
      readonly decision: 'block';
      readonly contract_id: string;
      readonly status: string;
      readonly reasons: readonly GateReason[];
    };

const itemReason: Partial<Record<WorkItemStatus, GateReasonCode>> = {
  proposed: 'item_pending',
  ready: 'item_pending',
  interrupted: 'item_pending',
  running: 'item_running',
  waiting_approval: 'item_blocked',
  blocked: 'item_blocked',
  ready_for_verification: 'item_awaiting_verification',
  failed: 'item_failed',
  cancelled: 'item_failed',
  // Only a succeeded required item lets the contract complete (completionBlockers): a skipped
  // one leaves it unable to, so stopping waits for a revision or ends it by exhaustion.
  skipped: 'item_skipped',
};

/**
 * Reasons only a person can clear (confirming, answering or revising the contract); a contract
 * in draft or awaiting input holds every item back until they do.
 */
export const personReasons: ReadonlySet<GateReasonCode> = new Set([
  'awaiting_confirmation',
  'awaiting_input',
  'item_skipped',
]);

/** What a reason adds for a status nobody can move the item out of. */
const itemWayForward: Partial<Record<WorkItemStatus, string>> = {
  skipped: ': the contract cannot complete until a revision makes it optional or drops it',
};

/**
 * Stored text (a blocker, a status reason, a verdict's reason) as a reason quotes it: on one
 * line and in JSON quotes, so that it reads as what was recorded and cannot add lines of its
 * own to what the agent or a person is told (a Stop hook hands these to the agent).
 */
function quoted(text: string): string {
  return JSON.stringify(text.replace(/\s+/g, ' ').trim());
}

function reasonsFor(contract: ContractProjection, live: LiveState): GateReason[] {
  const reasons: GateReason[] = [];
  if (contract.status === 'draft') {
    // Only confirmation = "always" leaves a contract in draft: nothing starts until a person confirms.
    reasons.push({
      code: 'awaiting_confirmation',
      id: contract.contract_id,
      message: 'the contract is a draft not yet confirmed: no work starts until a person confirms it',
    });
  }
  if (contract.status === 'awaiting_input') {
    reasons.push({
      code: 'awaiting_input',
      id: contract.contract_id,
      message: `the contract awaits input: ${contract.status_reason ? quoted(contract.status_reason) : 'answer its open assumptions'}`,
    });
  }
  const definitions = new Map(contract.contract.items.map((item) => [item.item_id, item]));
  const live_children = new Set(live.live_children);
  for (const item of contract.items) {
    if (item.child_session_id !== null && live_children.has(item.child_session_id)) {
      reasons.push({
        code: 'child_live',
        id: item.item_id,
        message: `child session ${item.child_session_id} of item "${item.item_id}" is still running`,
      });
    }
    const code = definitions.get(item.item_id)?.required ? itemReason[item.status] : undefined;
    if (code) {
      const blocker = item.blocker ? ` (${quoted(item.blocker)})` : '';
      reasons.push({
        code,
        id: item.item_id,
        message: `required item "${item.item_id}" is ${item.status}${blocker}${itemWayForward[item.status] ?? ''}`,
      });
    }
  }
  const required = new Set(
    contract.contract.criteria.filter((criterion) => criterion.required).map((c) => c.criterion_id),
  );
  for (const criterion of contract.criteria) {
    if (!required.has(criterion.criterion_id)) continue;
    const result = criterion.result;
    if (result?.verdict !== 'passed') {
      reasons.push({
        code: 'criterion_unverified',
        id: criterion.criterion_id,
        message: `required criterion "${criterion.criterion_id}" has ${result ? `verdict ${result.verdict}${result.reason ? `: ${quoted(result.reason)}` : ''}` : 'no passing evidence yet'}`,
      });
    } else if (
      criterion.stale ||
      (live.checkpoint !== null && result.checkpoint !== null && result.checkpoint !== live.checkpoint)
    ) {
      reasons.push({
        code: 'evidence_stale',
        id: criterion.criterion_id,
        message: `the workspace changed after criterion "${criterion.criterion_id}" passed; verify again`,
      });
    }
  }
  return reasons;
}

/**
 * allow, or block with every reason of the newest live contract that blocks: a branch beside a
 * live contract never lets the agent stop on the other's open work. A session with no live
 * contract is not managed and is allowed.
 */
export function workGate(projection: WorkProjection | null, live: LiveState): GateDecision {
  const contract = activeContract(projection);
  if (!contract) {
    const last = projection?.contracts.at(-1);
    return { decision: 'allow', contract_id: last?.contract_id ?? null, status: last?.status ?? null };
  }
  const newestFirst = [...projection!.contracts].reverse();
  for (const candidate of newestFirst) {
    if (terminalContractStatuses.has(candidate.status)) continue;
    const reasons = reasonsFor(candidate, live);
    if (reasons.length > 0)
      return { decision: 'block', contract_id: candidate.contract_id, status: candidate.status, reasons };
  }
  return { decision: 'allow', contract_id: contract.contract_id, status: contract.status };
}

/**
 * When continuation is exhausted (max turns, stop-guard), the contract ends unverified, or
 * failed when a required criterion failed: never completed, and a draft never confirmed ends
 * the same way (the runtime may move any live contract to either). The reason names what was left.
 */
export function exhaustedStatus(
  contract: ContractProjection,
  live: LiveState,
): { to: 'failed' | 'unverified'; reason: string } {
  const reasons = reasonsFor(contract, live);
  const required = new Set(
    contract.contract.criteria.filter((criterion) => criterion.required).map((c) => c.criterion_id),
  );
  const failed = contract.criteria.some(
    (criterion) => required.has(criterion.criterion_id) && criterion.result?.verdict === 'failed',
  );
  const left = reasons
    .map((reason) => reason.message)
    .slice(0, 5)
    .join('; ');
  return {
    to: failed ? 'failed' : 'unverified',
    reason: `continuation exhausted with ${reasons.length} open reason${reasons.length === 1 ? '' : 's'}${left ? `: ${left}` : ''}`,
  };
}
