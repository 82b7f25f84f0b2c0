/**
 * The records before and after the work: a Work Contract (create_work_contract) and a Task
 * Outcome (record_task_outcome), with references typed as SOURCE_ID[@DIGEST].
 */
import { checkStatuses, outcomeStatuses, type CheckStatus } from '../../core/continuity/records.ts';
import {
  list,
  oneOf,
  required,
  scopeHelp,
  scopedOptions,
  text,
  transportHelp,
  UsageError,
  type Command,
} from '../command.ts';
import { exactRef, parseRef, receiptRef, stableSourceId } from '../refs.ts';
import * as render from '../render.ts';
import { attribution, attributionHelp, attributionOptions, currentWork, declared } from './inputs.ts';

const contract: Command = {
  summary: 'agree work before it starts: store a Work Contract (create_work_contract)',
  usage: `baton contract --objective TEXT --criterion TEXT… [options]

  --objective TEXT             the result to achieve
  --criterion TEXT             what completion means (repeat for each)
  --in-scope TEXT              inside the work boundary (repeatable)
  --exclude TEXT               outside it (repeatable)
  --fact TEXT                  a known fact, declared (repeatable)
  --authorization-note TEXT    authority granted or missing; a note, never a token (repeatable)
  --question TEXT              an open question that could change the result (repeatable)
  --source-id ID               default: derived from the contract, so a retry stores nothing new
${attributionHelp}
${scopeHelp}
${transportHelp}`,
  examples: [
    'baton contract --scope billing-export --objective "Export invoices as CSV" --criterion "CSV matches the PDF totals" --exclude "PDF layout"',
  ],
  operations: ['create_work_contract'],
  fields: {
    objective: '--objective',
    completion_criteria: '--criterion',
    in_scope: '--in-scope',
    exclusions: '--exclude',
    facts: '--fact',
    authorization_notes: '--authorization-note',
    open_questions: '--question',
    source_id: '--source-id',
  },
  options: {
    ...scopedOptions,
    ...attributionOptions,
    'source-id': { type: 'string' },
    objective: { type: 'string' },
    criterion: { type: 'string', multiple: true },
    'in-scope': { type: 'string', multiple: true },
    exclude: { type: 'string', multiple: true },
    fact: { type: 'string', multiple: true },
    'authorization-note': { type: 'string', multiple: true },
    question: { type: 'string', multiple: true },
  },
  async run(context) {
    const values = context.values;
    const objective = required(values, 'objective');
    const completion_criteria = list(values, 'criterion');
    if (completion_criteria.length === 0)
      throw new UsageError('name at least one --criterion: what completion means');
    const { scope_id } = await context.scope();
    const who = attribution(context);
    const fields = {
      objective,
      facts: declared(list(values, 'fact')),
      in_scope: list(values, 'in-scope'),
      exclusions: list(values, 'exclude'),
      completion_criteria,
      authorization_notes: list(values, 'authorization-note'),
      open_questions: list(values, 'question'),
      ...(who ? { attribution: who } : {}),
    };
    const source_id = text(values, 'source-id') ?? stableSourceId('contract', fields);
    const transport = await context.transport();
    const result = await transport.invoke('create_work_contract', { scope_id, source_id, ...fields });
    context.print(
      result,
      () =>
        render.receipt('Work contract', result.receipt, result.trust) +
        `${render.workContract(result.record).join('\n')}\n`,
    );
  },
};

/** `name=status`, or `name=status:verified:REF` with an exact same-scope reference. */
function parseCheck(spec: string): { name: string; status: CheckStatus; verified?: string } {
  const equals = spec.indexOf('=');
  const name = spec.slice(0, equals);
  const rest = spec.slice(equals + 1);
  const colon = rest.indexOf(':');
  const status = colon < 0 ? rest : rest.slice(0, colon);
  const basis = colon < 0 ? '' : rest.slice(colon + 1);
  const form = '--check NAME=STATUS or NAME=STATUS:verified:SOURCE_ID[@DIGEST]';
  if (equals <= 0) throw new UsageError(`${form}, not ${JSON.stringify(spec)}`);
  if (!(checkStatuses as readonly string[]).includes(status)) {
    throw new UsageError(
      `--check ${name}: the status is one of ${checkStatuses.join(', ')}, not ${JSON.stringify(status)}`,
    );
  }
  if (basis === '' || basis === 'declared') return { name, status: status as CheckStatus };
  if (!basis.startsWith('verified:') || basis.length === 'verified:'.length) {
    throw new UsageError(`${form}, not ${JSON.stringify(spec)}`);
  }
  return { name, status: status as CheckStatus, verified: basis.slice('verified:'.length) };
}

