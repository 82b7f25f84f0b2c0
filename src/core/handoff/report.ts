/**
 * The Handoff Report projection: per workstream, the frozen selection (the committed head when
 * it was read), the revision count through it, the current committed handoff and the latest
 * 20 revision summaries, latest first. Plus the human Markdown view of it.
 */
import type { Digest } from '../canonical.ts';
import type { WorkContinuity } from '../continuity/projection.ts';
import type { Revision } from '../ledger/revision.ts';
import type { Disposition, PreparedHandoff } from './prepared.ts';
import { visibleControls } from '../text.ts';

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

/** One line of Markdown text: no line breaks, no table pipes, no raw HTML. */
function inline(text: string): string {
  return text
    .replace(/\s*\n\s*/g, ' ')
    .replace(/[|<>]/g, (char) => `\\${char}`)
    .trim();
}

function quote(text: string): string {
  return text
    .split('\n')
    .map((line) => `> ${line.replace(/[<>]/g, (char) => `\\${char}`)}`)
    .join('\n');
}

function cites(citations: readonly { source_id: string }[]): string {
  return citations.length === 0
    ? ''
    : ` _(cites ${citations.map((c) => `\`${inline(c.source_id)}\``).join(', ')})_`;
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
        `| ${event.position} | ${event.kind}${event.status ? ` (${event.status})` : ''} | ${inline(event.summary)} |`,
    ),
    '',
  );
  return lines;
}

/** workstreamMarkdown before its stored text is made safe to show. */
function workstreamLines(report: WorkstreamReport): string {
  const lines: string[] = [];
  const current = report.current;
  if (!current) {
    // The contract, receipts and outcomes recorded so far are shown all the same.
    lines.push(
      `# Workstream \`${inline(report.scope_id)}\``,
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
    `# Handoff: ${inline(handoff.objective)}`,
    '',
    `Workstream \`${inline(report.scope_id)}\` · revision ${current.revision} of ${report.revision_count} · ` +
      `disposition **${handoff.disposition}**`,
    '',
    '## Next action',
    '',
    quote(handoff.next_action.text) + cites(handoff.next_action.citations),
    '',
  );
  if (handoff.blocked) {
    lines.push(
      '## Decision needed: this work is blocked',
      '',
      `**Question:** ${inline(handoff.blocked.question)}`,
      '',
      '**Options:**',
      '',
      ...handoff.blocked.options.map((option, index) => `${index + 1}. ${inline(option)}`),
      '',
      `**Impact:** ${inline(handoff.blocked.impact)}`,
      '',
    );
  }
  lines.push('## Not included (omissions)', '');
  if (handoff.omissions.length === 0) lines.push('None declared.');
  else lines.push(...handoff.omissions.map((omission) => `- **${inline(omission)}**`));
  lines.push('', '## Where the work stands', '');
  if (handoff.statements.length === 0) lines.push('No statements.');
  for (const statement of handoff.statements) {
    lines.push(
      `- ${statement.basis === 'verified' ? 'Cited' : 'Declared'}: ${inline(statement.text)}${cites(statement.citations)}`,
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
        `| ${summary.revision}${summary.current ? ' (this one)' : ''} | ${summary.disposition} | ${inline(summary.objective)} | ${inline(summary.next_action)} |`,
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

/**
 * The human view of one workstream: next action and omissions first, impossible to miss. Stored
 * text is shown, never acted on: control characters and bidirectional overrides become escapes
 * (visibleControls), so a handoff cannot drive the terminal or reorder what its reader sees.
 */
export function workstreamMarkdown(report: WorkstreamReport): string {
  return visibleControls(workstreamLines(report));
}

export function reportMarkdown(report: HandoffReport): string {
  const header = [`# Handoff Report: project \`${inline(report.project_id)}\``, ''];
  if (report.workstreams.length === 0) return [...header, 'No workstreams yet.', ''].join('\n');
  return [
    ...header,
    ...report.workstreams.map((workstream) =>
      workstreamMarkdown(workstream).replace(/^# /, '## ').replace(/\n## /g, '\n### '),
    ),
  ].join('\n');
}
