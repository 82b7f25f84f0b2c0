/**
 * The work gate as a Stop hook, end to end: the real `baton` CLI in a child process, given the
 * hook's JSON on stdin, blocks stopping with Claude Code's and Codex's JSON while an item is
 * unfinished, and allows once `baton work verify` passed.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as work from '../src/app/work.ts';
import { systemClock } from '../src/core/clock.ts';
import { workConfigSchema } from '../src/core/work/config.ts';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts';

const main = join(import.meta.dirname, '..', 'src', 'cli', 'main.ts');
let root: string;
let workspace: string;
let database: string;

function baton(args: string[], input = '') {
  const result = spawnSync(process.execPath, [main, ...args, '--database', database, '--project', 'acme'], {
    cwd: workspace,
    input,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

const hookInput = JSON.stringify({
  session_id: 'claude-abc',
  hook_event_name: 'Stop',
  stop_hook_active: false,
  cwd: '/',
});

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'baton-gate-'));
  workspace = join(root, 'repo');
  execFileSync('git', ['init', '-q', workspace]);
  database = join(root, 'baton.db');
  const store = await openSqliteStore({ path: database });
  try {
    await store.createProject('acme');
    const deps = { store, clock: systemClock };
    await work.startSession(deps, 'acme', { session_id: 'agent-1', workspace, work_mode: 'managed' });
    await work.createContract(
      deps,
      'acme',
      {
        session_id: 'agent-1',
        contract_id: 'work-1',
        objective: 'write the notes',
        criteria: [
          {
            criterion_id: 'notes',
            statement: 'notes say done',
            kind: { type: 'shell', command: 'grep -q done notes.md' },
          },
        ],
        items: [{ item_id: 'write', title: 'Write the notes', criterion_ids: ['notes'] }],
      },
      { type: 'model', id: 'agent' },
    );
  } finally {
    await store.close();
  }
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('baton work gate as a Stop hook', () => {
  it('blocks with the hook JSON while the item is unfinished, allows after verification passed', () => {
    const blocked = baton(['work', 'gate', '--hook', '--session', 'agent-1'], hookInput);
    expect(blocked.status).toBe(0);
    const decision = JSON.parse(blocked.stdout) as { decision: string; reason: string };
    expect(decision.decision).toBe('block');
    expect(decision.reason).toContain('required item "write" is ready');
    expect(decision.reason).toContain('required criterion "notes" has no passing evidence yet');

    const human = baton(['work', 'gate', '--session', 'agent-1']);
    expect(human.status).toBe(1);
    expect(human.stdout).toMatch(/^block \(2 reasons, block 2\):/);

    const notYet = baton(['work', 'verify', '--session', 'agent-1']);
    expect(notYet.status).toBe(1);
    expect(notYet.stderr).toMatch(/contract is verifying|not completed|only a started contract/);
    // The verdicts end their line: the refusal on stderr never runs on after them in a terminal.
    expect(notYet.stdout).toMatch(/\n$/);
  });

  it('allows stopping once the work is verified complete', async () => {
    writeFileSync(join(workspace, 'notes.md'), 'all done\n');
    const store = await openSqliteStore({ path: database });
    try {
      const deps = { store, clock: systemClock };
      const model = { type: 'model', id: 'agent' } as const;
      await work.transitionItem(
        deps,
        'acme',
        { session_id: 'agent-1', revision: 1, item_id: 'write', to: 'running' },
        model,
      );
      await work.transitionItem(
        deps,
        'acme',
        { session_id: 'agent-1', revision: 1, item_id: 'write', to: 'ready_for_verification' },
        model,
      );
    } finally {
      await store.close();
    }
    const verified = baton(['work', 'verify', '--session', 'agent-1']);
    // Progress on stderr, one line as each criterion starts; the verdicts on stdout.
    expect(verified.stderr).toBe('checking 1/1: notes (shell)\n');
    expect(verified.status).toBe(0);
    expect(verified.stdout).toMatch(/: completed\n {2}passed {6}notes \(shell\): exit code 0\n$/);
    const allowed = baton(['work', 'gate', '--hook', '--session', 'agent-1'], hookInput);
    expect(allowed).toMatchObject({ status: 0, stdout: '' });
    expect(baton(['work', 'gate', '--session', 'agent-1'])).toMatchObject({
      status: 0,
      stdout: 'allow (contract completed)\n',
    });
  });

  it('allows a session that holds no managed work, saying so on stderr, and refuses --server', () => {
    expect(baton(['work', 'gate', '--hook', '--session', 'never-started'], hookInput)).toMatchObject({
      status: 0,
      stdout: '',
      stderr: 'warning: no session never-started in project acme: nothing to gate\n',
    });
    const refused = baton(['work', 'gate', '--session', 'agent-1', '--server', 'http://127.0.0.1:1']);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain("runs on this machine's store and workspace");
  });
});

describe('baton work verify interrupted', () => {
  it('on Ctrl-C kills the running criterion, starts no other, records nothing and says so', async () => {
    const marker = `${60 + (process.pid % 1000) / 1000}`;
    const running = () => {
      try {
        return execFileSync('pgrep', ['-f', `^sleep ${marker}$`], { encoding: 'utf8' }).trim() !== '';
      } catch {
        return false;
      }
    };
    const store = await openSqliteStore({ path: database });
    const deps = { store, clock: systemClock };
    let before: number;
    try {
      await work.startSession(deps, 'acme', { session_id: 'agent-slow', workspace, work_mode: 'managed' });
      before = (
        await work.createContract(
          deps,
          'acme',
          {
            session_id: 'agent-slow',
            contract_id: 'slow',
            objective: 'slow checks',
            criteria: ['one', 'two'].map((criterion_id) => ({
              criterion_id,
              statement: 'sleeps',
              kind: { type: 'shell' as const, command: `sleep ${marker}` },
            })),
            items: [{ item_id: 'a', title: 'A', criterion_ids: ['one', 'two'] }],
          },
          { type: 'model', id: 'agent' },
        )
      ).position;
    } finally {
      await store.close();
    }
    const child = spawn(
      process.execPath,
      [main, 'work', 'verify', '--session', 'agent-slow', '--database', database, '--project', 'acme'],
      { cwd: workspace, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' } },
    );
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.once('exit', (_code, signal) => resolve(signal)),
    );
    const started = Date.now() + 10_000;
    while (!running() && Date.now() < started) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(running()).toBe(true);
    // What a terminal's Ctrl-C sends to the foreground process (the sandbox has its own group).
    child.kill('SIGINT');
    // Ended by the signal, as without a handler, so a shell script running it stops too.
    expect(await exited).toBe('SIGINT');
    expect(stderr).toContain('checking 1/2: one (shell)');
    expect(stderr).not.toContain('checking 2/2');
    expect(stderr).toMatch(/cancelled.*nothing was recorded/);
    expect(running()).toBe(false);
    const after = await openSqliteStore({ path: database });
    try {
      const snapshot = await work.readWork({ store: after, clock: systemClock }, 'acme', {
        session_id: 'agent-slow',
      });
      expect(snapshot.position).toBe(before);
    } finally {
      await after.close();
    }
  }, 30_000);
});

describe('baton work gate on a contract still in draft', () => {
  it('blocks saying so, then on exhaustion ends the draft unverified and allows on every later call', async () => {
    const store = await openSqliteStore({ path: database });
    try {
      const deps = { store, clock: systemClock, work: workConfigSchema.parse({ confirmation: 'always' }) };
      await work.startSession(deps, 'acme', { session_id: 'agent-draft', workspace, work_mode: 'managed' });
      const created = await work.createContract(
        deps,
        'acme',
        {
          session_id: 'agent-draft',
          contract_id: 'work-draft',
          objective: 'write the notes',
          criteria: [
            { criterion_id: 'notes', statement: 'notes', kind: { type: 'file_exists', path: 'notes.md' } },
          ],
          items: [{ item_id: 'write', title: 'Write the notes', criterion_ids: ['notes'] }],
        },
        { type: 'model', id: 'agent' },
      );
      expect(created.contract?.status).toBe('draft');
    } finally {
      await store.close();
    }
    const gate = (...args: string[]) =>
      baton(['work', 'gate', '--session', 'agent-draft', '--max-blocks', '1', ...args], hookInput);
    const blocked = gate('--hook');
    expect(blocked.status).toBe(0);
    const reason = (JSON.parse(blocked.stdout) as { reason: string }).reason;
    expect(reason).toContain('the contract is a draft not yet confirmed');
    // Nothing here is the agent's to do: it is not told to finish items it may not start.
    expect(reason).not.toContain('Finish the items');
    expect(reason).toContain('waits for a person');
    expect(gate('--hook')).toEqual({ status: 0, stdout: '', stderr: '' });
    for (let call = 1; call <= 2; call += 1) {
      expect(gate('--hook')).toEqual({ status: 0, stdout: '', stderr: '' });
      expect(gate()).toEqual({ status: 0, stdout: 'allow (contract unverified)\n', stderr: '' });
    }
  });
});

describe('baton work gate as a Stop hook when it cannot decide', () => {
  it('fails closed once: blocks naming the error, then on the next stop reports it with exit 1', async () => {
    const store = await openSqliteStore({ path: database });
    try {
      const deps = { store, clock: systemClock };
      await work.startSession(deps, 'acme', { session_id: 'gone', workspace: join(root, 'gone') });
      await work.createContract(
        deps,
        'acme',
        {
          session_id: 'gone',
          objective: 'o',
          criteria: [{ criterion_id: 'c', statement: 's', kind: { type: 'shell', command: 'true' } }],
          items: [{ item_id: 'i', title: 'I', criterion_ids: ['c'] }],
        },
        { type: 'model', id: 'agent' },
      );
    } finally {
      await store.close();
    }
    const first = baton(['work', 'gate', '--hook', '--session', 'gone'], hookInput);
    expect(first.status, first.stderr).toBe(0);
    const decision = JSON.parse(first.stdout) as { decision: string; reason: string };
    expect(decision.decision).toBe('block');
    expect(decision.reason).toContain("precondition_failed: the session's workspace");
    expect(decision.reason).toContain('waits for a person');
    const again = baton(
      ['work', 'gate', '--hook', '--session', 'gone'],
      JSON.stringify({ ...(JSON.parse(hookInput) as object), stop_hook_active: true }),
    );
    expect(again.status).toBe(1);
    expect(again.stdout).toBe('');
    expect(again.stderr).toContain('precondition_failed');
  });
});
