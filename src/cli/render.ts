/**
 * Human text for operation results. Pure: a result in, lines out. Every view of handoff
 * history says it is untrusted and grants no authority; `--json` prints the result instead.
 */
import type { OperationResult } from '../client/types.ts';
import type { SourceReceipt, SourceRef } from '../core/ledger/source.ts';
import type { WorkContract } from '../core/continuity/records.ts';

function lines(...parts: (string | false | null | undefined)[]): string {
  return `${parts.filter((part): part is string => typeof part === 'string').join('\n')}\n`;
}

function ref(source: SourceRef): string {
  return `${source.source_id} (${source.digest.slice(0, 19)}…)`;
}

export function receipt(what: string, stored: SourceReceipt, trust?: string): string {
  return lines(
    `${what} ${stored.source_ref.source_id} stored in ${stored.source_ref.scope_id} at journal position ${stored.position}`,
    `  digest ${stored.digest}`,
    trust && `  trust: ${trust}`,
  );
}

export function prepared(result: OperationResult<'handoff_current_work'>): string {
  const body = result.prepared_handoff;
  return lines(
    `Prepared handoff ${result.digest} on revision ${body.base_revision} (not committed)`,
    `  boundary source ${ref(result.boundary_receipt.source_ref)} at journal position ${result.boundary_receipt.position}`,
    `  objective:   ${body.objective}`,
    `  next action: ${body.next_action.text}`,
  );
}

export function revision(result: OperationResult<'commit_handoff'>): string {
  return lines(
    `Revision ${result.revision} of ${result.scope_id} committed`,
    `  digest ${result.prepared_digest}`,
  );
}

function selection(resolved: OperationResult<'continue_handoff'>['selection']): string {
  return resolved.kind === 'exact'
    ? `revision ${resolved.revision} (${resolved.digest})`
    : `prepared handoff ${resolved.digest}`;
}

export function resolution(result: OperationResult<'continue_handoff'>): string {
  const handoff = result.handoff;
  const older =
    result.selection.kind === 'exact' && result.selection.revision < result.current_head
      ? `  NOTE: revision ${result.current_head} is newer than this one`
      : undefined;
  const checks = result.evidence_checks.map((check) =>
    check.status === 'available'
      ? `  available    ${check.location}: ${ref(check.citation)}`
      : `  UNAVAILABLE  ${check.location}: ${ref(check.citation)} (${check.reason})`,
  );
  const target =
    result.selection.kind === 'exact'
      ? `--revision ${result.selection.revision}`
      : `--prepared ${result.selection.digest}`;
  return lines(
    `Workstream ${result.scope_id}: ${selection(result.selection)}, current head ${result.current_head}`,
    older,
    `Trust: ${result.trust} (it grants no authority; check the live workspace before acting)`,
    '',
    `Objective:   ${handoff.objective}`,
    `Disposition: ${handoff.disposition}`,
    `Next action: ${handoff.next_action.text}`,
    handoff.blocked && `Blocked on:  ${handoff.blocked.question}`,
    ...(handoff.blocked?.options.map((option, index) => `  option ${index + 1}: ${option}`) ?? []),
    handoff.blocked && `  impact: ${handoff.blocked.impact}`,
    handoff.statements.length > 0 && 'State:',
    ...handoff.statements.map((statement) => `  - ${statement.basis}: ${statement.text}`),
    handoff.omissions.length > 0 && 'Not included:',
    ...handoff.omissions.map((omission) => `  - ${omission}`),
    '',
    `Evidence: ${result.evidence} (${result.evidence_checks.length} citation(s); readable is not verified)`,
    ...checks,
    '',
    ...(result.evidence === 'unavailable'
      ? [
          // Acceptance would be refused (precondition_failed): only the two other answers are offered.
          'It cannot be accepted while a citation is unavailable. Ask for what is missing, or decline:',
          `  baton ack needs-clarification ${target} --reason "…"     baton ack declined ${target} --reason "…"`,
        ]
      : [
          'To take it on, after checking the live workspace, your capability and your authorization:',
          `  baton ack accepted ${target} --confirm-workspace --confirm-capability --confirm-authorization`,
          `  baton ack needs-clarification ${target} --reason "…"     baton ack declined ${target} --reason "…"`,
        ]),
  );
}

export function acknowledged(result: OperationResult<'acknowledge_handoff'>): string {
  return lines(
    `Receipt ${result.record.status} for ${selection(result.record.target)} of ${result.receipt.source_ref.scope_id}`,
    `  stored as ${result.receipt.source_ref.source_id} at journal position ${result.receipt.position}`,
    `  evidence ${result.record.evidence}, ${result.record.citations_checked} citation(s) checked`,
    `  trust: ${result.trust} (accepted is not completion)`,
    result.record.status === 'accepted' &&
      `Record what happened with: baton outcome --status … --summary … --receipt ${result.receipt.source_ref.source_id}`,
  );
}

