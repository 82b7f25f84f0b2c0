/**
 * Path claims serialize work on the same files: an item may start only while no other item of
 * the session holds a path that overlaps one of its own. An item holds its claims while it is
 * running or waiting for approval (paused mid-run); items that claim nothing, or disjoint paths,
 * run side by side.
 */
import { posix } from 'node:path';
import { BatonError } from '../errors.ts';
import type { WorkItemStatus } from './model.ts';
import type { WorkProjection } from './projector.ts';

/** Statuses in which an item holds its path claims. */
export const holdingClaims: ReadonlySet<WorkItemStatus> = new Set(['running', 'waiting_approval']);

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
  for (const other of projection.contracts) {
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
