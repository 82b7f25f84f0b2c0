/**
 * Where the two specifications meet, the other half (docs/managed-work.md, "An interrupted bound
 * session"): a bound managed session whose run stops before its contract ends (it ends `failed`,
 * `aborted` or `max_turns`) prepares a Handoff for whoever continues. Its boundary states the
 * contract as the ledger holds it: each item's status, each criterion's verdict (verified by a
 * verdicts source in the workstream), one next action, and what it leaves out. Deterministic and
 * pure: the same session state gives the same boundary, so a retry stores nothing new.
 */
import type { BoundaryContent, WorkKind } from '../continuity/records.ts';
import type { WorkClaim } from '../continuity/claims.ts';
import type { SourceRef } from '../ledger/source.ts';
import { clipText } from '../text.ts';
import { ownerText } from './describe.ts';
import { awaitsPerson, type WorkItemStatus } from './model.ts';
import { contractVerdicts, managedWorkSourceKey } from './outcome.ts';
import type { ContractProjection, WorkItemState } from './projector.ts';
import type { TerminalStatus } from './session.ts';

/** The ends that interrupt a run: anything but `completed`. */
export type InterruptionStatus = Exclude<TerminalStatus, 'completed'>;

export function isInterruption(status: TerminalStatus): status is InterruptionStatus {
  return status !== 'completed';
}

/**
 * The two sources one interrupted end writes: ids derived from everything the boundary is made
 * of (the session, its contract, the session's head, the end's status and reason), so the same
 * end decided again on the same state writes nothing new, and one decided on another state (after
 * a concurrent write moved the session) never collides with it.
 */
export function interruptionSourceIds(input: {
  readonly session_id: string;
  readonly contract_id: string;
  readonly head: number;
  readonly status: InterruptionStatus;
  readonly reason: string;
}): { readonly verdicts: string; readonly boundary: string } {
  const key = managedWorkSourceKey([
    input.session_id,
    input.contract_id,
    input.head,
    input.status,
    input.reason,
  ]);
  return { verdicts: `${key}:interrupted-verdicts`, boundary: `${key}:interrupted-boundary` };
}

/** The kind of the boundary source, as handoff_current_work stores it. */
export const boundaryKind = 'handoff-boundary' satisfies WorkKind;

/** A boundary's 64 statements: the summary, then items, then criteria. */
const statementsKept = 64;
const itemChars = 1000;
const reasonChars = 300;
const instructionsChars = 1500;
const objectiveChars = 2000;

/** Which unfinished item the next participant starts with, and the verb that says how. */
const nextVerbs: readonly (readonly [WorkItemStatus, string])[] = [
  ['interrupted', 'Resume'],
  ['running', 'Resume'],
  ['waiting_approval', 'Get the approval that waits for'],
  ['blocked', 'Unblock'],
  ['failed', 'Retry'],
  ['ready_for_verification', 'Verify'],
  ['ready', 'Start'],
  ['proposed', 'Start, once its dependencies are done,'],
];

function declared(text: string): WorkClaim {
  return { text, basis: 'declared', evidence: [] };
}

function itemText(contract: ContractProjection, item: WorkItemState): string {
  const title = contract.contract.items.find((definition) => definition.item_id === item.item_id)?.title;
  const parts = [
    `Item ${item.item_id}${title ? ` "${title}"` : ''}: ${item.status}`,
    item.attempt > 1 ? `, attempt ${item.attempt}` : '',
    `, owner ${ownerText(item.owner)}`,
    item.child_session_id === null ? '' : `, child session ${item.child_session_id}`,
    item.blocker === null ? '' : `; blocked: ${clipText(item.blocker, reasonChars)}`,
    item.evidence_count === 0
      ? ''
      : `; ${item.evidence_count} evidence reference${item.evidence_count === 1 ? '' : 's'} in the session`,
  ];
  return clipText(parts.join(''), itemChars);
}

