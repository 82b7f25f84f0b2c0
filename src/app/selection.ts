/**
 * A frozen selection: the journal position and the committed revision a view is read through.
 * The journal head is read first, so every record at or before it was written when the
 * revision head read after it already existed: nothing newer can leak into the view.
 */
import { BatonError, isBatonError } from '../core/errors.ts';
import { citationsOf, parsePreparedHandoff } from '../core/handoff/prepared.ts';
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
      rule: 'past_head',
      [name]: value,
      head,
    });
  }
  return value;
}

/**
 * The latest journal position a revision's handoff cites in its own scope: that source was in
 * the journal before the revision was committed, so a view of the revision read through an
 * earlier position never existed. 0 when it cites nothing there.
 */
async function latestCited(deps: AppDeps, scope: ScopeKey, revision: number): Promise<number> {
  const committed = await deps.store.getRevision(scope, revision);
  const handoff = parsePreparedHandoff(
    await deps.store.getPrepared(scope.project_id, committed.prepared_digest),
  );
  let latest = 0;
  const seen = new Set<string>();
  for (const { citation } of citationsOf(handoff)) {
    if (citation.scope_id !== scope.scope_id || seen.has(citation.source_id)) continue;
    seen.add(citation.source_id);
    const entry = await deps.store.findSource(scope, citation.source_id);
    if (entry !== undefined) latest = Math.max(latest, entry.position);
  }
  return latest;
}

/** The scope's journal head: 0 before its first entry. */
async function journalHead(deps: AppDeps, scope: ScopeKey): Promise<number> {
  try {
    return (await deps.store.getStream({ ...scope, kind: 'scope' })).head;
  } catch (error) {
    if (!isBatonError(error, 'not_found')) throw error;
    return 0;
  }
}

/** How often freezing reads both heads again when a handoff lands between the two reads. */
const freezeAttempts = 5;

/**
 * Both heads now: the journal's first, then the revision head. A handoff that stores its
 * boundary and commits between the two reads would give a revision whose cited source lies
 * beyond the position; then both are read again (the journal head unchanged across the
 * revision read, or a revision citing nothing beyond the position, is consistent).
 */
async function freezeNow(deps: AppDeps, scope: ScopeKey): Promise<Selection> {
  for (let attempt = 1; ; attempt++) {
    const position = await journalHead(deps, scope);
    const revision = await deps.store.revisionHead(scope);
    if (
      revision === 0 ||
      (await journalHead(deps, scope)) === position ||
      (await latestCited(deps, scope, revision)) <= position
    ) {
      return { revision, position };
    }
    if (attempt === freezeAttempts) {
      throw new BatonError(
        'conflict',
        `workstream ${scope.scope_id} changed ${freezeAttempts} times while its view was being frozen; try again`,
        { scope_id: scope.scope_id },
      );
    }
  }
}

/**
 * Freeze a scope now, or check an earlier frozen selection against what exists: each bound by
 * its head, and a revision given with a position no earlier than what that revision cites
 * (`through=2&position=0` never existed once revision 2 cites a source).
 */
export async function freezeSelection(
  deps: AppDeps,
  scope: ScopeKey,
  earlier: { revision?: number; position?: number } = {},
): Promise<Selection> {
  await deps.store.getProject(scope.project_id);
  const now = await freezeNow(deps, scope);
  const selection = {
    revision: bound('through', earlier.revision, now.revision),
    position: bound('position', earlier.position, now.position),
  };
  if (earlier.position !== undefined && selection.revision > 0) {
    const cited = await latestCited(deps, scope, selection.revision);
    if (cited > selection.position) {
      throw new BatonError(
        'invalid_input',
        `no view of revision ${selection.revision} was ever read through journal position ${selection.position}: ` +
          `it cites position ${cited}; give the selection a report returned`,
        {
          rule: 'uncited_position',
          through: selection.revision,
          position: selection.position,
          cited_position: cited,
        },
      );
    }
  }
  return selection;
}
