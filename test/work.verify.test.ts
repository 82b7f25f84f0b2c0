/**
 * Verification and the completion gate against a real store, a real workspace and the real
 * bubblewrap sandbox: the spec's "Required tests" this part touches, by name.
 */
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { workspaceCheckpoint } from '../src/agent/checkpoint.ts';
import { exportStream } from '../src/app/ledger.ts';
import { verifyWork } from '../src/app/verify.ts';
import * as work from '../src/app/work.ts';
import { systemClock } from '../src/core/clock.ts';
import { defaultWorkConfig, readWorkConfig, type WorkConfig } from '../src/core/work/config.ts';
import type { Actor } from '../src/core/work/model.ts';
import { workGate } from '../src/core/work/gate.ts';
import { expectBatonError } from '../src/store/conformance/store.conformance.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';

const model: Actor = { type: 'model', id: 'agent' };
const live = { live_children: [], checkpoint: null };
let workspace: string;
let store: SqliteStore;
let deps: { store: SqliteStore; clock: typeof systemClock; work?: WorkConfig };

beforeEach(async () => {
  workspace = mkdtempSync(join(tmpdir(), 'baton-verify-'));
  execFileSync('git', ['init', '-q', workspace]);
  writeFileSync(join(workspace, 'README.md'), '# app\n');
  store = new SqliteStore({ path: ':memory:' });
  await store.createProject('acme');
  deps = { store, clock: systemClock };
  await work.startSession(deps, 'acme', {
    session_id: 's',
    workspace,
    work_mode: 'managed',
    capabilities: { tools: ['run_tests'] },
  });
});

afterEach(async () => {
  await store.close();
  rmSync(workspace, { recursive: true, force: true });
});

type Criterion = {
  criterion_id: string;
  statement?: string;
  kind: Record<string, unknown>;
  required?: boolean;
};

async function contractWith(
  criteria: Criterion[],
  items = [{ item_id: 'do', title: 'Do it', criterion_ids: criteria.map((c) => c.criterion_id) }],
) {
  return work.createContract(
    deps,
    'acme',
    {
      session_id: 's',
      contract_id: 'work-1',
      objective: 'do the work',
      criteria: criteria.map((c) => ({ statement: c.criterion_id, ...c })),
      items,
    },
    model,
  );
}

const contains = (path: string): Criterion => ({
  criterion_id: `contains-${path}`,
  kind: { type: 'file_contains', path, pattern: '# app' },
});
const exists = (path: string): Criterion => ({
  criterion_id: `exists-${path}`,
  kind: { type: 'file_exists', path },
});

async function finishItem(item_id = 'do') {
  await work.transitionItem(deps, 'acme', { session_id: 's', revision: 1, item_id, to: 'running' }, model);
  return work.transitionItem(
    deps,
    'acme',
    { session_id: 's', revision: 1, item_id, to: 'ready_for_verification' },
    model,
  );
}

/** Verify a fresh contract of these criteria; each criterion's verdict and reason by id. */
async function verdictsOf(criteria: Criterion[]): Promise<Record<string, [string, string]>> {
  await contractWith(criteria);
  await finishItem();
  const report = await verifyWork(deps, 'acme', { session_id: 's' });
  return Object.fromEntries(
    report.verdicts.map((verdict) => [verdict.criterion_id, [verdict.verdict, verdict.reason]]),
  );
}

async function ledgerText(): Promise<string> {
  let text = '';
  await exportStream({ store }, work.sessionStream('acme', 's'), (chunk) => {
    text += chunk;
  });
  return text;
}

