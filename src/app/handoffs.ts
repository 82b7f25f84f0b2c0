/**
 * prepare_handoff, commit_handoff and continue_handoff: Prepared Handoffs identified by digest,
 * immutable Handoff Revisions published by compare-and-swap, and Continue with one evidence
 * check per citation.
 */
import type { Digest } from '../core/canonical.ts';
import { BatonError } from '../core/errors.ts';
import { deepFreeze, type JsonObject } from '../core/json.ts';
import {
  citationsOf,
  parseHandoffContent,
  parsePreparedHandoff,
  preparedBody,
  type PreparedHandoff,
} from '../core/handoff/prepared.ts';
import {
  checkCitations,
  requireSameScope,
  resolution,
  selectionSchema,
  type EvidenceCheck,
  type ExactSelection,
  type ExactTarget,
  type HandoffResolution,
} from '../core/handoff/resolution.ts';
import type { ScopeKey } from '../core/ledger/names.ts';
import { checkExpectedHead, type Revision } from '../core/ledger/revision.ts';
import { parseRecord, requireObject } from '../core/records.ts';
import type { Store } from '../store/store.ts';
import type { AppDeps } from './deps.ts';
import { requireReadableEvidence } from './evidence.ts';

export interface ScopeInput {
  readonly project_id: string;
  readonly scope_id: string;
}

export interface PreparedResult {
  readonly digest: Digest;
  readonly prepared_handoff: PreparedHandoff;
}

/** How many parsed Prepared Handoffs each store's cache holds. */
const maxParsedHandoffs = 1024;

/** Parsed Prepared Handoffs by store, then project and digest: a stored body never changes. */
const parsedHandoffs = new WeakMap<Store, Map<string, PreparedHandoff>>();

/**
 * A stored Prepared Handoff, parsed. Bodies are content-addressed and never updated or deleted,
 * so one found in a project is parsed once per store and shared, frozen, by every later caller
 * (Continue, every acknowledgement, the report, prepare_context).
 */
export async function readPreparedHandoff(
  store: Store,
  project_id: string,
  digest: Digest,
): Promise<PreparedHandoff> {
  let parsed = parsedHandoffs.get(store);
  if (!parsed) {
    parsed = new Map();
    parsedHandoffs.set(store, parsed);
  }
  const key = `${project_id}\u0000${digest}`;
  const known = parsed.get(key);
  if (known) return known;
  const handoff = deepFreeze(parsePreparedHandoff(await store.getPrepared(project_id, digest)));
  if (parsed.size >= maxParsedHandoffs) parsed.clear();
  parsed.set(key, handoff);
  return handoff;
}

function scopeOf(input: ScopeInput): ScopeKey {
  return { project_id: input.project_id, scope_id: input.scope_id };
}

/**
 * Finalize a Prepared Handoff on the current committed head and store it by digest. It is
 * not committed: commit_handoff is the only publisher of a revision.
 */
export async function prepareHandoff(
  deps: AppDeps,
  input: ScopeInput & Record<string, unknown>,
): Promise<PreparedResult> {
  requireObject(input, 'handoff');
  const { project_id, scope_id, ...content } = input;
  const parsed = parseHandoffContent(content);
  const scope = scopeOf({ project_id, scope_id });
  const base_revision = await deps.store.revisionHead(scope);
  const body = preparedBody(scope.scope_id, base_revision, parsed);
  await requireReadableEvidence(deps, scope.project_id, scope.scope_id, citationsOf(body), 'handoff');
  const digest = await deps.store.putPrepared(scope.project_id, body as JsonObject);
  return { digest, prepared_handoff: body };
}

export interface CommitHandoffInput extends ScopeInput {
  /** The Prepared Handoff, by digest or as its body (as transported unchanged). */
  readonly prepared: Digest | Record<string, unknown>;
  /** The head the caller saw: the prepared handoff's base_revision. */
  readonly expected_head: number;
}

/** The fields of a Prepared Handoff body that preparing sets, not the caller. */
const ledgerFields: ReadonlySet<string> = new Set(['schema', 'scope_id', 'base_revision']);

