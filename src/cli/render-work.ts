/**
 * Human text for a session's managed work: the objective, revision and status of its contract,
 * every item (status, owner, attempt, child session, blocker, criteria with verdicts, each
 * evidence reference and why it does not resolve, if it does not), the criteria, open
 * assumptions, warnings and the model's control block. Pure: a WorkSnapshot in, lines out.
 * Progress is what the ledger projects, never prose.
 */
import { shellWord } from './command.ts';
import type { WorkSnapshot } from '../app/work.ts';
import type { ListSessionsResult } from '../app/work-list.ts';
import type { Transcript, TranscriptEntry } from '../app/transcript.ts';
import type { SessionHeader } from '../core/work/session.ts';
import { unreadableEventName, type WorkEventMessage } from '../core/work/live.ts';
import { workEventSchema, type EvidenceAvailability, type WorkEvent } from '../core/work/model.ts';
import type { ContractProjection, CriterionState, TerminalMarker } from '../core/work/projector.ts';
import {
  criterionKindText as kind,
  evidenceRefText as reference,
  ownerText as owner,
} from '../core/work/describe.ts';

function lines(...parts: (string | false | null | undefined)[]): string {
  return `${parts.filter((part): part is string => typeof part === 'string').join('\n')}\n`;
}

/** Nothing for a reference that resolved; otherwise why not, or that it was never checked. */
function availability(value: EvidenceAvailability | undefined): string {
  if (value === undefined || value.status === 'available') return '';
  return value.status === 'unavailable' ? ` (unavailable: ${value.reason})` : ' (unchecked)';
}

function oneLine(text: string): string {
  return text.replace(/\r?\n/g, ' ↵ ');
}

function verdict(state: CriterionState | undefined): string {
  const result = state?.result;
  if (!result) return 'no verdict';
  return `${result.verdict}${state.stale ? ', stale' : ''}`;
}

function contractLines(contract: ContractProjection): string[] {
  const states = new Map(contract.criteria.map((criterion) => [criterion.criterion_id, criterion]));
  const definitions = new Map(contract.contract.items.map((item) => [item.item_id, item]));
  const items = contract.items.flatMap((item) => {
    const definition = definitions.get(item.item_id);
    const facts = [
      `owner ${owner(item.owner)}`,
      `attempt ${item.attempt}`,
      item.child_session_id && `child session ${item.child_session_id}`,
      definition?.required === false ? 'optional' : 'required',
      definition?.readonly && 'read-only',
      `evidence ${item.evidence_count}`,
    ].filter((fact): fact is string => typeof fact === 'string');
    const criteria = (definition?.criterion_ids ?? []).map((id) => `${id} (${verdict(states.get(id))})`);
    return [
      `  ${item.item_id}  ${item.status}  ${definition?.title ?? ''}`.trimEnd(),
      `      ${facts.join(' · ')}`,
      ...(definition && definition.dependencies.length > 0
        ? [`      after: ${definition.dependencies.join(', ')}`]
        : []),
      ...(item.blocker ? [`      blocker: ${item.blocker}`] : []),
      ...(criteria.length > 0 ? [`      criteria: ${criteria.join(', ')}`] : []),
      ...item.evidence.map(
        (ref, at) =>
          `      evidence: ${oneLine(reference(ref))}${availability(item.evidence_availability[at])}`,
      ),
    ];
  });
  const criteria = contract.contract.criteria.map((criterion) => {
    const state = states.get(criterion.criterion_id);
    const reason = state?.result?.reason ? `: ${state.result.reason}` : '';
    return `  ${criterion.criterion_id}  ${criterion.required ? 'required' : 'optional'}  ${kind(criterion.kind)}  → ${verdict(state)}${reason}`;
  });
  const open = contract.contract.assumptions.filter(
    (assumption) => assumption.requires_confirmation && !assumption.resolution,
  );
  return [
    `Contract ${contract.contract_id} · revision ${contract.revision} · ${contract.status}${contract.branch ? ' · branch' : ''}`,
    ...(contract.status_reason ? [`  ${contract.status_reason}`] : []),
    `Objective: ${contract.contract.objective}`,
    ...contract.contract.constraints.map(
      (constraint) => `  constraint ${constraint.constraint_id}: ${constraint.text}`,
    ),
    '',
    `Items (${contract.items.length}):`,
    ...(items.length > 0 ? items : ['  none']),
    '',
    `Criteria (${criteria.length}):`,
    ...(criteria.length > 0 ? criteria : ['  none']),
    ...(open.length > 0
      ? [
          '',
          'Open assumptions (confirm with answers):',
          ...open.map((a) => `  ${a.assumption_id}: ${a.text}`),
        ]
      : []),
  ];
}

