/**
 * The two rules of the session's scheduler. Path claims serialize work on the same files: an
 * item may start only while no other item of the session holds a path that overlaps one of its
 * own. `[work] max_parallel` bounds how many items run at once. An item holds its claims, and
 * its slot, while it is running or waiting for approval (paused mid-run); items that claim
 * nothing, or disjoint paths, run side by side up to that bound.
 */
import { posix } from 'node:path';
import { BatonError } from '../errors.ts';
import { awaitsPerson, terminalContractStatuses, type WorkItemStatus } from './model.ts';
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

/**
 * Why a managed session may not write `path` (absolute) now, or null when it may: its contract
 * waits for a person; or no item the session itself works on is running; or every such item is
 * read-only; or the path lies outside the claims of those that claim paths (an item that claims
 * none may write anywhere in the workspace). Baton's own agent loop asks it before each write
 * (docs/agent.md), so a read-only item's work stays retry-safe and claims bound what an item
 * changes.
 */
export function writeScopeRefusal(
  contract: ContractProjection | undefined,
  workspace: string,
  path: string,
  options: {
    /** A managed session with no live contract writes nothing: its work is not agreed. */
    readonly managed: boolean;
    /** Resolves links of a path (the target's and the claims'); pure callers pass none. */
    readonly real?: (path: string) => string;
  },
): string | null {
  if (contract === undefined) {
    return options.managed ? 'no work contract is live in this session: nothing is agreed to change' : null;
  }
  if (awaitsPerson(contract)) {
    return `contract ${contract.contract_id} is ${contract.status}: nothing changes until a person confirms or answers it`;
  }
  const definitions = new Map(contract.contract.items.map((item) => [item.item_id, item]));
  const working = contract.items
    .filter((item) => holdingClaims.has(item.status) && item.child_session_id === null)
    .map((item) => definitions.get(item.item_id))
    .filter((item) => item !== undefined);
  if (working.length === 0) {
    return 'no item you work on is running: move the item this change is for to running first (work transition)';
  }
  const writing = working.filter((item) => !item.readonly);
  if (writing.length === 0) {
    return `the running items (${working.map((item) => item.item_id).join(', ')}) are read-only`;
  }
  if (writing.some((item) => item.path_claims.length === 0)) return null;
  const claims = writing.flatMap((item) => item.path_claims);
  return claimed(claims, workspace, path, options.real)
    ? null
    : `${path} is outside the paths the running items claim (${claims.join(', ')})`;
}

function claimed(
  claims: readonly string[],
  workspace: string,
  path: string,
  real: (path: string) => string = (same) => same,
): boolean {
  const target = real(posix.resolve(path));
  return claims
    .map((claim) => real(claimPath(claim, workspace)))
    .some((claim) => target === claim || target.startsWith(claim.endsWith('/') ? claim : `${claim}/`));
}

/** Why a worker of an item with these claims may not write `path` (absolute), or null. */
export function childScopeRefusal(
  claims: readonly string[],
  workspace: string,
  path: string,
  real?: (path: string) => string,
): string | null {
  return claims.length === 0 || claimed(claims, workspace, path, real)
    ? null
    : `${path} is outside the paths this worker's item claims (${claims.join(', ')})`;
}
