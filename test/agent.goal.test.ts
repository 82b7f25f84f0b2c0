/**
 * Goal mode (docs/agent.md, "Goal mode"): a session's goal is audited by the read-only judge,
 * over real HTTP (a scripted model for the agent, another for the judge), with the workspace's
 * changes read in the real sandbox, on real SQLite. The spec's "goal and work gates compose"
 * and "goal mode and work mode cannot falsely claim success".
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { configuredJudge } from '../src/agent/judge.ts';
import { runAgent, type AgentEvent, type AgentRunInput } from '../src/agent/loop.ts';
import { chatRoute } from '../src/agent/models.ts';
import type { AppDeps } from '../src/app/deps.ts';
import { readTranscript } from '../src/app/transcript.ts';
import * as work from '../src/app/work.ts';
import { run } from '../src/cli/run.ts';
import { systemClock } from '../src/core/clock.ts';
import { isBatonError } from '../src/core/errors.ts';
import { agentConfigSchema, judgeConfigSchema } from '../src/core/work/config.ts';
import { failedGoalAudits } from '../src/core/work/goal.ts';
import { usableWorkspaceCheckpoint } from '../src/app/workspace-paths.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import {
  startScriptedModel,
  type ModelCall,
  type ScriptedAnswer,
  type ScriptedModel,
} from './helpers/scripted-model.ts';

const secret = 'sk-live-goal-secret-7a6b5c4d';
const env = { AGENT_KEY: 'sk-agent', JUDGE_KEY: 'sk-judge', DEPLOY_KEY: secret };
const goal = 'CHANGELOG.md has an entry for the login fix';

let workspace: string;
let store: SqliteStore;
let deps: AppDeps;
let agentModel: ScriptedModel;
let judgeModel: ScriptedModel;
/** The agent's answers in turn; a function runs when its turn comes (to change the workspace). */
let answers: (ScriptedAnswer | (() => ScriptedAnswer))[];
let verdicts: ScriptedAnswer[];

