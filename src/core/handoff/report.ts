/**
 * The Handoff Report projection: per workstream, the frozen selection (the committed head when
 * it was read), the revision count through it, the current committed handoff and the latest
 * 20 revision summaries, latest first. Plus the human Markdown view of it, in which every stored
 * value passes through literal(): it shows as text and makes no Markdown structure.
 */
import type { Digest } from '../canonical.ts';
import type { WorkContinuity } from '../continuity/projection.ts';
import type { Revision } from '../ledger/revision.ts';
import type { Disposition, PreparedHandoff } from './prepared.ts';
import { literal } from '../markdown.ts';

export const reportRevisionLimit = 20;

export interface RevisionSummary {
  readonly revision: number;
  readonly digest: Digest;
  readonly committed_at: string;
  readonly objective: string;
  readonly disposition: Disposition;
  readonly next_action: string;
  /** True for the revision the frozen selection names. */
  readonly current: boolean;
}

export interface WorkstreamReport {
  readonly scope_id: string;
  /** The revision and journal position this report was read through; nothing later appears in it. */
  readonly selection: { readonly revision: number; readonly position: number };
  readonly revision_count: number;
  readonly current: {
    readonly revision: number;
    readonly digest: Digest;
    readonly committed_at: string;
    readonly handoff: PreparedHandoff;
  } | null;
  readonly revisions: readonly RevisionSummary[];
  /** Contract, handoff, receipt and outcome records in journal order, with transfer and outcome state. */
  readonly continuity: WorkContinuity;
  readonly trust: 'untrusted_history';
}

export interface HandoffReport {
  readonly schema: 'baton.handoff-report/v1';
  readonly project_id: string;
  readonly workstreams: readonly WorkstreamReport[];
}

export function summarize(revision: Revision, handoff: PreparedHandoff, through: number): RevisionSummary {
  return {
    revision: revision.revision,
    digest: revision.prepared_digest,
    committed_at: revision.committed_at,
    objective: handoff.objective,
    disposition: handoff.disposition,
    next_action: handoff.next_action.text,
    current: revision.revision === through,
  };
}

function cites(citations: readonly { source_id: string }[]): string {
  return citations.length === 0 ? '' : ` _(cites ${citations.map((c) => literal(c.source_id)).join(', ')})_`;
}

/** The workstream's four kinds of work record in journal order, with its transfer and outcome state. */
function afterward(continuity: WorkstreamReport['continuity'], title: string): string[] {
  const lines = [
    `## ${title}`,
    '',
    `Transfer: **${continuity.transfer_state}** · outcome: **${continuity.outcome_state}**`,
    '',
  ];
  if (continuity.timeline.length === 0) {
    lines.push('No contract, handoff, receipt or outcome recorded yet.', '');
    return lines;
  }
  if (continuity.truncated) lines.push(`Showing the latest ${continuity.timeline.length} records.`, '');
  lines.push(
    '| Journal position | Record | Summary |',
    '| --- | --- | --- |',
    ...continuity.timeline.map(
      (event) =>
        `| ${event.position} | ${literal(event.kind)}${event.status ? ` (${literal(event.status)})` : ''} | ${literal(event.summary)} |`,
    ),
    '',
  );
  return lines;
}

/**
 * The human view of one workstream: next action and omissions first, impossible to miss. Stored
 * text is shown, never acted on (literal): it cannot drive a terminal, reorder what its reader
 * sees, or add a heading, link, image, HTML, list, quote or table cell to the report.
 */
export function workstreamMarkdown(report: WorkstreamReport): string {
  const lines: string[] = [];
  const current = report.current;
  if (!current) {
    // The contract, receipts and outcomes recorded so far are shown all the same.
    lines.push(
      `# Workstream ${literal(report.scope_id)}`,
      '',
      'No handoff has been committed here yet.',
      '',
      ...afterward(report.continuity, 'Work recorded so far'),
      '---',
      '',
      'These records are untrusted history: they grant no authority. Check the live workspace before acting.',
      '',
    );
    return lines.join('\n');
  }
  const handoff = current.handoff;
  lines.push(
    `# Handoff: ${literal(handoff.objective)}`,
    '',
    `Workstream ${literal(report.scope_id)} · revision ${current.revision} of ${report.revision_count} · ` +
      `disposition **${literal(handoff.disposition)}**`,
    '',
    '## Next action',
    '',
    `> ${literal(handoff.next_action.text)}` + cites(handoff.next_action.citations),
    '',
  );
  if (handoff.blocked) {
    lines.push(
      '## Decision needed: this work is blocked',
      '',
      `**Question:** ${literal(handoff.blocked.question)}`,
      '',
      '**Options:**',
      '',
      ...handoff.blocked.options.map((option, index) => `${index + 1}. ${literal(option)}`),
      '',
      `**Impact:** ${literal(handoff.blocked.impact)}`,
      '',
    );
  }
  lines.push('## Not included (omissions)', '');
  if (handoff.omissions.length === 0) lines.push('None declared.');
  else lines.push(...handoff.omissions.map((omission) => `- **${literal(omission)}**`));
  lines.push('', '## Where the work stands', '');
  if (handoff.statements.length === 0) lines.push('No statements.');
  for (const statement of handoff.statements) {
    lines.push(
      `- ${statement.basis === 'verified' ? 'Cited' : 'Declared'}: ${literal(statement.text)}${cites(statement.citations)}`,
    );
  }
  lines.push(
    '',
    '## Revision trail',
    '',
    '| Revision | Disposition | Objective | Next action |',
    '| --- | --- | --- | --- |',
    ...report.revisions.map(
      (summary) =>
        `| ${summary.revision}${summary.current ? ' (this one)' : ''} | ${literal(summary.disposition)} | ${literal(summary.objective)} | ${literal(summary.next_action)} |`,
    ),
    '',
  );
  if (report.revision_count > report.revisions.length) {
    lines.push(`Showing the latest ${report.revisions.length} of ${report.revision_count} revisions.`, '');
  }
  lines.push(...afterward(report.continuity, 'What happened afterward'));
  lines.push(
    '---',
    '',
    'This handoff is untrusted history: it grants no authority. Check the live workspace before acting; ' +
      'a readable citation shows that the reference exists, not that the fact is still true.',
    '',
  );
  return lines.join('\n');
}

export function reportMarkdown(report: HandoffReport): string {
  const header = [`# Handoff Report: project ${literal(report.project_id)}`, ''];
  if (report.workstreams.length === 0) return [...header, 'No workstreams yet.', ''].join('\n');
  return [
    ...header,
    ...report.workstreams.map((workstream) =>
      workstreamMarkdown(workstream).replace(/^# /, '## ').replace(/\n## /g, '\n### '),
    ),
  ].join('\n');
}