/** The prepared handoff as parsed, and the body exactly as stored or transported. */
async function loadPrepared(
  deps: AppDeps,
  project_id: string,
  prepared: unknown,
): Promise<{ handoff: PreparedHandoff; body: JsonObject }> {
  if (typeof prepared === 'string') {
    const body = await deps.store.getPrepared(project_id, prepared as Digest);
    return { handoff: parsePreparedHandoff(body), body };
  }
  const handoff = parsePreparedHandoff(prepared);
  // A transported body meets the same rules as one prepared here: every field but the three
  // the ledger sets is content, so a field preparing would refuse is refused, at the top too.
  const content = parseHandoffContent(
    Object.fromEntries(Object.entries(handoff).filter(([key]) => !ledgerFields.has(key))),
  );
  preparedBody(handoff.scope_id, handoff.base_revision, content);
  // Its evidence is validated now, as it would have been when prepared here.
  await requireReadableEvidence(deps, project_id, handoff.scope_id, citationsOf(handoff), 'prepared handoff');
  return { handoff, body: prepared as JsonObject };
}

/**
 * Publish a Prepared Handoff as the next immutable revision, if the head is still the one it
 * was prepared on. A retry after an unconfirmed commit returns the revision it produced.
 */
export async function commitHandoff(deps: AppDeps, input: CommitHandoffInput): Promise<Revision> {
  requireObject(input, 'commit');
  const scope = scopeOf(input);
  const expected = checkExpectedHead(input.expected_head);
  const { handoff, body } = await loadPrepared(deps, scope.project_id, input.prepared);
  if (handoff.scope_id !== scope.scope_id) {
    throw new BatonError(
      'invalid_input',
      `that prepared handoff is for scope ${handoff.scope_id}, not ${scope.scope_id}`,
      {
        scope_id: scope.scope_id,
        handoff_scope_id: handoff.scope_id,
      },
    );
  }
  if (handoff.base_revision !== expected) {
    throw new BatonError(
      'precondition_failed',
      `the handoff was prepared on revision ${handoff.base_revision}, not ${expected}; prepare it again on the head you expect`,
      { base_revision: handoff.base_revision, expected_head: expected },
    );
  }
  return deps.store.commitRevision(scope, expected, body);
}

export interface ContinueHandoffInput extends ScopeInput {
  readonly selection: unknown;
}

/** One exact handoff and each of its citations checked again: a Continue without the head. */
export interface CheckedHandoff {
  readonly selection: ExactSelection;
  readonly handoff: PreparedHandoff;
  readonly evidence_checks: readonly EvidenceCheck[];
}

/**
 * Resolve a prepared digest or an exact revision to its handoff and check every citation
 * again. A handoff of another scope is not found before any citation is read.
 */
export async function checkHandoff(
  deps: AppDeps,
  scope: ScopeKey,
  target: ExactTarget,
): Promise<CheckedHandoff> {
  let selection: ExactSelection;
  if ('exact' in target) {
    const committed = await deps.store.getRevision(scope, target.exact);
    selection = { kind: 'exact', revision: target.exact, digest: committed.prepared_digest };
  } else {
    selection = { kind: 'prepared', digest: target.prepared };
  }
  const handoff = await readPreparedHandoff(deps.store, scope.project_id, selection.digest);
  requireSameScope(scope.scope_id, handoff);
  const evidence_checks = await checkCitations(scope.scope_id, citationsOf(handoff), (ref) =>
    deps.store.checkSource(scope.project_id, ref),
  );
  return { selection, handoff, evidence_checks };
}

/** Resolve a selection to one exact handoff and check every citation again. */
export async function continueHandoff(
  deps: AppDeps,
  input: ContinueHandoffInput,
): Promise<HandoffResolution> {
  requireObject(input, 'continue');
  const scope = scopeOf(input);
  const selection = parseRecord(selectionSchema, input.selection, 'selection');
  const current_head = await deps.store.revisionHead(scope);
  if (selection === 'latest' && current_head === 0) {
    throw new BatonError('not_found', `${scope.scope_id} has no committed handoff to continue yet`, {
      ...scope,
    });
  }
  const target = selection === 'latest' ? { exact: current_head } : selection;
  const checked = await checkHandoff(deps, scope, target);
  return resolution(
    scope.scope_id,
    checked.selection,
    current_head,
    checked.handoff,
    checked.evidence_checks,
  );
}