const outcomeCommand: Command = {
  summary: 'record what happened in one attempt: a Task Outcome, optionally covering a receipt',
  usage: `baton outcome --status STATUS --summary TEXT [options]

  --status STATUS     ${outcomeStatuses.join(', ')}
  --summary TEXT      the result, briefly
  --objective TEXT    default: the workstream's current objective
  --check SPEC        NAME=STATUS (declared) or NAME=STATUS:verified:SOURCE_ID[@DIGEST] (repeatable);
                      STATUS is ${checkStatuses.join(', ')}: a check that did not run is skipped
  --receipt REF       the accepted handoff receipt this result covers: its SOURCE_ID[@DIGEST],
                      or "active" for the workstream's active receipt. Without it the
                      outcome covers no transfer.
  --observation TEXT  something observed, declared (repeatable)
  --artifact REF      a produced artifact, SOURCE_ID[@DIGEST] (repeatable)
  --remaining TEXT    work that remains (repeatable)
  --source-id ID      default derived from the outcome
${attributionHelp}
${scopeHelp}
${transportHelp}`,
  examples: [
    'baton outcome --status succeeded --summary "Import validated on 100,000 rows" --check "unit tests=passed" --receipt active',
    'baton outcome --status partial --summary "Docs build timed out" --check "docs=timed_out" --remaining "Run the docs build again"',
  ],
  operations: ['prepare_context', 'get_work_continuity', 'record_task_outcome'],
  fields: {
    objective: '--objective',
    status: '--status',
    summary: '--summary',
    checks: '--check',
    handoff_receipt_ref: '--receipt',
    observations: '--observation',
    produced_artifacts: '--artifact',
    remaining_work: '--remaining',
    source_id: '--source-id',
  },
  options: {
    ...scopedOptions,
    ...attributionOptions,
    status: { type: 'string' },
    summary: { type: 'string' },
    objective: { type: 'string' },
    check: { type: 'string', multiple: true },
    receipt: { type: 'string' },
    observation: { type: 'string', multiple: true },
    artifact: { type: 'string', multiple: true },
    remaining: { type: 'string', multiple: true },
    'source-id': { type: 'string' },
  },
  async run(context) {
    const values = context.values;
    const status = oneOf(values, 'status', outcomeStatuses);
    if (status === undefined)
      throw new UsageError(`--status is required: one of ${outcomeStatuses.join(', ')}`);
    const summary = required(values, 'summary');
    const checks = list(values, 'check').map(parseCheck);
    const { scope_id } = await context.scope();
    const transport = await context.transport();
    const objective = text(values, 'objective') ?? (await currentWork(transport, scope_id)).objective;
    if (objective === undefined) {
      throw new UsageError(
        `--objective is required: ${scope_id} has no handoff or work contract to take it from`,
      );
    }
    const exact = (typed: string, option: string) =>
      exactRef(transport, scope_id, parseRef(typed, option), option);
    const handoff_receipt_ref = await receiptRef(transport, scope_id, text(values, 'receipt'));
    const who = attribution(context);
    const fields = {
      objective,
      status,
      summary,
      ...(handoff_receipt_ref ? { handoff_receipt_ref } : {}),
      observations: declared(list(values, 'observation')),
      checks: await Promise.all(
        checks.map(async (check) =>
          check.verified === undefined
            ? { name: check.name, status: check.status, basis: 'declared' as const }
            : {
                name: check.name,
                status: check.status,
                basis: 'verified' as const,
                evidence: [await exact(check.verified, `--check ${check.name}`)],
              },
        ),
      ),
      produced_artifacts: await Promise.all(
        list(values, 'artifact').map((item) => exact(item, '--artifact')),
      ),
      remaining_work: list(values, 'remaining'),
      ...(who ? { attribution: who } : {}),
    };
    const source_id = text(values, 'source-id') ?? stableSourceId('outcome', fields);
    // The journal's head now: an outcome answered at or before it was stored by an earlier run.
    const report = await transport.invoke('get_report', { scope_id, format: 'json' });
    const before = 'selection' in report ? report.selection.position : 0;
    const result = await transport.invoke('record_task_outcome', { scope_id, source_id, ...fields });
    context.print(result, () =>
      result.receipt.position <= before
        ? `${render.outcome(result)}  already recorded exactly so: nothing new was written\n`
        : render.outcome(result),
    );
    if (!handoff_receipt_ref && context.values.json !== true) {
      const continuity = await transport.invoke('get_work_continuity', { scope_id });
      if (continuity.outcome_state === 'awaiting_outcome' && continuity.active_receipt_ref) {
        context.io.err(
          `note: the accepted receipt ${continuity.active_receipt_ref.source_id} still awaits an outcome; ` +
            'this one does not cover it (add --receipt active to link one)\n',
        );
      }
    }
  },
};

export const recordCommands: Record<string, Command> = { contract, outcome: outcomeCommand };