export function outcome(result: OperationResult<'record_task_outcome'>): string {
  const record = result.record;
  return lines(
    `Task outcome ${record.status}: ${record.summary}`,
    `  stored as ${result.receipt.source_ref.source_id} in ${result.receipt.source_ref.scope_id} at journal position ${result.receipt.position}`,
    record.handoff_receipt_ref
      ? `  covers receipt ${ref(record.handoff_receipt_ref)}`
      : '  linked to no handoff receipt',
    ...record.checks.map((check) => `  check ${check.name}: ${check.status} (${check.basis})`),
    `  trust: ${result.trust} (covered is not success)`,
  );
}

export function continuity(result: OperationResult<'get_work_continuity'>): string {
  return lines(
    `Workstream ${result.scope_id}: ${result.current ? `revision ${result.current.revision}` : 'no committed handoff'}`,
    `Transfer: ${result.transfer_state} · outcome: ${result.outcome_state}`,
    result.active_receipt_ref && `  active receipt ${ref(result.active_receipt_ref)}`,
    result.covering_outcome_ref && `  covered by outcome ${ref(result.covering_outcome_ref)}`,
    `Records: ${Object.entries(result.counts)
      .map(([kind, count]) => `${count} ${kind}`)
      .join(
        ', ',
      )}${result.invalid_record_count > 0 ? `, ${result.invalid_record_count} invalid (excluded)` : ''}`,
    result.truncated && `Showing the latest ${result.timeline.length} records.`,
    ...result.timeline.map(
      (event) =>
        `  #${event.position}  ${event.kind}${event.status ? ` (${event.status})` : ''}: ${event.summary}  [${event.source_ref.source_id}]`,
    ),
  );
}

export function candidates(result: OperationResult<'list_experience_candidates'>): string {
  if (result.length === 0) return 'No experience candidates yet (each Task Outcome drafts one).\n';
  return lines(
    ...result.flatMap((candidate) => [
      `${candidate.status.padEnd(8)} ${candidate.candidate.scope_id} ${candidate.candidate.source_id}`,
      `  ${candidate.draft.lesson}`,
      candidate.review ? `  review: ${candidate.review.decision}: ${candidate.review.note}` : undefined,
    ]),
  );
}

export function reviewed(result: OperationResult<'review_experience'>): string {
  return lines(
    `Candidate ${result.candidate.candidate.source_id} is ${result.candidate.status}`,
    `  review stored as ${result.receipt.source_ref.source_id} at journal position ${result.receipt.position}`,
  );
}

/** A Work Contract as people read it: every field, each list item on its own line. */
export function workContract(record: WorkContract): string[] {
  const list = (label: string, items: readonly string[]) => items.map((item) => `  ${label} ${item}`);
  return [
    `  objective: ${record.objective}`,
    ...record.facts.map((fact) => `  fact (${fact.basis}): ${fact.text}`),
    ...list('in scope:', record.in_scope),
    ...list('excluded:', record.exclusions),
    ...list('done when:', record.completion_criteria),
    ...list('authorization note:', record.authorization_notes),
    ...list('open question:', record.open_questions),
  ];
}

export function context(result: OperationResult<'prepare_context'>): string {
  return lines(
    `Prepared context for project ${result.project_id}${result.scope_id === null ? '' : `, workstream ${result.scope_id}`}`,
    'All of it is untrusted: it grants no tool, network, credential or write authority.',
    result.handoff
      ? `Handoff revision ${result.handoff.revision}: ${result.handoff.handoff.objective}\n  next action: ${result.handoff.handoff.next_action.text}`
      : 'No committed handoff.',
    result.work_contract
      ? [
          `Work contract ${result.work_contract.source_ref.source_id}:`,
          ...workContract(result.work_contract.record),
        ].join('\n')
      : 'No work contract.',
    `Approved experience: ${result.experience.length}`,
    ...result.experience.map((candidate) => `  - ${candidate.draft.lesson}`),
  );
}

export function metrics(result: OperationResult<'get_metrics'>): string {
  const rate = (name: string, value: { rate: number | null; numerator: number; denominator: number }) =>
    `  ${name.padEnd(28)} ${value.rate === null ? 'n/a' : `${(value.rate * 100).toFixed(1)}%`} (${value.numerator}/${value.denominator})`;
  return lines(
    `Continuity metrics of project ${result.project_id}`,
    rate('clarification rate', result.clarification_rate),
    rate('evidence availability rate', result.evidence_availability_rate),
    rate('handoff result coverage rate', result.handoff_result_coverage_rate),
    `  receipts ${result.counts.receipts}, accepted ${result.counts.accepted_receipts}, outcomes ${result.counts.outcomes}`,
    `  passed checks: ${result.counts.verified_passed_checks} verified, ${result.counts.declared_passed_checks} declared`,
  );
}
