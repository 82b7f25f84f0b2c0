/**
 * The semantic judge through a model route (docs/judge.md): the request becomes a prompt whose
 * untrusted parts are fenced by a token drawn for this request alone, the model's answer becomes a
 * verdict (passed, failed or unknown), and a model that cannot answer gives `unavailable` or
 * `timed_out`, never a pass. The judge has no tools: it reads what it is shown and answers.
 */
import { randomBytes } from 'node:crypto';
import { clipText } from '../core/text.ts';
import type { JudgeConfig } from '../core/work/config.ts';
import { judgePrompt, readJudgement, type SemanticJudge } from '../core/work/judge.ts';
import { ModelError, modelRoute, type ModelRoute } from './models.ts';

const answerChars = 4_000;

export function modelJudge(
  route: ModelRoute,
  config: Pick<JudgeConfig, 'max_tokens' | 'timeout_ms' | 'evidence_chars'>,
): SemanticJudge {
  const name = `${route.provider}/${route.model}`;
  return async (request, limits) => {
    const { system, prompt } = judgePrompt(request, randomBytes(12).toString('hex'), config.evidence_chars);
    let reply: string;
    try {
      reply = await route.complete({
        system,
        prompt,
        max_tokens: config.max_tokens,
        timeout_ms: Math.max(1, Math.min(config.timeout_ms, limits.timeout_ms)),
        ...(limits.signal ? { signal: limits.signal } : {}),
      });
    } catch (error) {
      if (!(error instanceof ModelError)) throw error;
      return {
        verdict: error.kind === 'timed_out' ? 'timed_out' : 'unavailable',
        reason: `judge ${name}: ${error.message}`,
      };
    }
    const judgement = readJudgement(reply);
    const shown = [
      `${request.evidence.length} evidence reference${request.evidence.length === 1 ? '' : 's'}`,
      request.workspace_diff === null
        ? `workspace changes not read (${request.workspace_note})`
        : `workspace changes (${request.workspace_diff.length} characters)`,
    ];
    return {
      ...judgement,
      output: [`judge: ${name}`, `shown: ${shown.join('; ')}`, 'answer:', clipText(reply, answerChars)].join(
        '\n',
      ),
    };
  };
}

/** The judge `[judge]` configures, its key read from the environment variable it names. */
export function configuredJudge(
  config: JudgeConfig,
  env: Readonly<Record<string, string | undefined>>,
): SemanticJudge {
  return modelJudge(modelRoute(config, env), config);
}

/** What `baton work judge` found: whether the configured judge answers as a judge must. */
export interface JudgeCheck {
  readonly provider: string;
  readonly model: string;
  readonly base_url: string;
  readonly verdict: string;
  readonly reason: string;
  readonly duration_ms: number;
  /** True only when the model read the fenced evidence and answered `passed`. */
  readonly ok: boolean;
}

/**
 * Ask the configured judge one question whose answer is known (the fenced evidence says READY,
 * does it?), through the same prompt and reading as a verification: `ok` only on `passed`.
 */
export async function checkJudge(
  config: JudgeConfig,
  env: Readonly<Record<string, string | undefined>>,
  signal?: AbortSignal,
): Promise<JudgeCheck> {
  const judge = configuredJudge(config, env);
  const statement = 'The evidence of item check is the single word READY.';
  const started = performance.now();
  const answer = await judge(
    {
      criterion: {
        criterion_id: 'judge-check',
        statement,
        kind: { type: 'semantic', statement },
        required: true,
      },
      objective: 'Check that the judge answers.',
      items: [{ item_id: 'check', title: 'Say READY', status: 'ready_for_verification' }],
      earlier: [],
      evidence: [{ item_id: 'check', ref: 'receipt check', text: 'READY' }],
      workspace_diff: null,
      workspace_note: 'a check of the judge reads no workspace',
    },
    { timeout_ms: config.timeout_ms, ...(signal ? { signal } : {}) },
  );
  return {
    provider: config.provider,
    model: config.model,
    base_url: config.base_url,
    verdict: answer.verdict,
    reason: answer.reason,
    duration_ms: Math.round(performance.now() - started),
    ok: answer.verdict === 'passed',
  };
}
