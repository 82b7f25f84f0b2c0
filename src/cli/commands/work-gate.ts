/**
 * `baton work gate` (the completion gate, also as a Claude Code or Codex Stop hook) and
 * `baton work verify` (run the verifier and print each verdict). Both run on this machine's
 * store and workspace: the gate computes the workspace checkpoint now, and the verifier runs
 * shell criteria in the local read-only sandbox, so neither goes through --server. And `baton
 * work judge`, which asks the configured judge of semantic criteria a question with a known answer.
 */
import { stopGate, defaultMaxBlocks, maxBlocksLimit } from '../../app/gate.ts';
import { maxTimeoutMs, verifyWork } from '../../app/verify.ts';
import { BatonError, isBatonError } from '../../core/errors.ts';
import { personReasons } from '../../core/work/gate.ts';
import { common, databaseHelp, text, UsageError, whole, type Command, type Options } from '../command.ts';
import { checkJudge } from '../../agent/judge.ts';
import { appDeps, commandConfig, configHelp, configOption } from '../config.ts';
import type { Context } from '../context.ts';

const options = {
  ...common,
  ...configOption,
  session: { type: 'string' },
  project: { type: 'string' },
  database: { type: 'string' },
  server: { type: 'string' },
  json: { type: 'boolean', default: false },
} satisfies Options;

function session(context: Context): string {
  const given = text(context.values, 'session') ?? context.positionals[0];
  if (given === undefined || context.positionals.length > (text(context.values, 'session') ? 0 : 1)) {
    throw new UsageError('name one session: --session ID');
  }
  return given;
}

export function localOnly(context: Context, name: string): void {
  if (text(context.values, 'server') !== undefined || context.io.env.BATON_SERVER) {
    throw new UsageError(
      `${name} runs on this machine's store and workspace; drop --server (and BATON_SERVER), use --database for a shared PostgreSQL`,
    );
  }
}

