/**
 * What the runtime appends on its own after an event: an item whose dependencies are all done
 * becomes ready while its contract is active, and a ready one whose dependencies are not goes
 * back to proposed. A pure function of the projection, so every
 * surface that changes work state gets the same follow-ups.
 */
import {
  terminalContractStatuses,
  type WorkEventInput,
  type WorkItemDefinition,
  type WorkItemStatus,
} from './model.ts';
import type { ContractProjection, WorkItemState } from './projector.ts';
import { isRetry, itemDone } from './transitions.ts';

const runtime = { type: 'runtime', id: 'baton' } as const;

/** Build a Work Event for a contract at its current revision. */
export function workEvent(
  contract: Pick<ContractProjection, 'contract_id' | 'revision'>,
  kind: WorkEventInput['kind'],
  actor: WorkEventInput['actor'],
  operation: WorkEventInput['operation'] = null,
): WorkEventInput {
  return {
    schema: 'baton.work-event/v1',
    contract_id: contract.contract_id,
    revision: contract.revision,
    kind,
    actor,
    operation,
  };
}

/**
 * Readiness follows the dependencies: proposed → ready for every item whose dependencies are
 * done while the contract is active, and ready → proposed for one whose dependencies are no
 * longer all done (a revision added one, or a dependency left succeeded) while it is live.
 */
export function readinessEvents(contract: ContractProjection): WorkEventInput[] {
  if (terminalContractStatuses.has(contract.status)) return [];
  const done = dependenciesDone(contract);
  const events: WorkEventInput[] = [];
  for (const definition of contract.contract.items) {
    const item = contract.items.find((candidate) => candidate.item_id === definition.item_id)!;
    const move =
      item.status === 'proposed' && done(definition) && contract.status === 'active'
        ? {
            to: 'ready' as const,
            reason: definition.dependencies.length === 0 ? 'contract active' : 'dependencies done',
          }
        : item.status === 'ready' && !done(definition)
          ? { to: 'proposed' as const, reason: 'dependencies pending' }
          : null;
    if (move === null) continue;
    events.push(
      workEvent(
        contract,
        {
          type: 'item_status_changed',
          item_id: item.item_id,
          from: item.status,
          to: move.to,
          attempt: item.attempt,
          reason: move.reason,
        },
        runtime,
      ),
    );
  }
  return events;
}

/** Whether all of an item's dependencies are done (succeeded or skipped), in this contract. */
function dependenciesDone(
  contract: Pick<ContractProjection, 'items'>,
): (definition: Pick<WorkItemDefinition, 'dependencies'>) => boolean {
  const status = new Map(contract.items.map((item) => [item.item_id, item.status]));
  return (definition) => definition.dependencies.every((dependency) => itemDone.has(status.get(dependency)!));
}

/**
 * Where a retry puts an item: ready when its dependencies are done, proposed while one is not,
 * whence readiness takes it on as any proposed item. A retry waits for its dependencies, it is
 * never refused for them.
 */
export function retryTarget(
  contract: Pick<ContractProjection, 'contract' | 'items'>,
  item: Pick<WorkItemState, 'item_id'>,
): 'ready' | 'proposed' {
  const definition = contract.contract.items.find((candidate) => candidate.item_id === item.item_id)!;
  return dependenciesDone(contract)(definition) ? 'ready' : 'proposed';
}

/**
 * An item's move from its current status, on the attempt the move implies (a retry, leaving
 * failed, interrupted or cancelled for ready or proposed, starts the next one), with the
 * operation identity when the caller gave an operation id.
 */
export function itemChange(
  contract: Pick<ContractProjection, 'contract_id' | 'revision'>,
  item: Pick<WorkItemState, 'item_id' | 'status' | 'attempt'>,
  to: WorkItemStatus,
  reason: string,
  actor: WorkEventInput['actor'],
  operation_id?: string,
): WorkEventInput {
  const attempt = isRetry(item.status, to) ? item.attempt + 1 : item.attempt;
  return workEvent(
    contract,
    { type: 'item_status_changed', item_id: item.item_id, from: item.status, to, attempt, reason },
    actor,
    operation_id === undefined
      ? null
      : { contract_id: contract.contract_id, item_id: item.item_id, attempt, operation_id },
  );
}