function nextAction(session_id: string, contract: ContractProjection): WorkClaim {
  const where = `of contract ${contract.contract_id} revision ${contract.revision} in managed session ${session_id}`;
  const open = contract.contract.assumptions.filter(
    (assumption) => assumption.requires_confirmation && assumption.resolution === null,
  );
  if (awaitsPerson(contract)) {
    const questions = open.map((assumption) => `${assumption.assumption_id}: ${assumption.text}`).join('; ');
    return declared(
      clipText(
        `Confirm contract ${contract.contract_id} revision ${contract.revision} in managed session ${session_id}` +
          (questions ? `, answering its open assumptions (${questions})` : '') +
          '; work resumes once it is confirmed.',
        4000,
      ),
    );
  }
  for (const [status, verb] of nextVerbs) {
    const item = contract.items.find((candidate) => candidate.status === status);
    if (!item) continue;
    const definition = contract.contract.items.find((candidate) => candidate.item_id === item.item_id);
    const instructions = definition?.instructions.trim() ?? '';
    return declared(
      clipText(
        `${verb} item ${item.item_id}${definition ? ` "${definition.title}"` : ''} ${where} (now ${item.status}` +
          (item.blocker === null ? '' : `: ${clipText(item.blocker, reasonChars)}`) +
          ')' +
          (instructions ? `. Its instructions: ${clipText(instructions, instructionsChars)}` : '.'),
        4000,
      ),
    );
  }
  return declared(
    `Verify contract ${contract.contract_id} revision ${contract.revision} in managed session ${session_id}: none of its items is left to do, and its criteria decide whether it is complete.`,
  );
}

/**
 * The boundary of an interrupted run: what handoff_current_work stores and then cites from every
 * statement of the Prepared Handoff. `verdicts` is the stored contractVerdicts of the contract.
 */
export function interruptedBoundary(input: {
  readonly session_id: string;
  readonly status: InterruptionStatus;
  readonly reason: string;
  readonly contract: ContractProjection;
  readonly verdicts: SourceRef;
}): BoundaryContent {
  const { session_id, contract, verdicts } = input;
  const rows = contractVerdicts(session_id, contract).criteria;
  const required = rows.filter((row) => row.required);
  const passed = required.filter((row) => row.status === 'passed').length;
  const finished = contract.items.filter((item) => item.status === 'succeeded' || item.status === 'skipped');
  const reason = input.reason.trim();
  const summary = declared(
    `Managed session ${session_id} ended ${input.status}` +
      (reason ? ` (${clipText(reason, reasonChars)})` : '') +
      ` with contract ${contract.contract_id} revision ${contract.revision} ${contract.status}: ` +
      `${finished.length} of ${contract.items.length} items succeeded or skipped, ` +
      `${passed} of ${required.length} required criteria passed.`,
  );
  const items = contract.items.map((item) => declared(itemText(contract, item)));
  const criteria = contract.criteria.map((criterion): WorkClaim => {
    const row = rows.find((candidate) => candidate.criterion_id === criterion.criterion_id)!;
    const what = `Criterion ${criterion.criterion_id} (${row.required ? 'required' : 'optional'})`;
    if (criterion.result === null) return declared(`${what}: not verified yet.`);
    // As the cited verdicts source records it: a stale verdict is unknown there, never its old value.
    const standing = criterion.stale
      ? `${row.status}: its ${criterion.result.verdict} verdict was taken before the workspace last changed`
      : row.status;
    return {
      text: clipText(`${what}: ${standing}` + (row.reason ? `: ${row.reason}` : '.'), itemChars),
      basis: 'verified',
      evidence: [verdicts],
    };
  });
  const kept = [summary, ...items, ...criteria].slice(0, statementsKept);
  const itemsKept = Math.min(items.length, statementsKept - 1);
  const left = {
    items: items.length - itemsKept,
    criteria: criteria.length - Math.min(criteria.length, statementsKept - 1 - itemsKept),
  };
  const omissions: string[] = [];
  if (contract.items.some((item) => item.evidence_count > 0)) {
    omissions.push(
      `The evidence attached to the items (files, commands, tool results) stays in managed session ${session_id}; it is not copied into the workstream.`,
    );
  }
  if (left.items > 0 || left.criteria > 0) {
    omissions.push(
      `${left.items} items and ${left.criteria} criteria did not fit this handoff; managed session ${session_id} holds them all.`,
    );
  }
  return {
    objective: clipText(
      contract.contract.objective.trim() || `contract ${contract.contract_id}`,
      objectiveChars,
    ),
    current_state: kept,
    disposition: 'continue',
    next_action: nextAction(session_id, contract),
    omissions,
    attribution: { agent: 'baton-runtime', session: session_id },
  };
}