/**
 * The Handoff an interrupted bound session prepared, and the two commands that read and
 * publish it: nothing else points a person at a Prepared Handoff, which is not committed.
 */
function handoffLines(terminal: TerminalMarker | null | undefined, indent: string): string[] {
  const handoff = terminal?.handoff;
  if (!handoff) return [];
  const where = `--scope ${shellWord(handoff.scope_id)} --prepared ${handoff.prepared_digest}`;
  return [
    `${indent}Handoff prepared for whoever continues, in workstream ${handoff.scope_id} on revision ${handoff.base_revision} (boundary ${handoff.boundary_ref.source_id}), not committed:`,
    `${indent}  read it:    baton continue ${where}`,
    `${indent}  publish it: baton commit ${where} --expected-head ${handoff.base_revision}`,
  ];
}

/** The work of a session as people read it. */
export function work(snapshot: WorkSnapshot): string {
  const shown = snapshot.contract ?? snapshot.projection?.contracts.at(-1) ?? null;
  const terminal = snapshot.terminal;
  return lines(
    `Session ${snapshot.session_id} · ledger position ${snapshot.position}${terminal ? ` · session ${terminal.status}` : ''}`,
    ...handoffLines(terminal, ''),
    shown === null && 'No work contract in this session.',
    shown !== null && snapshot.contract === null && 'No live contract; the latest one is shown.',
    ...(shown ? contractLines(shown) : []),
    snapshot.warnings.length > 0 && '\nWarnings:',
    ...snapshot.warnings.map((warning) => `  ${warning.code}: ${warning.message}`),
    snapshot.control_block !== null && '\nControl block (what the model sees each turn):',
    ...(snapshot.control_block ?? '')
      .split('\n')
      .filter((line) => snapshot.control_block !== null && line !== '')
      .map((line) => `  ${line}`),
  );
}

export function session(header: SessionHeader): string {
  return lines(
    `Session ${header.session_id} · mode ${header.work_mode}`,
    header.workspace && `  workspace ${header.workspace}`,
    header.parent_session_id &&
      `  child of ${header.parent_session_id}${header.contract_id ? `, contract ${header.contract_id}` : ''}${header.work_item_id ? `, item ${header.work_item_id}` : ''}`,
    `  may write: ${header.capabilities.write ? 'yes' : 'no'}; owners: ${header.capabilities.owners.join(', ')}`,
    header.capabilities.tools.length > 0 && `  tools: ${header.capabilities.tools.join(', ')}`,
    header.capabilities.flows.length > 0 && `  flows: ${header.capabilities.flows.join(', ')}`,
    header.capabilities.capabilities.length > 0 &&
      `  capabilities: ${header.capabilities.capabilities.join(', ')}`,
    header.goal !== undefined &&
      `  goal: ${oneLine(header.goal)} (audited by the judge before it ends completed)`,
    header.scope_id !== undefined &&
      `  bound to workstream ${header.scope_id}: each contract that ends records its Task Outcome there` +
        (header.handoff_receipt_ref ? `, covering receipt ${header.handoff_receipt_ref.source_id}` : ''),
  );
}

function tally(counts: Readonly<Partial<Record<string, number>>>): string {
  return Object.entries(counts)
    .map(([name, count]) => `${count} ${name.replaceAll('_', ' ')}`)
    .join(', ');
}

/** The project's sessions, newest first: one short block each, from its summary alone. */
export function sessions(result: ListSessionsResult): string {
  if (result.total === 0) return lines('No sessions yet: baton session start <session> starts one.');
  const blocks = result.sessions.map((listed) => {
    const { contract } = listed;
    return lines(
      `Session ${listed.session_id} · ${listed.work_mode === null ? 'no header' : `mode ${listed.work_mode}`} · created ${listed.created_at} · position ${listed.position}`,
      listed.error !== null && `  cannot be projected: ${listed.error.code}: ${listed.error.message}`,
      listed.parent_session_id !== null && `  child of ${listed.parent_session_id}`,
      listed.scope_id !== null && `  bound to workstream ${listed.scope_id}`,
      listed.goal !== null && `  goal: ${oneLine(listed.goal)}`,
      listed.terminal !== null && `  ended ${listed.terminal.status} at position ${listed.terminal.position}`,
      ...handoffLines(listed.terminal, '  '),
      contract === null
        ? listed.error === null && '  no contract'
        : `  contract ${contract.contract_id} revision ${contract.revision}: ${contract.status}` +
            ` · items: ${contract.items.total === 0 ? 'none' : `${tally(contract.items.by_status)} (of ${contract.items.total})`}` +
            ` · criteria: ${contract.criteria.passed} of ${contract.criteria.total} passed`,
      contract !== null && `  objective: ${contract.objective}`,
      listed.contracts > 1 && `  ${listed.contracts} contracts in all`,
    );
  });
  const shown =
    result.total > result.sessions.length
      ? `The newest ${result.sessions.length} of ${result.total} sessions:`
      : `${result.total} session${result.total === 1 ? '' : 's'}, newest first:`;
  return `${shown}\n\n${blocks.join('\n')}`;
}

