/**
 * A frozen selection: the journal position and the committed revision a view is read through.
 * The journal head is read first, so every record at or before it was written when the
 * revision head read after it already existed: nothing newer can leak into the view.
 */
import { BatonError, isBatonError } from '../core/errors.ts';
import type { ScopeKey } from '../core/ledger/names.ts';
import type { AppDeps } from './deps.ts';

export interface Selection {
  /** The committed Handoff Revision the view is read through; 0 when none. */
  readonly revision: number;
  /** The Source journal position the view is read through; 0 when the journal is empty. */
  readonly position: number;
}

function bound(name: string, value: number | undefined, head: number): number {
  if (value === undefined) return head;
  if (!Number.isSafeInteger(value) || value < 0 || value > head) {
    throw new BatonError('invalid_input', `${name} is a whole number from 0 to the current ${head}`, {
      [name]: value,
      head,
    });
  }
  return value;
}

/** Freeze a scope now, or check an earlier frozen selection against what exists. */
export async function freezeSelection(
  deps: AppDeps,
  scope: ScopeKey,
  earlier: { revision?: number; position?: number } = {},
): Promise<Selection> {
  await deps.store.getProject(scope.project_id);
  let journal = 0;
  try {
    journal = (await deps.store.getStream({ ...scope, kind: 'scope' })).head;
  } catch (error) {
    if (!isBatonError(error, 'not_found')) throw error;
  }
  const head = await deps.store.revisionHead(scope);
  return {
    revision: bound('through', earlier.revision, head),
    position: bound('position', earlier.position, journal),
  };
}
