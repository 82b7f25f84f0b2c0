/**
 * What reopening a session decides about each running item, as a pure function of the
 * contract and what is known of the item's child session (docs/managed-work.md,
 * "Reconciliation"): a live child keeps it running, a child's terminal marker decides a
 * delegated item (completed → ready for verification with the child attached, anything else →
 * failed), and an item nobody is working on any more is interrupted, retry eligible when it is
 * read-only, otherwise waiting for a person's review, since it may have written.
 */
import type { EvidenceAvailability, WorkEventInput, WorkItemDefinition } from './model.ts';
import { terminalContractStatuses } from './model.ts';
import type { ContractProjection, WorkItemState } from './projector.ts';
import { itemChange, workEvent } from './runtime.ts';
import type { TerminalStatus } from './session.ts';

/** What the ledger holds of an item's child session: nothing, or its terminal marker if any. */
export type ChildSessionState =
  { readonly exists: false } | { readonly exists: true; readonly terminal: TerminalStatus | null };

export const retryEligibleReason = 'interrupted: no live child; readonly operation, retry eligible';
export const reviewRequiredReason = 'interrupted: no live child; possible write: review before retry';

const runtime = { type: 'runtime', id: 'baton' } as const;

/**
 * An item is retry-safe only when it declares itself read-only, claims no paths and needs no
 * capability beyond reading; anything else may have written or touched something outside. An
 * item a static flow owns is retry-safe whatever it declares: a flow's nodes run only in the
 * read-only sandbox (docs/flows.md), so a run cut short wrote nothing.
 */
export function retrySafe(
  definition: Pick<WorkItemDefinition, 'readonly' | 'path_claims' | 'capabilities' | 'owner'>,
) {
  if (definition.owner.type === 'flow') return true;
  return definition.readonly && definition.path_claims.length === 0 && definition.capabilities.length === 0;
}

/**
 * The runtime events that reconcile a contract's running items. `children` holds the state of
 * each child session an item names; `availability` is how an attached child resolves. With
 * `onlyChild`, only the items delegated to that child are decided: the others are left as they
 * are, since nothing was learnt about them.
 */
export function reconcileEvents(
  contract: ContractProjection,
  children: ReadonlyMap<string, ChildSessionState>,
  availability: (session_id: string) => EvidenceAvailability = () => ({ status: 'available' }),
  /** Only the items delegated to this child session (a child that just ended); default every item. */
  onlyChild?: string,
): WorkEventInput[] {
  if (terminalContractStatuses.has(contract.status)) return [];
  const events: WorkEventInput[] = [];
  for (const item of contract.items) {
    if (item.status !== 'running') continue;
    if (onlyChild !== undefined && item.child_session_id !== onlyChild) continue;
    const definition = contract.contract.items.find((candidate) => candidate.item_id === item.item_id)!;
    events.push(...reconcileItem(contract, item, definition, children, availability));
  }
  return events;
}

function reconcileItem(
  contract: ContractProjection,
  item: WorkItemState,
  definition: WorkItemDefinition,
  children: ReadonlyMap<string, ChildSessionState>,
  availability: (session_id: string) => EvidenceAvailability,
): WorkEventInput[] {
  const child = item.child_session_id === null ? undefined : children.get(item.child_session_id);
  if (child?.exists) {
    if (child.terminal === null) return [];
    if (child.terminal === 'completed') {
      // The child's result is attached and verification decides: never succeeded directly.
      const session_id = item.child_session_id!;
      return [
        workEvent(
          contract,
          {
            type: 'evidence_attached',
            item_id: item.item_id,
            evidence: { type: 'child_session', session_id },
            availability: availability(session_id),
          },
          runtime,
        ),
        itemChange(contract, item, 'ready_for_verification', 'child session completed: verify', runtime),
      ];
    }
    return [itemChange(contract, item, 'failed', `child session ended ${child.terminal}`, runtime)];
  }
  // A person's work is not a process that a restart interrupts.
  if (item.owner.type === 'human') return [];
  if (retrySafe(definition)) return [itemChange(contract, item, 'interrupted', retryEligibleReason, runtime)];
  const event = itemChange(contract, item, 'interrupted', reviewRequiredReason, runtime);
  return [{ ...event, kind: { ...event.kind, review_required: true } }];
}
