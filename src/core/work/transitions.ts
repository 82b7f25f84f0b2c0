/**
 * Which status changes each actor may record. The model proposes only the four moves the spec
 * allows it and retries interrupted read-only work; only the runtime and the verifier reach succeeded or completed; a person
 * (an authenticated caller) confirms, retries, cancels and unblocks.
 */
import type { ActorType, ContractStatus, WorkItemStatus } from './model.ts';

type Table<S extends string> = Readonly<Record<ActorType, ReadonlyArray<readonly [S, S]>>>;

const liveItem: readonly WorkItemStatus[] = [
  'proposed',
  'ready',
  'running',
  'waiting_approval',
  'blocked',
  'ready_for_verification',
  'interrupted',
];

const cancelAny = (from: readonly WorkItemStatus[]) => from.map((status) => [status, 'cancelled'] as const);

/** A retry goes to ready, or to proposed while a dependency is not done (`retryTarget`). */
const retries = (...from: WorkItemStatus[]) =>
  from.flatMap((status) => [[status, 'ready'] as const, [status, 'proposed'] as const]);

export const itemTransitions: Table<WorkItemStatus> = {
  model: [
    ['ready', 'running'],
    ['running', 'blocked'],
    ['running', 'ready_for_verification'],
    ['blocked', 'ready'],
    // Retrying interrupted read-only work; one that may have written waits for a person (projector).
    ...retries('interrupted'),
  ],
  human: [
    ['blocked', 'ready'],
    ['waiting_approval', 'running'],
    ...retries('failed', 'interrupted', 'cancelled'),
    ['proposed', 'skipped'],
    ['ready', 'skipped'],
    ...cancelAny(liveItem),
  ],
  runtime: [
    ['proposed', 'ready'],
    // A revision (or a verdict) can leave a ready item waiting on a dependency again.
    ['ready', 'proposed'],
    ['ready', 'running'],
    ['running', 'blocked'],
    ['running', 'waiting_approval'],
    ['running', 'ready_for_verification'],
    ['running', 'failed'],
    ['running', 'interrupted'],
    ['waiting_approval', 'running'],
    ['waiting_approval', 'blocked'],
    ['blocked', 'ready'],
    ...retries('interrupted', 'failed'),
    ['interrupted', 'failed'],
    ['ready_for_verification', 'succeeded'],
    ['ready_for_verification', 'running'],
    ['succeeded', 'ready_for_verification'],
    ...cancelAny(liveItem),
  ],
  verifier: [
    ['ready_for_verification', 'succeeded'],
    ['ready_for_verification', 'ready'],
    // Sent back while a dependency that regressed in the same verification is not done.
    ['ready_for_verification', 'proposed'],
    ['ready_for_verification', 'failed'],
    ['succeeded', 'ready_for_verification'],
  ],
};

const liveContract: readonly ContractStatus[] = ['draft', 'awaiting_input', 'active', 'blocked', 'verifying'];

export const contractTransitions: Table<ContractStatus> = {
  model: [['active', 'awaiting_input']],
  human: [
    ['draft', 'active'],
    ['awaiting_input', 'active'],
    ['blocked', 'active'],
    ...liveContract.map((status) => [status, 'cancelled'] as const),
  ],
  runtime: [
    ['draft', 'awaiting_input'],
    ['draft', 'active'],
    ['awaiting_input', 'active'],
    ['active', 'awaiting_input'],
    ['active', 'blocked'],
    ['blocked', 'active'],
    ['active', 'verifying'],
    ['verifying', 'active'],
    ['verifying', 'completed'],
    // Exhausted continuation ends any live contract unverified or failed, a draft too.
    ...(['draft', 'awaiting_input', 'active', 'blocked', 'verifying'] as const).flatMap((status) => [
      [status, 'failed'] as const,
      [status, 'unverified'] as const,
    ]),
    ...liveContract.map((status) => [status, 'cancelled'] as const),
  ],
  verifier: [
    ['active', 'verifying'],
    ['verifying', 'active'],
    ['verifying', 'completed'],
    ['verifying', 'failed'],
    ['verifying', 'unverified'],
  ],
};

function allows<S extends string>(table: Table<S>, actor: ActorType, from: S, to: S): boolean {
  return table[actor].some(([a, b]) => a === from && b === to);
}

export function itemTransitionAllowed(actor: ActorType, from: WorkItemStatus, to: WorkItemStatus): boolean {
  return allows(itemTransitions, actor, from, to);
}

export function contractTransitionAllowed(
  actor: ActorType,
  from: ContractStatus,
  to: ContractStatus,
): boolean {
  return allows(contractTransitions, actor, from, to);
}

/** Leaving one of these for ready, or for proposed, starts a new attempt: a retry. */
export const retryFrom: ReadonlySet<WorkItemStatus> = new Set(['failed', 'interrupted', 'cancelled']);

/** Whether this move is a retry, and so the item's next attempt. */
export function isRetry(from: WorkItemStatus, to: WorkItemStatus): boolean {
  return retryFrom.has(from) && (to === 'ready' || to === 'proposed');
}

/** An item in one of these needs nothing more for its dependents. */
export const itemDone: ReadonlySet<WorkItemStatus> = new Set(['succeeded', 'skipped']);