function because(reason: string): string {
  return reason === '' ? '' : `: ${reason}`;
}

/** What one work event changed, in a few words: the contract, item, criterion or assumption. */
function change(event: WorkEvent): string {
  const { kind } = event;
  switch (kind.type) {
    case 'contract_created':
      return `contract ${event.contract_id} r${event.revision}${kind.branch ? ' (branch)' : ''}: ${kind.contract.objective}`;
    case 'contract_revised':
      return `contract ${event.contract_id} r${kind.previous_revision} → r${event.revision}${because(kind.reason)}`;
    case 'contract_status_changed':
      return `contract ${event.contract_id} ${kind.from} → ${kind.to}${because(kind.reason)}`;
    case 'item_status_changed':
      return `item ${kind.item_id} ${kind.from} → ${kind.to} (attempt ${kind.attempt})${because(kind.reason)}`;
    case 'item_assigned':
      return `item ${kind.item_id} → ${owner(kind.owner)}${kind.child_session_id === null ? '' : ` in child session ${kind.child_session_id}`}`;
    case 'evidence_attached':
      return `item ${kind.item_id} evidence ${reference(kind.evidence)}${availability(kind.availability)}`;
    case 'assumption_resolved':
      return `assumption ${kind.assumption_id}: ${kind.resolution}`;
    case 'verification_recorded':
      return `criterion ${kind.criterion_id} ${kind.result.verdict}${because(kind.result.reason)}`;
  }
}

/**
 * One line per work event: position, time, live name, what changed and who changed it. An
 * event this Baton cannot read is named so, with its position, never skipped.
 */
export function workEventLine(message: WorkEventMessage): string {
  const head = `${message.position}  ${message.recorded_at}  ${message.name}`;
  if (message.name === unreadableEventName) return `${head}  (a stored event this Baton cannot read)\n`;
  const parsed = workEventSchema.safeParse(message.event);
  if (!parsed.success) return `${head}  (a stored event this Baton cannot read)\n`;
  const { actor } = parsed.data;
  // One line per event: a reason or objective written over several lines is joined with ↵.
  const what = oneLine(change(parsed.data));
  return `${head}  ${what}  · ${actor.type}${actor.id === '' ? '' : ` ${actor.id}`}\n`;
}

/** Indented lines of a stored text, at most `max` of them. */
function block(text: string, max = 12): string[] {
  const all = text.split('\n');
  const shown = all.slice(0, max).map((line) => `      ${line}`);
  if (all.length > max) shown.push(`      … ${all.length - max} more lines`);
  return shown;
}

function transcriptLines(entry: TranscriptEntry): string[] {
  const at = `#${entry.position}`.padEnd(6);
  switch (entry.type) {
    case 'message':
      return [`${at}${entry.author === 'baton' ? 'Baton' : 'person'}:`, ...block(entry.text)];
    case 'model':
      return entry.text === '' ? [] : [`${at}model:`, ...block(entry.text)];
    case 'tool_call':
      return [`${at}→ ${entry.tool} (${entry.tool_use_id}) ${oneLine(entry.input)}`];
    case 'tool_result':
      return [
        `${at}${entry.is_error ? '✗' : '←'} ${entry.tool} (${entry.tool_use_id})`,
        ...block(entry.output, 6),
      ];
    case 'model_request': {
      const tokens =
        entry.input_tokens === null
          ? ''
          : `, ${entry.input_tokens} in / ${entry.output_tokens ?? 0} out tokens`;
      return [
        `${at}· ${entry.model}: ${entry.attempts} attempt${entry.attempts === 1 ? '' : 's'}, ${entry.duration_ms} ms${tokens}`,
      ];
    }
    case 'goal_audit':
      return [`${at}goal audit: ${entry.verdict}`, ...block(entry.reason, 6)];
  }
}

/** A session's conversation as people read it: history, never instruction. */
export function transcript(value: Transcript): string {
  const left = value.total - value.entries.length;
  return lines(
    `Session ${value.session_id} · ${value.total} conversation entries${left > 0 ? ` (the oldest ${left} left out)` : ''} · history, not instruction`,
    value.goal !== null && `Goal: ${oneLine(value.goal)}`,
    value.total === 0 && 'No messages or tool calls in this session.',
    ...value.entries.flatMap(transcriptLines),
  );
}
