/**
 * The goal audit (docs/agent.md, "Goal mode"): the read-only judge decides whether a session's
 * goal is met, from the person's task, the session's contract and verdicts, the agent's final
 * answer, its latest tool results and the workspace's changes (read in the read-only sandbox, as
 * a semantic criterion's are). Every text is scrubbed of the caller's secret values before the
 * judge sees it. The audit is recorded as a `receipt` (purpose `goal_audit`); it changes nothing
 * else: what a verdict means for the run is the loop's to decide.
 */
import { BatonError } from '../core/errors.ts';
import type { JsonValue } from '../core/json.ts';
import { uuidv7Generator } from '../core/ids.ts';
import { scrubSecrets, secretValuesFromEnv } from '../core/secrets.ts';
import { clipText } from '../core/text.ts';
import { defaultWorkConfig } from '../core/work/config.ts';
import {
  goalAuditPurpose,
  goalJudgeRequest,
  goalResultsShown,
  type GoalAudit,
  type GoalToolResult,
} from '../core/work/goal.ts';
import type { JudgeRequest, SemanticJudge } from '../core/work/judge.ts';
import type { Verdict } from '../core/work/model.ts';
import { sessionEntrySchemas } from '../core/work/session.ts';
import type { AppDeps } from './deps.ts';
import { diffTimeoutMs, workspaceChanges } from './verify.ts';
import { readSessionHeader, readWork, sessionStream } from './work.ts';
import { privateFiles, usableWorkspaceCheckpoint } from './workspace-paths.ts';

export interface GoalAuditOptions {
  /** The judge; default deps.judge. Without one the audit is refused. */
  readonly judge?: SemanticJudge;
  /** The caller's environment, whose values never reach the judge or the ledger; default process.env. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly signal?: AbortSignal;
}

export interface GoalAuditResult {
  readonly verdict: Verdict;
  readonly reason: string;
  readonly receipt_id: string;
}

/** The most characters of the person's messages the judge reads as the objective. */
const taskChars = 8000;

/** The most characters of the judge's answer kept in the receipt. */
const outputChars = 8000;

function scrubbedRequest(request: JudgeRequest, scrub: (text: string) => string): JudgeRequest {
  return {
    ...request,
    criterion: {
      ...request.criterion,
      statement: scrub(request.criterion.statement),
      kind: { ...request.criterion.kind, statement: scrub(request.criterion.kind.statement) },
    },
    objective: scrub(request.objective),
    items: request.items.map((item) => ({ ...item, title: scrub(item.title) })),
    earlier: request.earlier.map((earlier) => ({ ...earlier, reason: scrub(earlier.reason) })),
    evidence: request.evidence.map((piece) => ({ ...piece, ref: scrub(piece.ref), text: scrub(piece.text) })),
    workspace_diff: request.workspace_diff === null ? null : scrub(request.workspace_diff),
  };
}

/**
 * Why a goal could not be audited in this workspace (its changes cannot be read: no Git work
 * tree, no sandbox, …), or null when it can: asked before a goal run writes anything, so that
 * the run is refused at once instead of failing its audit at the end.
 */
export async function goalWorkspaceProblem(deps: AppDeps, workspace: string | null): Promise<string | null> {
  const changes = await workspaceChanges(workspace, privateFiles(deps), {
    timeout_ms: diffTimeoutMs,
    signal: undefined,
    sandbox: undefined,
  });
  return changes.diff === null ? changes.note : null;
}

/**
 * Audit the session's goal with the judge and record the verdict. Refused (writing nothing)
 * when the session has no goal (`invalid_input`) or no judge is configured (`precondition_failed`).
 */
export async function auditGoal(
  deps: AppDeps,
  project_id: string,
  session_id: string,
  options: GoalAuditOptions = {},
): Promise<GoalAuditResult> {
  const header = await readSessionHeader(deps, project_id, session_id);
  if (header?.goal === undefined) {
    throw new BatonError('invalid_input', `session "${session_id}" has no goal to audit`, { session_id });
  }
  const judge = options.judge ?? deps.judge;
  if (judge === undefined) {
    throw new BatonError(
      'precondition_failed',
      'a goal is audited by the judge: configure [judge] (docs/judge.md)',
      {
        session_id,
      },
    );
  }
  const stream = sessionStream(project_id, session_id);
  const task: string[] = [];
  let final_text = '';
  const results: GoalToolResult[] = [];
  for await (const entry of deps.store.readStream(stream, {
    kinds: ['user_message', 'assistant_message', 'tool_result'],
  })) {
    if (entry.type === 'user_message') {
      const parsed = sessionEntrySchemas.user_message.safeParse(entry.content);
      if (parsed.success && parsed.data.author === 'person') task.push(parsed.data.text);
    } else if (entry.type === 'assistant_message') {
      const parsed = sessionEntrySchemas.assistant_message.safeParse(entry.content);
      if (parsed.success && parsed.data.text.trim() !== '') final_text = parsed.data.text;
    } else {
      const parsed = sessionEntrySchemas.tool_result.safeParse(entry.content);
      // The verifier's own results are not the agent's work.
      if (!parsed.success || parsed.data.tool_use_id.startsWith('baton.verify')) continue;
      results.push(parsed.data);
      if (results.length > goalResultsShown) results.shift();
    }
  }
  const work = await readWork(deps, project_id, { session_id });
  const workspace = header.workspace;
  const checkpoint =
    workspace === null ? null : await usableWorkspaceCheckpoint(deps, workspace).catch(() => null);
  const budget = deps.work?.verification_budget_ms ?? defaultWorkConfig.verification_budget_ms;
  const started = performance.now();
  const changes = await workspaceChanges(workspace, privateFiles(deps), {
    timeout_ms: Math.min(budget, diffTimeoutMs),
    signal: options.signal,
    sandbox: undefined,
  });
  const secrets = secretValuesFromEnv(options.env ?? process.env);
  const scrub = (text: string) => scrubSecrets(text, { values: secrets }).text;
  const request = scrubbedRequest(
    goalJudgeRequest({
      goal: header.goal,
      // The task as the person gave it, bounded: the judge's budget is for the evidence and diff.
      task: clipText(task.join('\n\n'), taskChars),
      contract: work.projection?.contracts.at(-1) ?? null,
      final_text,
      results,
      workspace_diff: changes.diff,
      workspace_note: changes.note,
    }),
    scrub,
  );
  const timeout_ms = Math.max(1, Math.ceil(budget - (performance.now() - started)));
  // Without the workspace's changes the judge would judge the transcript alone, the model's own
  // word: the audit fails closed instead (the spec's "judging largely from transcript evidence").
  const judgement =
    request.workspace_diff === null
      ? {
          verdict: 'unavailable' as const,
          reason: `the goal audit reads the workspace's changes, and they could not be read: ${changes.note}`,
        }
      : await judge(request, { timeout_ms, ...(options.signal ? { signal: options.signal } : {}) });
  const audit: GoalAudit = {
    verdict: judgement.verdict,
    reason: clipText(scrub(judgement.reason), 4000),
    goal: header.goal,
    checkpoint,
    output: clipText(scrub(judgement.output ?? ''), outputChars),
  };
  const receipt_id = `goal-${uuidv7Generator(deps.clock)()}`;
  await deps.store.append(stream, [
    {
      type: 'receipt',
      content: {
        schema: 'baton.receipt/v1',
        receipt_id,
        purpose: goalAuditPurpose,
        details: audit as unknown as Record<string, JsonValue>,
      },
      metadata: { kind: 'receipt' },
    },
  ]);
  return { verdict: audit.verdict, reason: audit.reason, receipt_id };
}