beforeEach(async () => {
  workspace = mkdtempSync(join(tmpdir(), 'baton-goal-'));
  writeFileSync(join(workspace, 'CHANGELOG.md'), '# Changelog\n');
  const git = (...args: string[]) => execFileSync('git', ['-C', workspace, ...args], { stdio: 'ignore' });
  git('init', '-q');
  git('add', '.');
  git('-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '-m', 'start');
  store = new SqliteStore({ path: ':memory:' });
  await store.createProject('acme');
  answers = [];
  verdicts = [];
  agentModel = await startScriptedModel(() => {
    const next = answers.shift() ?? { status: 500, body: 'script ran out' };
    return typeof next === 'function' ? next() : next;
  });
  judgeModel = await startScriptedModel(() => verdicts.shift() ?? { status: 500, body: 'no verdict left' });
  deps = {
    store,
    clock: systemClock,
    judge: configuredJudge(
      judgeConfigSchema.parse({
        provider: 'openai',
        model: 'judge-1',
        base_url: `${judgeModel.url}/v1`,
        api_key_env: 'JUDGE_KEY',
        timeout_ms: 5000,
      }),
      env,
    ),
  };
});

afterEach(async () => {
  await store.close();
  await agentModel.close();
  await judgeModel.close();
  rmSync(workspace, { recursive: true, force: true });
});

const config = agentConfigSchema.parse({
  provider: 'openai',
  model: 'agent-1',
  base_url: 'http://127.0.0.1:1/v1',
  api_key_env: 'AGENT_KEY',
  timeout_ms: 5000,
});

async function agent(input: Partial<AgentRunInput>, runDeps: AppDeps = deps, signal?: AbortSignal) {
  const events: AgentEvent[] = [];
  const route = { ...config, base_url: `${agentModel.url}/v1` };
  const result = await runAgent(
    runDeps,
    'acme',
    { session_id: 's', start: { work_mode: 'direct', workspace }, ...input },
    {
      route: chatRoute(route, env),
      config: route,
      env,
      onEvent: (event) => events.push(event),
      retry_delay_ms: 5,
      ...(signal ? { signal } : {}),
    },
  );
  return { result, events };
}

const write = (id: string, content: string): ScriptedAnswer => ({
  tool_calls: [{ id, name: 'write_file', input: { path: 'CHANGELOG.md', content } }],
});
const verdict = (value: string, reason: string): ScriptedAnswer => JSON.stringify({ verdict: value, reason });
const sent = (call: ModelCall) => JSON.stringify(call.body);

async function audits(session_id = 's') {
  const found = [];
  for await (const entry of store.readStream(work.sessionStream('acme', session_id))) {
    const content = entry.content as { purpose?: string; details?: { verdict: string; reason: string } };
    if (entry.type === 'receipt' && content.purpose === 'goal_audit') found.push(content.details!);
  }
  return found;
}

describe('goal mode, direct work', () => {
  it('says a failed audit back to the model, and completes only when the judge finds the goal met', async () => {
    answers.push(
      write('w1', `# Changelog\n- tidy the README (deploy key ${secret})\n`),
      'Done: I updated the changelog.',
      write('w2', '# Changelog\n- fix the login redirect loop\n'),
      'Added the login fix entry.',
    );
    verdicts.push(
      verdict('failed', 'The diff adds a README entry, not the login fix.'),
      verdict('passed', 'The diff adds "fix the login redirect loop" to CHANGELOG.md.'),
    );
    const { result, events } = await agent({ prompt: 'Note the login fix in the changelog', goal });

    expect(result.status).toBe('completed');
    expect(result.reason).toBe(
      'the model finished its answer; the goal audit passed: judge: The diff adds "fix the login redirect loop" to CHANGELOG.md.',
    );
    expect(result.goal).toEqual({
      statement: goal,
      audits: 2,
      verdict: 'passed',
      reason: 'judge: The diff adds "fix the login redirect loop" to CHANGELOG.md.',
    });
    expect(result.turns).toBe(4);
    expect(readFileSync(join(workspace, 'CHANGELOG.md'), 'utf8')).toContain('login redirect loop');
    expect((await audits()).map((audit) => audit.verdict)).toEqual(['failed', 'passed']);

    // The judge read the goal, the task, the final answer and the workspace's diff; never the secret.
    expect(judgeModel.calls).toHaveLength(2);
    const first = sent(judgeModel.calls[0]!);
    expect(first).toContain(goal);
    expect(first).toContain('Note the login fix in the changelog');
    expect(first).toContain('Done: I updated the changelog.');
    expect(first).toContain('+- tidy the README');
    expect(first).toContain("the session's goal");
    expect(first).not.toContain(secret);
    expect(sent(judgeModel.calls[1]!)).toContain('+- fix the login redirect loop');
    // The model heard why it could not stop, and the goal again.
    const told = sent(agentModel.calls[2]!);
    expect(told).toContain(
      'Baton: you cannot stop yet. The goal audit found the goal not met (failed, 1 of 3 in a row)',
    );
    expect(told).toContain('The diff adds a README entry, not the login fix.');
    for (const call of agentModel.calls) expect(sent(call)).not.toContain(secret);
    expect(events.filter((event) => event.type === 'auditing')).toHaveLength(2);
    expect(events).toContainEqual({
      type: 'goal',
      verdict: 'failed',
      reason: 'judge: The diff adds a README entry, not the login fix.',
    });

    // People read the goal and each audit in the transcript.
    const transcript = await readTranscript(deps, 'acme', { session_id: 's' });
    expect(transcript.goal).toBe(goal);
    expect(transcript.entries.filter((entry) => entry.type === 'goal_audit')).toEqual([
      expect.objectContaining({
        verdict: 'failed',
        reason: 'judge: The diff adds a README entry, not the login fix.',
      }),
      expect.objectContaining({ verdict: 'passed' }),
    ]);
  });

  it('cannot claim success: three audits in a row that do not pass end the session failed', async () => {
    answers.push('Done.', 'Really done.', 'Still done.', 'Should not be asked');
    verdicts.push(
      verdict('failed', 'CHANGELOG.md is unchanged.'),
      'I am not sure.',
      verdict('unknown', 'Nothing shows the entry.'),
    );
    const { result } = await agent({ prompt: 'Note the login fix', goal });

    expect(result.status).toBe('failed');
    expect(result.reason).toBe(
      'the goal audit did not pass 3 times in a row; the last (unknown): judge: Nothing shows the entry.',
    );
    expect(result.work.terminal?.status).toBe('failed');
    expect(result.goal).toMatchObject({ audits: 3, verdict: 'unknown' });
    // The second answer held no verdict: unknown, never a pass.
    expect((await audits()).map((audit) => audit.verdict)).toEqual(['failed', 'unknown', 'unknown']);
    expect(agentModel.calls).toHaveLength(3);
  });

  it('ends failed, not completed, when the judge cannot be reached', async () => {
    answers.push('Done.');
    verdicts.push({ status: 503, body: 'overloaded' });
    const { result } = await agent({ prompt: 'Note the login fix', goal });

    expect(result.status).toBe('failed');
    expect(result.reason).toMatch(
      /^the goal audit could not decide \(unavailable\): judge openai\/judge-1: /,
    );
    expect((await audits()).map((audit) => audit.verdict)).toEqual(['unavailable']);
  });

  it('tells the model its goal from the first turn, scrubbed as the task is, and never stores or sends a secret in it', async () => {
    answers.push('Done.');
    verdicts.push(verdict('passed', 'The entry is there.'));
    const secretGoal = `${goal}; deploy with ${secret}`;
    const { result } = await agent({ prompt: 'x'.repeat(60_000), goal: secretGoal });

    expect(result.status).toBe('completed');
    const first = sent(agentModel.calls[0]!);
    expect(first).toContain(`The goal of this session: ${goal}; deploy with [redacted]`);
    expect(first).not.toContain(secret);
    const stored = [];
    for await (const entry of store.readStream(work.sessionStream('acme', 's'))) stored.push(entry);
    expect(JSON.stringify(stored)).not.toContain(secret);
    // The person's long task is cut for the judge: its budget is for the evidence and the diff.
    expect(sent(judgeModel.calls[0]!).length).toBeLessThan(40_000);
  });

  it('fails closed when the workspace’s changes cannot be read: the model’s word alone is never audited', async () => {
    // Known at the start: refused before anything is written, not after the work.
    rmSync(join(workspace, '.git'), { recursive: true, force: true });
    const refused = await agent({ prompt: 'Note the login fix', goal }).catch((error: unknown) => error);
    expect(isBatonError(refused, 'precondition_failed')).toBe(true);
    expect((refused as Error).message).toBe(
      "goal mode reads the workspace's changes, and they cannot be read here: the workspace is not a Git work tree",
    );
    await expect(store.getStream(work.sessionStream('acme', 's'))).rejects.toMatchObject({
      code: 'not_found',
    });

    // Gone during the run (the repository moved away): the audit does not ask the judge.
    execFileSync('git', ['-C', workspace, 'init', '-q']);
    answers.push(() => {
      rmSync(join(workspace, '.git'), { recursive: true, force: true });
      return 'Done.';
    });
    const { result } = await agent({ prompt: 'Note the login fix', goal });

    expect(result.status).toBe('failed');
    expect(result.reason).toBe(
      "the goal audit could not decide (unavailable): the goal audit reads the workspace's changes, and they could not be read: the workspace is not a Git work tree",
    );
    expect(judgeModel.calls).toHaveLength(0);
  });

  it('lets no one end a goal session completed before a passing audit, over any surface', async () => {
    answers.push('Done.');
    verdicts.push(verdict('failed', 'Not met.'));
    await agent(
      { prompt: 'Note the login fix', goal, start: { work_mode: 'direct', workspace } },
      deps,
    ).catch(() => undefined);
    // A session started with a goal, ended by another caller (HTTP and MCP end_session call this).
    await work.startSession(deps, 'acme', { session_id: 'other', workspace }, { goal });
    const refused = await work
      .endSession(deps, 'acme', { session_id: 'other', status: 'completed' })
      .catch((error: unknown) => error);
    expect(isBatonError(refused, 'conflict')).toBe(true);
    expect((refused as { data: { rule: string } }).data.rule).toBe('goal_unaudited');
    const aborted = await work.endSession(deps, 'acme', { session_id: 'other', status: 'aborted' });
    expect(aborted.terminal?.status).toBe('aborted');
    // A passing audit the workspace has since moved past is no pass.
    await work.startSession(deps, 'acme', { session_id: 'stale', workspace }, { goal });
    const passedNow = async (session_id: string) => {
      await store.append(work.sessionStream('acme', session_id), [
        {
          type: 'receipt',
          content: {
            schema: 'baton.receipt/v1',
            receipt_id: `goal-${session_id}`,
            purpose: 'goal_audit',
            details: {
              verdict: 'passed',
              reason: 'met',
              goal,
              checkpoint: await usableWorkspaceCheckpoint(deps, workspace),
            },
          },
          metadata: { kind: 'receipt' },
        },
      ]);
    };
    await passedNow('stale');
    writeFileSync(join(workspace, 'CHANGELOG.md'), '# Changelog\n- changed after the audit\n');
    const stale = await work
      .endSession(deps, 'acme', { session_id: 'stale', status: 'completed' })
      .catch((error: unknown) => error);
    expect((stale as { data?: { rule: string } }).data?.rule).toBe('goal_unaudited');
    await work.startSession(deps, 'acme', { session_id: 'fresh', workspace }, { goal });
    await passedNow('fresh');
    expect(
      (await work.endSession(deps, 'acme', { session_id: 'fresh', status: 'completed' })).terminal?.status,
    ).toBe('completed');
    // Line ends from another system are words; a goal of control characters is no goal.
    await work.startSession(
      deps,
      'acme',
      { session_id: 'crlf', workspace },
      { goal: 'fix it\r\nand test it' },
    );
    const garbled = await work
      .startSession(deps, 'acme', { session_id: 'garbled', workspace }, { goal: 'ship\u001b[2J\u0007' })
      .catch((error: unknown) => error);
    expect(isBatonError(garbled, 'invalid_input')).toBe(true);
  });

  it('ends aborted, never completed or failed, when cancelled while the judge audits', async () => {
    answers.push('Done.');
    verdicts.push({ reply: verdict('passed', 'too late') as string, delay_ms: 3000 });
    const controller = new AbortController();
    const running = agent({ prompt: 'Note the login fix', goal }, deps, controller.signal);
    // Cancelled once the judge has the request.
    for (let waited = 0; judgeModel.calls.length === 0 && waited < 5000; waited += 20) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    controller.abort();
    const { result } = await running;

    expect(result.status).toBe('aborted');
    expect(result.work.terminal?.status).toBe('aborted');
    expect((await audits()).every((audit) => audit.verdict !== 'passed')).toBe(true);
  });

  it('a person’s answer starts the count again; the model can never audit its own goal', () => {
    const audit = (verdict: string) => ({
      type: 'receipt',
      content: { purpose: 'goal_audit', details: { verdict } },
    });
    const said = (author: string) => ({ type: 'user_message', content: { author } });
    expect(failedGoalAudits([audit('failed'), said('baton'), audit('unknown')])).toBe(2);
    expect(failedGoalAudits([audit('failed'), said('person'), audit('unknown')])).toBe(1);
    expect(failedGoalAudits([audit('failed'), audit('passed'), audit('failed')])).toBe(1);
    // An older ledger's message has no author: a person's.
    expect(failedGoalAudits([audit('failed'), { type: 'user_message', content: {} }])).toBe(0);
  });

  it('refuses, writing nothing, a goal without a judge, or a new goal for an existing session', async () => {
    const without: AppDeps = { store, clock: systemClock };
    const refused = await agent({ prompt: 'Note the login fix', goal }, without).catch(
      (error: unknown) => error,
    );
    expect(isBatonError(refused, 'precondition_failed')).toBe(true);
    expect((refused as Error).message).toContain('goal mode needs a judge');
    await expect(store.getStream(work.sessionStream('acme', 's'))).rejects.toMatchObject({
      code: 'not_found',
    });

    const blank = await agent({ prompt: 'Note the login fix', goal: '  ' }).catch((error: unknown) => error);
    expect(isBatonError(blank, 'invalid_input')).toBe(true);
    await expect(store.getStream(work.sessionStream('acme', 's'))).rejects.toMatchObject({
      code: 'not_found',
    });

    // A goal session resumed where no judge is configured: refused too, nothing written.
    answers.push('Not yet.');
    verdicts.push(verdict('failed', 'Nothing changed.'));
    const kept = await agent({ session_id: 'g', prompt: 'Note the login fix', goal }).catch(
      (error: unknown) => error,
    );
    expect(kept).not.toBeInstanceOf(Error);
    const goalHead = (await store.getStream(work.sessionStream('acme', 'g'))).head;
    const resumed = await agent({ session_id: 'g', prompt: 'go on' }, without).catch(
      (error: unknown) => error,
    );
    expect(isBatonError(resumed, 'precondition_failed')).toBe(true);
    expect((await store.getStream(work.sessionStream('acme', 'g'))).head).toBe(goalHead);

    answers.length = 0;
    answers.push('Done.');
    await agent({ prompt: 'Note the login fix' });
    const head = (await store.getStream(work.sessionStream('acme', 's'))).head;
    const again = await agent({ goal: 'something else' }).catch((error: unknown) => error);
    expect(isBatonError(again, 'invalid_input')).toBe(true);
    expect((await store.getStream(work.sessionStream('acme', 's'))).head).toBe(head);
  });
});

const contract = {
  objective: 'Note the login fix',
  criteria: [
    {
      criterion_id: 'noted',
      statement: 'CHANGELOG.md mentions login',
      kind: { type: 'file_contains', path: 'CHANGELOG.md', pattern: 'login' },
    },
  ],
  items: [{ item_id: 'entry', title: 'Write the entry', criterion_ids: ['noted'] }],
};

/** The managed turns that write CHANGELOG.md under item `entry` and put it up for verification. */
function managedWork(content: string): ScriptedAnswer[] {
  const op = (id: string, input: Record<string, unknown>) => ({ id, name: 'work', input });
  return [
    JSON.stringify(contract),
    'Finished.',
    {
      tool_calls: [
        op('m1', { operation: 'transition', item_id: 'entry', to: 'running' }),
        { id: 'm2', name: 'write_file', input: { path: 'CHANGELOG.md', content } },
      ],
    },
    {
      tool_calls: [
        op('m3', { operation: 'attach_evidence', item_id: 'entry', tool_use_id: 'm2' }),
        op('m4', { operation: 'transition', item_id: 'entry', to: 'ready_for_verification' }),
      ],
    },
    'The entry is written.',
  ];
}

describe('goal mode with managed work: both gates must pass', () => {
  it('audits only after the work gate allows, and completes when the contract and the goal both pass', async () => {
    answers.push(...managedWork('# Changelog\n- fix the login redirect loop\n'));
    verdicts.push(verdict('passed', 'The entry is there.'));
    const { result } = await agent({
      prompt: 'Note the login fix',
      goal,
      start: { work_mode: 'managed', workspace },
    });

    expect(result.status).toBe('completed');
    expect(result.reason).toBe(
      'the contract completed: every required item and criterion verified; the goal audit passed: judge: The entry is there.',
    );
    // The early stop was blocked by the work gate: the judge was asked once, at the end.
    expect(sent(agentModel.calls[2]!)).toContain('The completion gate blocked');
    expect(judgeModel.calls).toHaveLength(1);
    const asked = sent(judgeModel.calls[0]!);
    expect(asked).toContain('entry (succeeded)');
    expect(asked).toContain('noted: passed');
  });

  it('a completed contract whose goal audit fails ends the session failed: work mode alone cannot claim success', async () => {
    answers.push(...managedWork('# Changelog\n- login: see the README\n'));
    verdicts.push(verdict('failed', 'The entry mentions login but not the fix.'));
    const { result } = await agent({
      prompt: 'Note the login fix',
      goal,
      start: { work_mode: 'managed', workspace },
    });

    expect(result.status).toBe('failed');
    expect(result.reason).toBe(
      'the contract completed, but the goal audit did not pass (failed): judge: The entry mentions login but not the fix.',
    );
    expect(result.work.projection!.contracts[0]!.status).toBe('completed');
    expect(result.work.terminal?.status).toBe('failed');
  });
});

describe('baton agent run --goal', () => {
  it('audits the goal with [judge], says so on stderr, and refuses a goal it cannot audit', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-goal-db-'));
    const agentSection = `[agent]\nprovider = "openai"\nmodel = "agent-1"\nbase_url = "${agentModel.url}/v1"\napi_key_env = "AGENT_KEY"\n`;
    const judgeSection = `[judge]\nprovider = "openai"\nmodel = "judge-1"\nbase_url = "${judgeModel.url}/v1"\napi_key_env = "JUDGE_KEY"\n`;
    const out: string[] = [];
    const err: string[] = [];
    const io = {
      out: (text: string) => out.push(text),
      err: (text: string) => err.push(text),
      env: { ...env, BATON_DATABASE_URL: join(dir, 'baton.db') },
      cwd: workspace,
    };
    try {
      expect(await run(['project', 'create', 'default'], io)).toBe(0);
      writeFileSync(join(dir, 'baton.toml'), agentSection);
      const configured = ['--config', join(dir, 'baton.toml')];
      err.length = 0;
      expect(
        await run(['agent', 'run', 'note the fix', '--goal', goal, '--session', 'g-1', ...configured], io),
      ).toBe(1);
      expect(err.join('')).toContain('goal mode needs a judge to audit the goal: configure [judge]');
      expect(agentModel.calls).toHaveLength(0);

      writeFileSync(join(dir, 'baton.toml'), agentSection + judgeSection);
      answers.push(write('w1', '# Changelog\n- fix the login redirect loop\n'), 'Added it.');
      verdicts.push(verdict('passed', 'The entry is there.'));
      out.length = 0;
      err.length = 0;
      expect(
        await run(['agent', 'run', 'note the fix', '--goal', goal, '--session', 'g-1', ...configured], io),
      ).toBe(0);
      expect(err.join('')).toContain(
        '  auditing the goal…\n  goal audit: passed: judge: The entry is there.\n',
      );
      expect(out.join('')).toContain(`  goal: ${goal} (1 audit in this run, the last passed)`);
      expect(judgeModel.calls[0]!.headers.authorization).toBe('Bearer sk-judge');

      out.length = 0;
      expect(await run(['session', 'list'], io)).toBe(0);
      expect(out.join('')).toContain(`Session g-1 · mode direct`);
      expect(out.join('')).toContain(`  goal: ${goal}\n`);

      out.length = 0;
      expect(await run(['session', 'transcript', 'g-1'], io)).toBe(0);
      expect(out.join('')).toContain(`Goal: ${goal}`);
      expect(out.join('')).toMatch(/#\d+ +goal audit: passed\n {6}judge: The entry is there\./);

      err.length = 0;
      expect(await run(['agent', 'run', '--session', 'g-1', '--goal', 'other', ...configured], io)).toBe(2);
      expect(err.join('')).toContain('drop --goal');
      err.length = 0;
      expect(await run(['agent', 'run', 'x', '--goal', ' ', ...configured], io)).toBe(2);
      expect(err.join('')).toContain('--goal says what must be true at the end');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
