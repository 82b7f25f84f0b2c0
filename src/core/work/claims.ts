/**
 * The two rules of the session's scheduler. Path claims serialize work on the same files: an
 * item may start only while no other item of the session holds a path that overlaps one of its
 * own. `[work] max_parallel` bounds how many items run at once. An item holds its claims, and
 * its slot, while it is running or waiting for approval (paused mid-run); items that claim
 * nothing, or disjoint paths, run side by side up to that bound.
 */
import { posix } from 'node:path';
import { BatonError } from '../errors.ts';
import { terminalContractStatuses, type WorkItemStatus } from './model.ts';
import type { ContractProjection, WorkProjection } from './projector.ts';

/** Statuses in which an item holds its path claims. */
export const holdingClaims: ReadonlySet<WorkItemStatus> = new Set(['running', 'waiting_approval']);

/** The contracts whose items may hold claims and slots: an ended contract's items hold none. */
function liveContracts(projection: WorkProjection): ContractProjection[] {
  return projection.contracts.filter((contract) => !terminalContractStatuses.has(contract.status));
}

/** A claim as an absolute path: relative to the workspace (or to `/` when there is none), normalized. */
function claimPath(claim: string, workspace: string | null): string {
  return posix.resolve(workspace ?? '/', claim);
}

/** Whether two normalized paths are the same or one lies inside the other. */
export function pathsOverlap(a: string, b: string): boolean {
  const inside = (root: string, path: string) =>
    path === root || path.startsWith(root.endsWith('/') ? root : `${root}/`);
  return inside(a, b) || inside(b, a);
}

/**
 * Refuse (conflict, rule `path_claim_held`) starting `item_id` of `contract_id` while another
 * item of any live contract of the session holds a path overlapping one of its claims.
 */
export function checkClaims(
  projection: WorkProjection,
  contract_id: string,
  item_id: string,
  workspace: string | null,
): void {
  const contract = projection.contracts.find((candidate) => candidate.contract_id === contract_id);
  const definition = contract?.contract.items.find((candidate) => candidate.item_id === item_id);
  if (!definition || definition.path_claims.length === 0) return;
  const wanted = definition.path_claims.map((claim) => claimPath(claim, workspace));
  for (const other of liveContracts(projection)) {
    for (const item of other.items) {
      if (!holdingClaims.has(item.status)) continue;
      if (other.contract_id === contract_id && item.item_id === item_id) continue;
      const held = other.contract.items.find((candidate) => candidate.item_id === item.item_id)!;
      for (const claim of held.path_claims) {
        const path = claimPath(claim, workspace);
        const overlap = wanted.find((mine) => pathsOverlap(mine, path));
        if (overlap === undefined) continue;
        throw new BatonError(
          'conflict',
          `item "${item_id}" claims ${JSON.stringify(overlap)}, which overlaps ${JSON.stringify(path)} held by item "${item.item_id}" (${item.status}); start it after that one finishes`,
          {
            rule: 'path_claim_held',
            item_id,
            path: overlap,
            held_by: { contract_id: other.contract_id, item_id: item.item_id, path, status: item.status },
          },
        );
      }
    }
  }
}

/**
 * Refuse (conflict, rule `max_parallel`) starting `item_id` of `contract_id` while `limit` items
 * of the session's live contracts already hold a slot (running or waiting for approval).
 */
export function checkParallel(
  projection: WorkProjection,
  contract_id: string,
  item_id: string,
  limit: number,
): void {
  const running = liveContracts(projection).flatMap((contract) =>
    contract.items
      .filter((item) => holdingClaims.has(item.status))
      .filter((item) => contract.contract_id !== contract_id || item.item_id !== item_id)
      .map((item) => ({ contract_id: contract.contract_id, item_id: item.item_id, status: item.status })),
  );
  if (running.length < limit) return;
  throw new BatonError(
    'conflict',
    `item "${item_id}" cannot start: ${running.length} items already run, the most [work] max_parallel allows (${limit}); start it after one of them finishes`,
    { rule: 'max_parallel', item_id, limit, running },
  );
}