/** The Stop hook's input on stdin, when a hook runner sent one; {} otherwise. */
async function hookInput(): Promise<Record<string, unknown>> {
  if (process.stdin.isTTY) return {};
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8').trim();
  if (raw === '') return {};
  try {
    const value = JSON.parse(raw) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

const gate: Command = {
  positionals: true,
  summary: 'decide whether an agent may stop: blocks while managed work is unfinished or unverified',
  usage: `baton work gate --session ID [--hook] [--max-blocks N] [--json]

  Blocks while a required item is pending, running, blocked or awaiting verification, while a
  required criterion lacks a passing verdict, or when the workspace changed after a verdict.
  A session without a live contract is allowed. After --max-blocks consecutive blocks the
  contract ends unverified (or failed) with the reason, and stopping is allowed.
  --session ID          the Baton session the agent works in
  --hook                speak the Stop-hook protocol of Claude Code and Codex: read the hook's
                        JSON on stdin; print {"decision":"block","reason":…} to block; exit 0
  --max-blocks N        consecutive blocks before continuation is exhausted (default ${defaultMaxBlocks})
  --json                print the decision as JSON (exit 0 either way)
${configHelp}
  --project ID          the project of the local database
${databaseHelp}

  Without --hook or --json: the reasons for people, exit 1 when blocked, 0 when allowed.`,
  examples: [
    'baton work gate --session claude-1',
    'baton work gate --hook --session "$BATON_SESSION"    # as a Stop hook',
  ],
  options: { ...options, hook: { type: 'boolean', default: false }, 'max-blocks': { type: 'string' } },
  async run(context) {
    localOnly(context, 'work gate');
    const hook = context.values.hook === true;
    const session_id = session(context);
    const max_blocks = whole(context.values, 'max-blocks', { min: 1, max: maxBlocksLimit });
    const input = hook ? await hookInput() : {};
    const deps = await appDeps(context);
    let result: Awaited<ReturnType<typeof stopGate>> | undefined;
    const project_id = await context.project();
    try {
      result = await stopGate(deps, project_id, {
        session_id,
        ...(max_blocks === undefined ? {} : { max_blocks }),
      });
    } catch (error) {
      // A session that does not exist holds no managed work: nothing to gate. Said on stderr,
      // because a mistyped --session in a Stop hook would otherwise never block, silently.
      if (isBatonError(error, 'not_found')) {
        context.io.err(`warning: no session ${session_id} in project ${project_id}: nothing to gate\n`);
      } else if (hook && input.stop_hook_active !== true && isBatonError(error)) {
        // Unattended, a gate that cannot decide fails closed: an exit code other than 0 or 2 lets
        // the agent stop. Once only: when a hook already sent the agent back, the error ends the
        // hook as any other (exit 1, on stderr for the person), so a lasting fault is no endless loop.
        const reason =
          `Baton work gate: it could not decide whether the managed work is verified (${error.code}: ${error.message}), ` +
          'so it does not let the agent stop. This waits for a person: ask them to fix what the gate reports.';
        context.io.out(`${JSON.stringify({ decision: 'block', reason })}\n`);
        return;
      } else {
        throw error;
      }
    }
    const blocked = result?.decision === 'block';
    const reasons = result?.decision === 'block' ? result.reasons.map((reason) => reason.message) : [];
    if (hook) {
      if (result?.decision === 'block') {
        // Tell the agent what it can do; when only a person can, say so instead of sending it
        // back to items it may not start.
        const next =
          result.status === 'draft' ||
          result.status === 'awaiting_input' ||
          result.reasons.every((reason) => personReasons.has(reason.code))
            ? 'This waits for a person: ask them to confirm, answer or revise the contract.'
            : 'Finish the items, move them to ready_for_verification and call work_verify.';
        const reason = `Baton work gate: the managed work is not verified complete.\n- ${reasons.join('\n- ')}\n${next}`;
        context.io.out(`${JSON.stringify({ decision: 'block', reason })}\n`);
      }
      return;
    }
    if (context.values.json === true) {
      context.io.out(
        `${JSON.stringify(result ?? { decision: 'allow', contract_id: null, status: null, blocks: 0, exhausted: null })}\n`,
      );
      return;
    }
    if (!blocked) {
      const why = result?.exhausted
        ? ` (contract ${result.status}: ${result.exhausted.reason})`
        : result?.status
          ? ` (contract ${result.status})`
          : ' (no live contract)';
      context.io.out(`allow${why}\n`);
      return;
    }
    context.io.out(
      `block (${reasons.length} reason${reasons.length === 1 ? '' : 's'}, block ${result!.blocks}):\n${reasons.map((reason) => `  - ${reason}`).join('\n')}\n`,
    );
    throw new BatonError('precondition_failed', 'the work gate blocks stopping', { reasons });
  },
};

/**
 * Ctrl-C (SIGINT) or SIGTERM aborts the signal instead of ending the process at once, so the
 * running shell criterion's sandbox is killed and nothing is recorded; stop() stops listening.
 */
export function interruptOnSignal(): {
  signal: AbortSignal;
  received(): NodeJS.Signals | undefined;
  stop(): void;
} {
  const signals = ['SIGINT', 'SIGTERM'] as const;
  const controller = new AbortController();
  let received: NodeJS.Signals | undefined;
  const stop = () => {
    for (const name of signals) process.off(name, interrupted);
  };
  function interrupted(name: NodeJS.Signals): void {
    stop();
    received = name;
    controller.abort();
  }
  for (const name of signals) process.once(name, interrupted);
  return { signal: controller.signal, received: () => received, stop };
}

const verify: Command = {
  positionals: true,
  summary: "run a session's criteria (shell criteria in the read-only sandbox) and print each verdict",
  usage: `baton work verify --session ID [--json]

  Runs every criterion of the live contract in the spec's order and records each verdict with
  its evidence; items succeed and the contract completes only when every required criterion
  passed. Shell criteria run only inside bubblewrap; without it they are unavailable.
  --session ID          the Baton session
  --timeout-ms N        per shell criterion (default 60000)
  Each criterion is announced on stderr as it starts (checking 1/3: tests (shell)).
  --json                print the verification report as JSON
${configHelp}
  --project ID          the project of the local database
${databaseHelp}

  Exit 0 when the contract completed, 1 otherwise.`,
  examples: ['baton work verify --session claude-1', 'baton work verify --session claude-1 --json'],
  options: { ...options, 'timeout-ms': { type: 'string' } },
  async run(context) {
    localOnly(context, 'work verify');
    const session_id = session(context);
    const timeout = whole(context.values, 'timeout-ms', { min: 1, max: maxTimeoutMs });
    const deps = await appDeps(context);
    const interrupt = interruptOnSignal();
    let report: Awaited<ReturnType<typeof verifyWork>>;
    try {
      report = await verifyWork(
        deps,
        await context.project(),
        { session_id },
        {
          ...(timeout === undefined ? {} : { timeout_ms: timeout }),
          onCriterion: ({ index, total, criterion_id, kind }) =>
            context.io.err(`checking ${index}/${total}: ${criterion_id} (${kind})\n`),
          signal: interrupt.signal,
        },
      );
    } catch (error) {
      const received = interrupt.received();
      if (received === undefined || !isBatonError(error)) throw error;
      // Said, then ended by the signal as it would have ended anyway, so a script stops too.
      context.io.err(`baton work verify: ${error.code}: ${error.message}\n`);
      process.kill(process.pid, received);
      throw error;
    } finally {
      interrupt.stop();
    }
    context.print(report, () =>
      [
        `contract ${report.contract_id} revision ${report.revision}: ${report.contract_status}`,
        ...report.verdicts.map(
          (verdict) =>
            `  ${verdict.verdict.padEnd(11)} ${verdict.criterion_id} (${verdict.kind}): ${verdict.reason}`,
        ),
        '',
      ].join('\n'),
    );
    if (report.contract_status !== 'completed' && context.values.json !== true) {
      throw new BatonError(
        'precondition_failed',
        `the contract is ${report.contract_status}, not completed`,
        {
          contract_status: report.contract_status,
        },
      );
    }
  },
};

const judge: Command = {
  summary: 'ask the judge of semantic criteria ([judge] in baton.toml) a question with a known answer',
  usage: `baton work judge [--config FILE] [--json]

  Sends the configured model one criterion whose evidence decides it, through the same prompt
  and reading a verification uses, and says whether it answered as a judge must (passed), how
  long it took, and what it said. Nothing is written.
  --json                print {provider, model, base_url, verdict, reason, duration_ms, ok}
${configHelp}

  Exit 0 when the judge answered passed, 1 otherwise (no [judge], unreachable, or a wrong
  answer), with --json too.`,
  examples: ['baton work judge', 'baton work judge --config ci/baton.toml --json'],
  options: { ...common, ...configOption, json: { type: 'boolean', default: false } },
  async run(context) {
    if (context.positionals.length > 0) throw new UsageError('baton work judge takes options only');
    const { judge: config, path } = await commandConfig(context);
    if (config === null) {
      throw new BatonError(
        'precondition_failed',
        `${path ?? 'baton.toml'} has no [judge]: name a model (provider, model) to judge semantic criteria (docs/judge.md)`,
      );
    }
    const check = await checkJudge(config, context.io.env);
    context.print(
      check,
      () =>
        `judge ${check.provider}/${check.model} at ${check.base_url}: ${check.verdict} in ${check.duration_ms} ms\n  ${check.reason}\n`,
    );
    if (!check.ok) {
      throw new BatonError(
        'unavailable',
        check.verdict === 'unavailable' || check.verdict === 'timed_out'
          ? 'the judge did not answer'
          : `the judge answered ${check.verdict} where the evidence decides passed: choose a model that follows the instructions`,
        { verdict: check.verdict },
      );
    }
  },
};

export const gateCommands: Record<string, Command> = {
  'work gate': gate,
  'work verify': verify,
  'work judge': judge,
};