describe('verification', () => {
  it('model cannot mark completion directly; only the verifier completes, after every required criterion passed', async () => {
    await contractWith([{ criterion_id: 'notes', kind: { type: 'file_exists', path: 'notes.md' } }]);
    await finishItem();
    await expectBatonError(
      work.transitionItem(
        deps,
        'acme',
        { session_id: 's', revision: 1, item_id: 'do', to: 'succeeded' },
        model,
      ),
      'conflict',
      { rule: 'invalid_transition' },
    );
    const first = await verifyWork(deps, 'acme', { session_id: 's' });
    expect(first.verdicts).toEqual([
      expect.objectContaining({
        criterion_id: 'notes',
        verdict: 'failed',
        reason: 'notes.md does not exist',
      }),
    ]);
    expect(first.contract_status).toBe('active');
    expect(first.snapshot.contract?.items[0]).toMatchObject({ status: 'ready' });
    writeFileSync(join(workspace, 'notes.md'), 'mapped\n');
    await finishItem();
    const second = await verifyWork(deps, 'acme', { session_id: 's' });
    expect(second.verdicts[0]).toMatchObject({ verdict: 'passed' });
    expect(second.contract_status).toBe('completed');
  });

  it('fails file_contains on a pipe, directly or through a link, at once instead of waiting for a writer', async () => {
    execFileSync('mkfifo', [join(workspace, 'pipe')]);
    symlinkSync('pipe', join(workspace, 'pipe-link'));
    expect(await verdictsOf([contains('pipe'), contains('pipe-link'), exists('pipe-link')])).toEqual({
      'contains-pipe': ['failed', 'pipe is not a file'],
      'contains-pipe-link': ['failed', 'pipe-link is not a file'],
      'exists-pipe-link': ['failed', 'pipe-link is not a file'],
    });
  }, 10_000);

  it('keeps the size cap for a file reached through a link: a file over it is not read', async () => {
    execFileSync('truncate', ['-s', '9M', join(workspace, 'big.bin')]);
    symlinkSync('big.bin', join(workspace, 'big-link'));
    expect(await verdictsOf([contains('big-link')])).toEqual({
      'contains-big-link': ['unknown', `big-link is over ${8 * 1024 * 1024} bytes; not read`],
    });
  });

  it('fails file_contains on a dangling link or a link to a folder as on a missing file or a folder', async () => {
    mkdirSync(join(workspace, 'sub'));
    symlinkSync('nowhere.md', join(workspace, 'dangling'));
    symlinkSync('sub', join(workspace, 'dir-link'));
    expect(
      await verdictsOf([contains('missing.md'), contains('dangling'), contains('sub'), contains('dir-link')]),
    ).toEqual({
      'contains-missing.md': ['failed', 'missing.md does not exist'],
      'contains-dangling': ['failed', 'dangling does not exist'],
      'contains-sub': ['failed', 'sub is not a file'],
      'contains-dir-link': ['failed', 'dir-link is not a file'],
    });
  });

  it('fails file_exists on a dangling link or a link to a folder, and passes a link to a file', async () => {
    mkdirSync(join(workspace, 'sub'));
    symlinkSync('nowhere.md', join(workspace, 'dangling'));
    symlinkSync('sub', join(workspace, 'dir-link'));
    symlinkSync('README.md', join(workspace, 'readme-link'));
    expect(
      await verdictsOf([
        exists('missing.md'),
        exists('dangling'),
        exists('sub'),
        exists('dir-link'),
        exists('readme-link'),
      ]),
    ).toEqual({
      'exists-missing.md': ['failed', 'missing.md does not exist'],
      'exists-dangling': ['failed', 'dangling does not exist'],
      'exists-sub': ['failed', 'sub is not a file'],
      'exists-dir-link': ['failed', 'dir-link is not a file'],
      'exists-readme-link': ['passed', 'readme-link exists'],
    });
  });

  it('refuses a link made after the contract that leads out of the workspace, and never reads through it', async () => {
    const outside = mkdtempSync(join(tmpdir(), 'baton-outside-'));
    try {
      writeFileSync(join(outside, 'secret.txt'), '# app\n');
      await contractWith([
        { criterion_id: 'contains', kind: { type: 'file_contains', path: 'escape', pattern: '# app' } },
        { criterion_id: 'exists', kind: { type: 'file_exists', path: 'escape' } },
        { criterion_id: 'below', kind: { type: 'file_contains', path: 'out/secret.txt', pattern: '# app' } },
      ]);
      symlinkSync(join(outside, 'secret.txt'), join(workspace, 'escape'));
      symlinkSync(outside, join(workspace, 'out'));
      await finishItem();
      const report = await verifyWork(deps, 'acme', { session_id: 's' });
      expect(
        report.verdicts.map((verdict) => [verdict.criterion_id, verdict.verdict, verdict.reason]),
      ).toEqual([
        ['contains', 'failed', 'escape is outside the workspace'],
        ['exists', 'failed', 'escape is outside the workspace'],
        ['below', 'failed', 'out/secret.txt is outside the workspace'],
      ]);
      expect(report.contract_status).toBe('active');
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it('unfinished required item blocks completion: the gate blocks and the verifier does not complete', async () => {
    await contractWith(
      [
        { criterion_id: 'readme', kind: { type: 'file_contains', path: 'README.md', pattern: '# app' } },
        { criterion_id: 'notes', kind: { type: 'file_exists', path: 'notes.md' } },
      ],
      [
        { item_id: 'a', title: 'A', criterion_ids: ['readme'] },
        { item_id: 'b', title: 'B', criterion_ids: ['notes'] },
      ],
    );
    await finishItem('a');
    await work.transitionItem(
      deps,
      'acme',
      { session_id: 's', revision: 1, item_id: 'b', to: 'running' },
      model,
    );
    const report = await verifyWork(deps, 'acme', { session_id: 's' });
    expect(report.contract_status).toBe('active');
    expect(report.snapshot.contract?.items.map((item) => [item.item_id, item.status])).toEqual([
      ['a', 'succeeded'],
      ['b', 'running'],
    ]);
    const gate = workGate(report.snapshot.projection, live);
    expect(gate.decision).toBe('block');
    expect(gate.decision === 'block' && gate.reasons.map((reason) => `${reason.code}:${reason.id}`)).toEqual([
      'item_running:b',
      'criterion_unverified:notes',
    ]);
  });

  it('records a failing verdict when an item waiting on a regressed one goes back: to proposed, never refused', async () => {
    await contractWith(
      [exists('README.md')],
      [
        { item_id: 'a', title: 'A', criterion_ids: ['exists-README.md'] },
        { item_id: 'b', title: 'B', criterion_ids: ['exists-README.md'], dependencies: ['a'] } as never,
      ],
    );
    await finishItem('a');
    await verifyWork(deps, 'acme', { session_id: 's' });
    await finishItem('b');
    rmSync(join(workspace, 'README.md'));
    const report = await verifyWork(deps, 'acme', { session_id: 's' });
    expect(report.verdicts[0]).toMatchObject({ criterion_id: 'exists-README.md', verdict: 'failed' });
    const status = Object.fromEntries(
      report.snapshot.contract!.items.map((item) => [item.item_id, item.status]),
    );
    // a regressed (it waits for verification again), so b, which depends on it, waits for it.
    expect(status).toEqual({ a: 'ready_for_verification', b: 'proposed' });
  });

  it('tool failure becomes evidence: a failed tool result is cited by the failing verdict', async () => {
    await contractWith([{ criterion_id: 'tests', kind: { type: 'tool_succeeded', tool: 'run_tests' } }]);
    await work.commitWork(deps, work.sessionStream('acme', 's'), () => ({
      entries: [
        {
          type: 'tool_result',
          content: {
            schema: 'baton.tool-result/v1',
            tool_use_id: 'call-7',
            tool: 'run_tests',
            is_error: true,
            output: '2 failing',
          },
        },
      ],
      events: [],
    }));
    await finishItem();
    const report = await verifyWork(deps, 'acme', { session_id: 's' });
    expect(report.verdicts[0]).toMatchObject({
      verdict: 'failed',
      reason: 'the latest result of tool run_tests is an error',
      evidence: [{ type: 'tool_result', session_id: 's', tool_use_id: 'call-7' }],
    });
    const criterion = report.snapshot.contract?.criteria[0];
    expect(criterion?.result?.evidence).toEqual([
      { type: 'tool_result', session_id: 's', tool_use_id: 'call-7' },
    ]);
  });

  it('runs shell criteria only in the sandbox: a write to the workspace fails and leaves it unchanged', async () => {
    const before = await workspaceCheckpoint(workspace);
    await contractWith([{ criterion_id: 'writes', kind: { type: 'shell', command: 'echo x > hacked.txt' } }]);
    await finishItem();
    const report = await verifyWork(deps, 'acme', { session_id: 's' });
    expect(report.verdicts[0]).toMatchObject({ verdict: 'failed' });
    expect(existsSync(join(workspace, 'hacked.txt'))).toBe(false);
    expect((await workspaceCheckpoint(workspace)).checkpoint).toBe(before.checkpoint);
    expect(execFileSync('git', ['-C', workspace, 'status', '--porcelain'], { encoding: 'utf8' })).toBe(
      '?? README.md\n',
    );
  });

  it('records the sandbox as unavailable, never runs the command unsandboxed, and never completes', async () => {
    const marker = join(workspace, 'ran.txt');
    await contractWith([{ criterion_id: 'cmd', kind: { type: 'shell', command: `touch ${marker}` } }]);
    await finishItem();
    const report = await verifyWork(
      deps,
      'acme',
      { session_id: 's' },
      { sandbox: { bwrap: '/nonexistent/bwrap' } },
    );
    expect(report.verdicts[0]?.verdict).toBe('unavailable');
    expect(report.verdicts[0]?.reason).toMatch(/^sandbox_unavailable/);
    expect(existsSync(marker)).toBe(false);
    expect(report.contract_status).toBe('active');
    expect(report.snapshot.contract?.items[0]?.status).toBe('ready_for_verification');
  });

  it("names the sandbox's resource limit a shell criterion hit in its reason", async () => {
    const mib = 1024 * 1024;
    const shell = (criterion_id: string, command: string): Criterion => ({
      criterion_id,
      kind: { type: 'shell', command },
    });
    await contractWith([
      shell('bomb', 'i=0; while [ $i -lt 2000 ]; do sleep 30 & i=$((i+1)); done; wait'),
      shell('fill', `for i in 1 2 3; do head -c ${2 * mib} /dev/zero > /tmp/f$i || exit 1; done`),
      shell('big', `head -c ${4 * mib} /dev/zero > /tmp/big`),
    ]);
    await finishItem();
    const limits = { processes: 32, tmpfs_bytes: 4 * mib, file_bytes: 3 * mib };
    const report = await verifyWork(deps, 'acme', { session_id: 's' }, { timeout_ms: 10_000, limits });
    expect(
      report.verdicts.map(({ criterion_id, verdict, reason }) => [criterion_id, verdict, reason]),
    ).toEqual([
      [
        'bomb',
        'failed',
        // Root is held to it by Baton's count (killed), anyone else by the kernel (fork fails).
        expect.stringMatching(
          /^exit code (137: killed on reaching|2: its stderr reports) the process limit \(32\)$/,
        ),
      ],
      ['fill', 'failed', 'exit code 1: its stderr reports a full tmpfs (4 MiB each)'],
      ['big', 'failed', 'exit code 153: killed by the file size limit (3 MiB)'],
    ]);
  });

  it('leaves semantic criteria unverified without a judge; they never pass by default', async () => {
    await contractWith([
      { criterion_id: 'clear', kind: { type: 'semantic', statement: 'the notes read clearly' } },
    ]);
    await finishItem();
    const report = await verifyWork(deps, 'acme', { session_id: 's' });
    expect(report.verdicts[0]).toMatchObject({
      verdict: 'unknown',
      reason: 'unverified: no judge configured',
    });
    expect(report.contract_status).toBe('active');
    const judged = await verifyWork(
      deps,
      'acme',
      { session_id: 's' },
      { judge: async () => ({ verdict: 'passed', reason: 'reads well' }) },
    );
    expect(judged.contract_status).toBe('completed');
  });

  it('a newer workspace mutation invalidates earlier verdicts until verification runs again', async () => {
    await contractWith(
      [{ criterion_id: 'readme', kind: { type: 'file_contains', path: 'README.md', pattern: '# app' } }],
      [
        { item_id: 'a', title: 'A', criterion_ids: ['readme'] },
        { item_id: 'b', title: 'B', criterion_ids: ['readme'] },
      ],
    );
    await finishItem('a');
    const first = await verifyWork(deps, 'acme', { session_id: 's' });
    expect(first.contract_status).toBe('active');
    writeFileSync(join(workspace, 'README.md'), '# app\nchanged\n');
    const now = (await workspaceCheckpoint(workspace)).checkpoint;
    const stale = workGate(first.snapshot.projection, { live_children: [], checkpoint: now });
    expect(
      stale.decision === 'block' &&
        stale.reasons.some((reason) => reason.code === 'evidence_stale' && reason.id === 'readme'),
    ).toBe(true);
    expect(
      workGate(first.snapshot.projection, { live_children: [], checkpoint: first.checkpoint }).decision,
    ).toBe('block');
    await finishItem('b');
    const second = await verifyWork(deps, 'acme', { session_id: 's' });
    expect(second.checkpoint).toBe(now);
    expect(second.contract_status).toBe('completed');
    expect(workGate(second.snapshot.projection, { live_children: [], checkpoint: now }).decision).toBe(
      'allow',
    );
  });

  it('blocks while a child session is live', async () => {
    await contractWith([{ criterion_id: 'readme', kind: { type: 'file_exists', path: 'README.md' } }]);
    const assigned = await work.reassignItem(
      deps,
      'acme',
      { session_id: 's', item_id: 'do', owner: { type: 'worker' }, child_session_id: 'child-1' },
      { type: 'human', id: 'ana' },
    );
    const gate = workGate(assigned.projection, { live_children: ['child-1'], checkpoint: null });
    expect(gate.decision === 'block' && gate.reasons[0]).toMatchObject({ code: 'child_live', id: 'do' });
  });
});

describe('one verification at a time, within a budget', () => {
  const sleeps = (seconds: number, ...ids: string[]): Criterion[] =>
    ids.map((criterion_id) => ({ criterion_id, kind: { type: 'shell', command: `sleep ${seconds}` } }));

  it('refuses a second verification of the session while one runs, at once and writing nothing; the next one runs', async () => {
    await contractWith(sleeps(1, 'slow'));
    await finishItem();
    const first = verifyWork(deps, 'acme', { session_id: 's' });
    const before = (await work.readWork(deps, 'acme', { session_id: 's' })).position;
    const started = Date.now();
    const refused = await expectBatonError(verifyWork(deps, 'acme', { session_id: 's' }), 'conflict', {
      rule: 'verification_running',
      session_id: 's',
    });
    expect(refused.message).toMatch(/already being verified/);
    expect(Date.now() - started).toBeLessThan(500);
    expect((await work.readWork(deps, 'acme', { session_id: 's' })).position).toBe(before);
    // Another session of the same project is not held up by it (it has nothing to verify).
    await work.startSession(deps, 'acme', { session_id: 'other', workspace, work_mode: 'managed' });
    await expectBatonError(verifyWork(deps, 'acme', { session_id: 'other' }), 'not_found');
    expect((await first).contract_status).toBe('completed');
    // Once the first is done, the session may be verified again (here: nothing left to verify).
    await expectBatonError(verifyWork(deps, 'acme', { session_id: 's' }), 'not_found');
  });

  it('frees the session when a verification is cancelled or fails', async () => {
    await contractWith(sleeps(30, 'slow'));
    await finishItem();
    const controller = new AbortController();
    const cancelled = verifyWork(deps, 'acme', { session_id: 's' }, { signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 200));
    controller.abort();
    await expectBatonError(cancelled, 'unavailable', { rule: 'cancelled' });
    await expectBatonError(verifyWork(deps, 'acme', { session_id: 's' }, { timeout_ms: 0 }), 'invalid_input');
    // The timeout spans the sandbox's start too: one shorter than that start is `unavailable`
    // (the sandbox did not start), which a loaded machine makes of 100 ms. Two seconds start
    // it and still stop `sleep 30` long before it ends.
    const report = await verifyWork(deps, 'acme', { session_id: 's' }, { timeout_ms: 2_000 });
    expect(report.verdicts.map(({ verdict }) => verdict)).toEqual(['timed_out']);
  });

  it('stops at its total budget: the criterion running is timed_out, those not started unavailable, each saying why', async () => {
    expect(() => readWorkConfig({ work: { verification_budget_ms: 999 } })).toThrow(
      /work\.verification_budget_ms/,
    );
    // Room for `sleep 1` and two sandbox starts on a loaded machine: what is left of the budget
    // must still start the second one, or it is `unavailable` (the sandbox did not start), not
    // timed_out. Without the budget the run would take 11 s (1 + 5 + 5), far above the bound.
    const budget = 4_000;
    deps = { ...deps, work: readWorkConfig({ work: { verification_budget_ms: budget } }).config };
    expect(defaultWorkConfig.verification_budget_ms).toBe(600_000);
    await contractWith([...sleeps(1, 'first'), ...sleeps(5, 'second', 'third'), exists('README.md')]);
    await finishItem();
    const started = Date.now();
    const report = await verifyWork(deps, 'acme', { session_id: 's' });
    expect(Date.now() - started).toBeLessThan(budget + 2_500);
    const spent = `the verification's budget of ${budget} ms ran out`;
    expect(
      report.verdicts.map(({ criterion_id, verdict, reason }) => [criterion_id, verdict, reason]),
    ).toEqual([
      ['first', 'passed', 'exit code 0'],
      ['second', 'timed_out', expect.stringMatching(new RegExp(`^killed after \\d+ ms: ${spent}$`))],
      ['third', 'unavailable', `not run: ${spent}`],
      ['exists-README.md', 'unavailable', `not run: ${spent}`],
    ]);
    expect(report.contract_status).toBe('active');
  });
});

describe('operation identity', () => {
  it('duplicate operation id is treated idempotently: the same change again appends nothing, another is refused', async () => {
    await contractWith([{ criterion_id: 'readme', kind: { type: 'file_exists', path: 'README.md' } }]);
    const input = {
      session_id: 's',
      revision: 1,
      item_id: 'do',
      to: 'running' as const,
      operation_id: 'op-1',
    };
    const first = await work.transitionItem(deps, 'acme', input, model);
    const again = await work.transitionItem(deps, 'acme', input, model);
    expect(again.position).toBe(first.position);
    // The id names that transition: under another change it is refused, and nothing is written.
    await expectBatonError(
      work.attachEvidence(
        deps,
        'acme',
        {
          session_id: 's',
          revision: 1,
          item_id: 'do',
          evidence: { type: 'child_session', session_id: 'c' },
          operation_id: 'op-1',
        },
        model,
      ),
      'conflict',
      { rule: 'operation_reused', recorded: { item_id: 'do', type: 'item_status_changed', to: 'running' } },
    );
    const text = await ledgerText();
    expect(text.split('"operation_id":"op-1"').length - 1).toBe(1);
  });
});

describe('secrets', () => {
  it('no secret in projection, evidence or responses: env values, key formats and file contents are scrubbed', async () => {
    const canary = `zz-canary-${Date.now()}-q7`;
    process.env.BATON_CANARY_VERIFY = canary;
    try {
      writeFileSync(join(workspace, 'leak.txt'), `${canary}\nghp_${'a'.repeat(36)}\nAKIAABCDEFGHIJKLMNOP\n`);
      await contractWith([
        {
          criterion_id: 'leak',
          kind: { type: 'shell', command: 'cat leak.txt; echo "$BATON_CANARY_VERIFY"; env; false' },
        },
      ]);
      await finishItem();
      const report = await verifyWork(deps, 'acme', { session_id: 's' });
      expect(report.verdicts[0]?.verdict).toBe('failed');
      const everything = [
        JSON.stringify(report),
        JSON.stringify(await work.readWork(deps, 'acme', { session_id: 's' })),
        await ledgerText(),
      ].join('\n');
      expect(everything).toContain('[redacted]');
      for (const secret of [canary, `ghp_${'a'.repeat(36)}`, 'AKIAABCDEFGHIJKLMNOP'])
        expect(everything).not.toContain(secret);
      expect(readFileSync(join(workspace, 'leak.txt'), 'utf8')).toContain(canary);
    } finally {
      delete process.env.BATON_CANARY_VERIFY;
    }
  });
});

describe('the stop gate', () => {
  it('blocks while work is unfinished, then ends the contract unverified when continuation is exhausted', async () => {
    const { stopGate } = await import('../src/app/gate.ts');
    await contractWith([{ criterion_id: 'notes', kind: { type: 'file_exists', path: 'notes.md' } }]);
    const first = await stopGate(deps, 'acme', { session_id: 's', max_blocks: 2 });
    expect(first).toMatchObject({ decision: 'block', blocks: 1, exhausted: null });
    expect((await stopGate(deps, 'acme', { session_id: 's', max_blocks: 2 })).blocks).toBe(2);
    const third = await stopGate(deps, 'acme', { session_id: 's', max_blocks: 2 });
    expect(third).toMatchObject({ decision: 'allow', status: 'unverified', blocks: 3 });
    expect(third.exhausted?.reason).toMatch(
      /^continuation exhausted with 2 open reasons: required item "do" is ready/,
    );
    const after = await work.readWork(deps, 'acme', { session_id: 's' });
    expect(after.projection?.contracts[0]).toMatchObject({ status: 'unverified' });
    expect(after.control_block).toBeNull();
  });

  it('ends a contract still in draft when continuation is exhausted, and the next call allows without error', async () => {
    const { stopGate } = await import('../src/app/gate.ts');
    const { workConfigSchema } = await import('../src/core/work/config.ts');
    deps = { ...deps, work: workConfigSchema.parse({ confirmation: 'always' }) };
    const created = await contractWith([
      { criterion_id: 'notes', kind: { type: 'file_exists', path: 'notes.md' } },
    ]);
    expect(created.contract?.status).toBe('draft');
    expect((await stopGate(deps, 'acme', { session_id: 's', max_blocks: 1 })).decision).toBe('block');
    const exhausted = await stopGate(deps, 'acme', { session_id: 's', max_blocks: 1 });
    expect(exhausted).toMatchObject({ decision: 'allow', status: 'unverified', blocks: 2 });
    expect(exhausted.exhausted?.reason).toMatch(/^continuation exhausted/);
    expect(await stopGate(deps, 'acme', { session_id: 's', max_blocks: 1 })).toMatchObject({
      decision: 'allow',
      status: 'unverified',
      exhausted: null,
    });
  });

  it('blocks on a required item a person skipped: the contract cannot complete, so stopping ends it unverified', async () => {
    const { stopGate } = await import('../src/app/gate.ts');
    await contractWith(
      [{ criterion_id: 'notes', kind: { type: 'file_exists', path: 'notes.md' } }],
      [
        { item_id: 'do', title: 'Do it', criterion_ids: ['notes'] },
        { item_id: 'extra', title: 'Also this', criterion_ids: ['notes'] },
      ],
    );
    await work.transitionItem(
      deps,
      'acme',
      { session_id: 's', revision: 1, item_id: 'extra', to: 'skipped', reason: 'not needed now' },
      { type: 'human', id: 'pat' },
    );
    writeFileSync(join(workspace, 'notes.md'), 'done\n');
    await finishItem('do');
    const verified = await verifyWork(deps, 'acme', { session_id: 's' });
    expect(verified.verdicts[0]).toMatchObject({ verdict: 'passed' });
    expect(verified.contract_status).toBe('active');
    const gate = await stopGate(deps, 'acme', { session_id: 's', max_blocks: 1 });
    expect(gate).toMatchObject({
      decision: 'block',
      reasons: [expect.objectContaining({ code: 'item_skipped', id: 'extra' })],
    });
    const exhausted = await stopGate(deps, 'acme', { session_id: 's', max_blocks: 1 });
    expect(exhausted).toMatchObject({ decision: 'allow', status: 'unverified' });
    expect(exhausted.exhausted?.reason).toContain('required item "extra" is skipped');
  });

  it('refuses a bound of blocks or a timeout out of range, and writes nothing', async () => {
    const { stopGate } = await import('../src/app/gate.ts');
    await contractWith([{ criterion_id: 'notes', kind: { type: 'file_exists', path: 'notes.md' } }]);
    const before = await ledgerText();
    for (const max_blocks of [0, -1, 1.5, 1001]) {
      await expectBatonError(stopGate(deps, 'acme', { session_id: 's', max_blocks }), 'invalid_input');
    }
    for (const timeout_ms of [0, 2 ** 31, 0.5]) {
      await expectBatonError(verifyWork(deps, 'acme', { session_id: 's' }, { timeout_ms }), 'invalid_input');
    }
    expect(await ledgerText()).toBe(before);
    expect((await work.readWork(deps, 'acme', { session_id: 's' })).projection?.contracts[0]?.status).toBe(
      'active',
    );
  });

  it('allows once verification passed, and resets the count of blocks', async () => {
    const { stopGate } = await import('../src/app/gate.ts');
    await contractWith([{ criterion_id: 'readme', kind: { type: 'file_exists', path: 'README.md' } }]);
    expect((await stopGate(deps, 'acme', { session_id: 's' })).decision).toBe('block');
    await finishItem();
    await verifyWork(deps, 'acme', { session_id: 's' });
    expect(await stopGate(deps, 'acme', { session_id: 's' })).toMatchObject({
      decision: 'allow',
      status: 'completed',
      blocks: 0,
    });
  });
});
