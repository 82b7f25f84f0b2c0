/**
 * Goal mode (docs/agent.md, "Goal mode"): a session's goal is what must be true when it ends,
 * checked by the read-only judge, never by the agent's word. The spec's "work contract complete
 * AND goal audit passes = audited completion". Pure: what the judge is shown of a session for
 * its goal, how an audit is recorded, and how many audits in a row have not passed. The app
 * gathers the session (src/app/goal.ts); the loop decides what a verdict means (src/agent/loop.ts).
 */
import { z } from 'zod';
import type { JudgeEvidence, JudgeRequest } from './judge.ts';
import { verdicts } from './model.ts';
import type { ContractProjection } from './projector.ts';

/** The purpose of the `receipt` entry that records one goal audit. */
export const goalAuditPurpose = 'goal_audit';

/** Audits in a row that did not pass (since the person last spoke) before the run ends failed. */
export const maxGoalAudits = 3;

/** How many of the session's latest tool results the judge reads beside the final answer. */
export const goalResultsShown = 12;

/** A goal audit's receipt details. */
export const goalAuditSchema = z.looseObject({
  verdict: z.enum(verdicts),
  reason: z.string().max(4000).default(''),
  /** The goal audited, as the header holds it. */
  goal: z.string().default(''),
  /** The workspace checkpoint the audit saw, when the session had one. */
  checkpoint: z.string().nullable().default(null),
  /** What the judge answered, cut: which judge, what it was shown. */
  output: z.string().default(''),
});
export type GoalAudit = z.output<typeof goalAuditSchema>;

/** A tool result of the session as the goal audit reads it. */
export interface GoalToolResult {
  readonly tool_use_id: string;
  readonly tool: string;
  readonly is_error: boolean;
  readonly output: string;
}

export interface GoalSession {
  readonly goal: string;
  /** What the person asked, in their own messages. */
  readonly task: string;
  /** The session's last contract, when it has one: its items and verdicts are evidence too. */
  readonly contract: ContractProjection | null;
  /** The model's last words. */
  readonly final_text: string;
  /** The session's latest tool results, oldest first. */
  readonly results: readonly GoalToolResult[];
  readonly workspace_diff: string | null;
  readonly workspace_note: string;
}

/**
 * What the judge is shown for a goal: the goal as the statement to decide, the person's task as
 * the objective, the contract's items and verdicts, the final answer and the latest tool results
 * as evidence (transcript evidence), and the workspace's changes, which the judge's budget keeps
 * at least half of its reading for.
 */
export function goalJudgeRequest(session: GoalSession): JudgeRequest {
  const { goal, contract } = session;
  const evidence: JudgeEvidence[] = [
    { item_id: 'session', ref: "the agent's final answer", text: session.final_text },
    ...session.results.map((result) => ({
      item_id: 'session',
      ref: `tool_result ${result.tool_use_id} (${result.tool}${result.is_error ? ', an error' : ''})`,
      text: result.output,
    })),
  ];
  const titles = new Map(contract?.contract.items.map((item) => [item.item_id, item.title]) ?? []);
  return {
    subject: 'goal',
    criterion: {
      criterion_id: 'goal',
      statement: goal,
      kind: { type: 'semantic', statement: goal },
      required: true,
    },
    objective: session.task,
    items:
      contract?.items.map((item) => ({
        item_id: item.item_id,
        title: titles.get(item.item_id) ?? item.item_id,
        status: item.status,
      })) ?? [],
    earlier:
      contract?.criteria.flatMap((criterion) =>
        criterion.result === null
          ? []
          : [
              {
                criterion_id: criterion.criterion_id,
                verdict: criterion.result.verdict,
                reason: criterion.result.reason,
              },
            ],
      ) ?? [],
    evidence,
    workspace_diff: session.workspace_diff,
    workspace_note: session.workspace_note,
  };
}

/**
 * How many goal audits in a row have not passed since the person last spoke: a person's message
 * starts the count again, a passed audit too.
 */
export function failedGoalAudits(
  entries: readonly { readonly type: string; readonly content: unknown }[],
): number {
  let failed = 0;
  for (const entry of entries) {
    const content = entry.content as { author?: unknown; purpose?: unknown; details?: unknown } | null;
    if (entry.type === 'user_message' && content?.author !== 'baton') failed = 0;
    if (entry.type !== 'receipt' || content?.purpose !== goalAuditPurpose) continue;
    const audit = goalAuditSchema.safeParse(content.details);
    failed = audit.success && audit.data.verdict === 'passed' ? 0 : failed + 1;
  }
  return failed;
}
