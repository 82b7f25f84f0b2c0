/**
 * `baton session start` and `baton work …` on the local store and against a server: the human
 * view and the exact --json snapshot of a contract created through the CLI, every change
 * command with its exit codes, `[work]` from baton.toml (unknown keys warn, a bad value exits 2,
 * the limits reach the app), and `baton ledger export <session>`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { attachEvidence, readWork, startSession, transitionItem } from '../src/app/work.ts';
import { listSessions } from '../src/app/work-list.ts';
import { run } from '../src/cli/run.ts';
import { systemClock } from '../src/core/clock.ts';
import { startServer } from '../src/http/server.ts';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { seedTokens } from './helpers/http.ts';
import { backends } from './helpers/stores.ts';
import { contractBody } from './helpers/work-surface.ts';

let dir: string;
let database: string;

interface Result {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

async function baton(...args: string[]): Promise<Result> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await run(args, {
    out: (text) => out.push(text),
    err: (text) => err.push(text),
    env: { BATON_DATABASE_URL: database },
    cwd: dir,
  });
  return { code, stdout: out.join(''), stderr: err.join('') };
}

function ok(result: Result): Result {
  expect(result.code, result.stderr).toBe(0);
  return result;
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'baton-work-cli-'));
  database = join(dir, 'baton.db');
  ok(await baton('project', 'create', 'default'));
  writeFileSync(join(dir, 'contract.json'), JSON.stringify(contractBody));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('baton work on the local store', () => {
  it('shows a contract created through the CLI, as people read it and as the exact snapshot', async () => {
    const started = ok(await baton('session', 'start', 's1', '--workspace', '.', '--mode', 'managed'));
    expect(started.stdout).toContain('Session s1 · mode managed');
    expect(started.stdout).toContain(`workspace ${dir}`);
    const created = ok(await baton('work', 'create', 's1', '--file', 'contract.json'));
    expect(created.stdout).toContain('Contract c1 · revision 1 · awaiting_input');
    ok(await baton('work', 'confirm', 's1', '--revision', '1', '--answer', 'db=use staging'));
    ok(await baton('work', 'reassign', 's1', 'code', '--owner', 'worker', '--child-session', 's1-kid'));

    const human = ok(await baton('work', 'show', 's1'));
    expect(human.stdout).toBe(
      [
        'Session s1 · ledger position 7',
        'Contract c1 · revision 1 · active',
        '  confirmed',
        'Objective: Fix the login form (acme-private)',
        '  constraint no-db: no schema change',
        '',
        'Items (2):',
        '  code  ready  Change the form',
        '      owner worker · attempt 1 · child session s1-kid · required · evidence 0',
        '      criteria: tests (no verdict), style (no verdict)',
        '  docs  proposed  Document the change',
        '      owner parent_agent · attempt 1 · optional · evidence 0',
        '      after: code',
        '',
        'Criteria (2):',
        '  tests  required  shell: npm test  → no verdict',
        '  style  optional  semantic: the form reads well  → no verdict',
        '',
        'Control block (what the model sees each turn):',
        '  <work_contract revision="1">',
        '  Objective: Fix the login form (acme-private)',
        '  Status: active',
        '  Required items:',
        '  - code: ready — Change the form',
        '  Rules:',
        '  - do not claim completion while required items remain unfinished',
        '  - use the work tool for state changes',
        '  - only the verifier marks items succeeded; move finished items to ready_for_verification',
        '  </work_contract>',
        '',
      ].join('\n'),
    );

    const json = ok(await baton('work', 'show', 's1', '--json'));
    const store = await openSqliteStore({ path: database });
    try {
      const expected = await readWork({ store, clock: systemClock }, 'default', { session_id: 's1' });
      expect(json.stdout).toBe(`${JSON.stringify(expected, null, 2)}\n`);
    } finally {
      await store.close();
    }
  });

  it('lists each attached reference under its item, an unresolved one with the reason', async () => {
    ok(await baton('session', 'start', 's1'));
    ok(await baton('work', 'create', 's1', '--file', 'contract.json'));
    ok(await baton('work', 'confirm', 's1', '--revision', '1', '--answer', 'db=staging'));
    const before = (
      JSON.parse(ok(await baton('work', 'show', 's1', '--json')).stdout) as { position: number }
    ).position;
    const store = await openSqliteStore({ path: database });
    try {
      const deps = { store, clock: systemClock };
      for (const evidence of [
        { type: 'ledger_entry', session_id: 's1', entry_id: '1' },
        { type: 'tool_result', session_id: 's1', tool_use_id: 'toolu_9' },
        { type: 'flow_node', flow: 'release', run_id: 'r1', node_id: 'n1' },
      ]) {
        await attachEvidence(
          deps,
          'default',
          { session_id: 's1', revision: 1, item_id: 'code', evidence },
          { type: 'human', id: 'ana' },
        );
      }
    } finally {
      await store.close();
    }
    const human = ok(await baton('work', 'show', 's1'));
    expect(human.stdout).toContain(
      [
        '      owner parent_agent · attempt 1 · required · evidence 3',
        '      criteria: tests (no verdict), style (no verdict)',
        '      evidence: ledger_entry s1 entry 1',
        '      evidence: tool_result s1 toolu_9 (unavailable: missing_entry)',
        '      evidence: flow_node release run r1 node n1 (unavailable: missing_entry)',
        '  docs  proposed  Document the change',
      ].join('\n'),
    );
    const watched = ok(await baton('work', 'watch', 's1', '--after', String(before), '--count', '3'));
    expect(watched.stdout.split('\n').map((line) => line.split('  ').slice(2, 4).join('  '))).toEqual([
      'WorkEvidenceAttached  item code evidence ledger_entry s1 entry 1',
      'WorkEvidenceAttached  item code evidence tool_result s1 toolu_9 (unavailable: missing_entry)',
      'WorkEvidenceAttached  item code evidence flow_node release run r1 node n1 (unavailable: missing_entry)',
      '',
    ]);
  });

  it('reconciles running work: a possible write is interrupted for review, a second run writes nothing', async () => {
    ok(await baton('session', 'start', 's1'));
    ok(await baton('work', 'create', 's1', '--file', 'contract.json'));
    ok(await baton('work', 'confirm', 's1', '--revision', '1', '--answer', 'db=staging'));
    const store = await openSqliteStore({ path: database });
    try {
      await transitionItem(
        { store, clock: systemClock },
        'default',
        { session_id: 's1', revision: 1, item_id: 'code', to: 'running' },
        { type: 'model', id: 'agent' },
      );
    } finally {
      await store.close();
    }
    const help = ok(await baton('work', 'reconcile', '--help'));
    expect(help.stdout).toContain('baton work reconcile <session>');
    const reconciled = JSON.parse(ok(await baton('work', 'reconcile', 's1', '--json')).stdout) as {
      position: number;
      contract: { items: { item_id: string; status: string }[] };
      warnings: { message: string }[];
    };
    expect(reconciled.contract.items[0]).toMatchObject({ item_id: 'code', status: 'interrupted' });
    expect(reconciled.warnings.map((warning) => warning.message).join('\n')).toContain(
      "awaits a person's review before retry",
    );
    const again = JSON.parse(ok(await baton('work', 'reconcile', 's1', '--json')).stdout) as {
      position: number;
    };
    expect(again.position).toBe(reconciled.position);
    const retried = ok(
      await baton('work', 'retry', 's1', 'code', '--reason', 'reviewed: nothing half-written'),
    );
    expect(retried.stdout).toContain('  code  ready  Change the form\n      owner parent_agent · attempt 2');
  });

  it('attaches an evidence reference from a JSON file, with exit codes 0, 1 and 2', async () => {
    ok(await baton('session', 'start', 's1'));
    ok(await baton('work', 'create', 's1', '--file', 'contract.json'));
    ok(await baton('work', 'confirm', 's1', '--revision', '1', '--answer', 'db=staging'));
    writeFileSync(
      join(dir, 'evidence.json'),
      JSON.stringify({ type: 'child_session', session_id: 's1-kid' }),
    );
    const attached = ok(
      await baton('work', 'evidence', 's1', 'code', '--revision', '1', '--file', 'evidence.json', '--json'),
    );
    const snapshot = JSON.parse(attached.stdout) as { position: number };
    expect(snapshot).toMatchObject({
      contract: {
        items: [
          { item_id: 'code', evidence_count: 1 },
          { item_id: 'docs', evidence_count: 0 },
        ],
      },
    });
    // The same reference again writes nothing (a retry is safe); another one is the item's second.
    writeFileSync(
      join(dir, 'tool.json'),
      JSON.stringify({ type: 'tool_result', session_id: 's1', tool_use_id: 't1' }),
    );
    ok(await baton('work', 'evidence', 's1', 'code', '--revision', '1', '--file', 'evidence.json'));
    const human = ok(await baton('work', 'evidence', 's1', 'code', '--revision', '1', '--file', 'tool.json'));
    expect(human.stdout).toContain('      owner parent_agent · attempt 1 · required · evidence 2');
    expect(human.stdout).toContain('      evidence: tool_result s1 t1 (unavailable: missing_entry)');
    // Refused by the app (a stale revision, an unknown item): 1, with the code; nothing written.
    const stale = await baton('work', 'evidence', 's1', 'code', '--revision', '2', '--file', 'evidence.json');
    expect([stale.code, stale.stderr]).toEqual([1, expect.stringContaining('revision_conflict')]);
    const unknown = await baton(
      'work',
      'evidence',
      's1',
      'nope',
      '--revision',
      '1',
      '--file',
      'evidence.json',
    );
    expect([unknown.code, unknown.stderr]).toEqual([1, expect.stringContaining('not_found')]);
    // A usage mistake: 2.
    writeFileSync(join(dir, 'prose.json'), '"the tests pass"');
    for (const args of [
      ['s1', 'code', '--file', 'evidence.json'],
      ['s1', 'code', '--revision', '1'],
      ['s1', '--revision', '1', '--file', 'evidence.json'],
      ['s1', 'code', '--revision', '1', '--file', 'prose.json'],
    ]) {
      expect((await baton('work', 'evidence', ...args)).code, args.join(' ')).toBe(2);
    }
    // A reference of no known type is the app's invalid_input: 1, naming the field.
    writeFileSync(join(dir, 'bad.json'), JSON.stringify({ type: 'hearsay' }));
    const bad = await baton('work', 'evidence', 's1', 'code', '--revision', '1', '--file', 'bad.json');
    expect([bad.code, bad.stderr]).toEqual([1, expect.stringContaining('invalid_input')]);
    // The refusals wrote nothing, nor did the same reference again: only tool.json was written.
    const shown = JSON.parse(ok(await baton('work', 'show', 's1', '--json')).stdout) as { position: number };
    expect(shown.position).toBe(snapshot.position + 1);
  });

  it('binds a session to a workstream: its contract that ends records a Task Outcome covering the accepted receipt', async () => {
    ok(await baton('handoff', 'Fix the login redirect', '--scope', 'login-work'));
    ok(
      await baton(
        ...['ack', 'accepted', '--revision', '1', '--scope', 'login-work'],
        ...['--confirm-workspace', '--confirm-capability', '--confirm-authorization'],
      ),
    );
    const help = ok(await baton('session', 'start', '--help'));
    expect(help.stdout).toContain('--receipt REF');
    const started = ok(
      await baton(
        ...['session', 'start', 's2', '--workspace', '.', '--mode', 'managed'],
        ...['--scope', 'login-work', '--receipt', 'active'],
      ),
    );
    expect(started.stdout).toMatch(/bound to workstream login-work: .*, covering receipt \S+/);
    const wrong = await baton(
      'session',
      'start',
      's3',
      '--scope',
      'login-work',
      '--receipt',
      'no-such-receipt',
    );
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('no work record with that source_id in login-work');
    writeFileSync(
      join(dir, 'fix.json'),
      JSON.stringify({
        contract_id: 'fix',
        objective: 'Fix the login redirect',
        criteria: [
          {
            criterion_id: 'body',
            statement: 'the contract file exists',
            kind: { type: 'file_exists', path: 'fix.json' },
          },
        ],
        items: [{ item_id: 'fix', title: 'Fix it', criterion_ids: ['body'] }],
      }),
    );
    ok(await baton('work', 'create', 's2', '--file', 'fix.json'));
    const store = await openSqliteStore({ path: database });
    try {
      for (const to of ['running', 'ready_for_verification'] as const) {
        await transitionItem(
          { store, clock: systemClock },
          'default',
          { session_id: 's2', revision: 1, item_id: 'fix', to },
          { type: 'model', id: 'agent' },
        );
      }
    } finally {
      await store.close();
    }
    ok(await baton('work', 'verify', 's2'));
    const continuity = JSON.parse(
      ok(await baton('continuity', '--scope', 'login-work', '--json')).stdout,
    ) as {
      outcome_state: string;
      counts: Record<string, number>;
    };
    expect(continuity).toMatchObject({ outcome_state: 'covered', counts: { 'task-outcome': 1 } });
  });

  it('ends an interrupted bound session with a prepared Handoff, and the commands it prints read and publish it', async () => {
    ok(await baton('handoff', 'Fix the login redirect', '--scope', 'login-work'));
    ok(await baton('session', 'start', 's2', '--mode', 'managed', '--scope', 'login-work'));
    ok(await baton('work', 'create', 's2', '--file', 'contract.json'));
    const ended = ok(
      await baton('session', 'end', 's2', '--status', 'max_turns', '--reason', 'out of turns'),
    );
    const lines = ended.stdout.split('\n');
    expect(lines[1]).toMatch(
      /^Handoff prepared for whoever continues, in workstream login-work on revision 1 \(boundary managed-work:\S+:interrupted-boundary\), not committed:$/,
    );
    const read = /^ {2}read it: {4}baton (.+)$/.exec(lines[2]!)?.[1];
    const publish = /^ {2}publish it: baton (.+)$/.exec(lines[3]!)?.[1];
    expect(read).toMatch(/^continue --scope login-work --prepared sha256:[0-9a-f]{64}$/);
    expect(publish).toBe(`${read!.replace('continue', 'commit')} --expected-head 1`);
    expect(ok(await baton(...read!.split(' '))).stdout).toContain(
      'Confirm contract c1 revision 1 in managed session s2, answering its open assumptions',
    );
    expect(ok(await baton('session', 'list')).stdout).toContain(`  ${lines[1]}`);
    ok(await baton(...publish!.split(' ')));
    const continued = JSON.parse(ok(await baton('continue', '--scope', 'login-work', '--json')).stdout) as {
      selection: { revision: number };
      handoff: { statements: { text: string }[] };
    };
    expect(continued.selection.revision).toBe(2);
    expect(continued.handoff.statements[0]!.text).toContain(
      'Managed session s2 ended max_turns (out of turns)',
    );
  });

  it('shows several sessions in one query and cancels several items in one call, each entry answering for itself', async () => {
    ok(await baton('session', 'start', 's1'));
    ok(await baton('work', 'create', 's1', '--file', 'contract.json'));
    ok(await baton('work', 'confirm', 's1', '--revision', '1', '--answer', 'db=staging'));
    ok(await baton('session', 'start', 's2'));

    const both = ok(await baton('work', 'show', 's1', 's2'));
    expect(both.stdout).toContain('Session s1 · ledger position');
    expect(both.stdout).toContain('Session s2 · ledger position 1\nNo work contract in this session.');
    const missing = await baton('work', 'show', 's1', 'nobody', '--json');
    expect(missing.code).toBe(1);
    const answer = JSON.parse(missing.stdout) as { sessions: ({ session_id: string } & object)[] };
    expect(answer.sessions.map((entry) => [entry.session_id, 'error' in entry])).toEqual([
      ['s1', false],
      ['nobody', true],
    ]);
    expect(missing.stderr).toContain('1 of 2 sessions were not read: session nobody:');
    const many = await baton('work', 'show', ...Array.from({ length: 101 }, (_, i) => `s${i}`));
    expect(many.code).toBe(2);
    expect(many.stderr).toContain('at most 100');

    const cancelled = await baton('work', 'cancel', 's1', 'code', 'docs', 'nope', '--reason', 'superseded');
    expect(cancelled.code).toBe(1);
    expect(cancelled.stdout).toContain('  code: cancelled (ledger position');
    expect(cancelled.stdout).toContain('  docs: cancelled (ledger position');
    expect(cancelled.stdout).toMatch(/ {2}nope: not cancelled: not_found: /);
    expect(cancelled.stderr).toContain('1 of 3 items were not cancelled: item nope:');
    const work = JSON.parse(ok(await baton('work', 'show', 's1', '--json')).stdout) as {
      contract: { items: { item_id: string; status: string }[] };
    };
    expect(work.contract.items.map((item) => item.status)).toEqual(['cancelled', 'cancelled']);
    expect((await baton('work', 'cancel', 's1')).code).toBe(2);
    // Retrying stays one item at a time.
    expect((await baton('work', 'retry', 's1', 'code', 'docs')).code).toBe(2);
  });

  it('lists the sessions newest first, each contract at a glance, and refuses an argument', async () => {
    expect(ok(await baton('session', 'list')).stdout).toBe(
      'No sessions yet: baton session start <session> starts one.\n',
    );
    ok(await baton('session', 'start', 's1', '--mode', 'managed'));
    ok(await baton('work', 'create', 's1', '--file', 'contract.json'));
    await new Promise((resolve) => setTimeout(resolve, 3));
    ok(await baton('session', 'start', 's2', '--parent', 's1'));
    const text = ok(await baton('session', 'list')).stdout;
    expect(text).toMatch(
      /^2 sessions, newest first:\n\nSession s2 · mode direct · created \S+ · position 1\n {2}child of s1\n {2}no contract\n\nSession s1 · mode managed/,
    );
    expect(text).toContain(
      '  contract c1 revision 1: awaiting_input · items: 2 proposed (of 2) · criteria: 0 of 2 passed\n',
    );
    const json = JSON.parse(ok(await baton('session', 'list', '--json')).stdout) as { total: number };
    expect(json.total).toBe(2);
    const extra = await baton('session', 'list', 's1');
    expect(extra.code).toBe(2);
    expect(extra.stderr).toContain('takes options only');
  });

  it('ends a session once, with exit codes 0, 1 and 2', async () => {
    ok(await baton('session', 'start', 's1', '--mode', 'managed'));
    ok(await baton('work', 'create', 's1', '--file', 'contract.json'));
    const open = await baton('session', 'end', 's1', '--status', 'completed');
    expect([open.code, open.stderr]).toEqual([1, expect.stringContaining('work_incomplete')]);
    const ended = ok(
      await baton('session', 'end', 's1', '--status', 'aborted', '--reason', 'stopped', '--json'),
    );
    expect(JSON.parse(ended.stdout)).toMatchObject({ projection: { terminal: { status: 'aborted' } } });
    ok(await baton('session', 'end', 's1', '--status', 'aborted'));
    const other = await baton('session', 'end', 's1', '--status', 'failed');
    expect([other.code, other.stderr]).toEqual([1, expect.stringContaining('session_ended')]);
    const missing = await baton('session', 'end', 's1');
    expect([missing.code, missing.stderr]).toEqual([2, expect.stringContaining('--status is required')]);
    const bad = await baton('session', 'end', 's1', '--status', 'done');
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining('--status is one of completed')]);
    const listed = JSON.parse(ok(await baton('session', 'list', '--json')).stdout) as {
      sessions: { terminal: { status: string } | null }[];
    };
    expect(listed.sessions[0]!.terminal?.status).toBe('aborted');
  });

  it('changes items with exit codes 0, 1 and 2 as the other commands', async () => {
    ok(await baton('session', 'start', 's1'));
    ok(await baton('work', 'create', 's1', '--file', 'contract.json'));
    ok(await baton('work', 'confirm', 's1', '--revision', '1', '--answer', 'db=staging'));
    const cancelled = ok(await baton('work', 'cancel', 's1', 'code', '--reason', 'wrong approach', '--json'));
    expect(JSON.parse(cancelled.stdout)).toMatchObject({
      contract: { items: [{ item_id: 'code', status: 'cancelled' }, {}] },
    });
    const retried = ok(await baton('work', 'retry', 's1', 'code'));
    expect(retried.stdout).toContain('  code  ready  Change the form\n      owner parent_agent · attempt 2');
    ok(
      await baton(
        'work',
        'transition',
        's1',
        'docs',
        '--to',
        'skipped',
        '--revision',
        '1',
        '--reason',
        'later',
      ),
    );
    const revised = ok(
      await baton(
        'work',
        'revise',
        's1',
        '--revision',
        '1',
        '--file',
        'contract.json',
        '--reason',
        'same again',
      ),
    );
    // The revision repeats the assumption without its answer, so it waits for input again.
    expect(revised.stdout).toContain('Contract c1 · revision 2 · awaiting_input\n  needs input on db');

    // A revision counts from 1: 0 is a usage error, said before anything is asked of the ledger.
    for (const args of [
      ['work', 'transition', 's1', 'code', '--to', 'skipped', '--revision', '0'],
      ['work', 'confirm', 's1', '--revision', '0'],
      ['work', 'revise', 's1', '--revision', '0', '--file', 'nowhere.json'],
    ]) {
      const zero = await baton(...args);
      expect({ args, code: zero.code }).toEqual({ args, code: 2 });
      expect(zero.stderr).toContain('--revision takes a whole number from 1, not "0"');
    }

    // Refused by the app: exit 1 with the code and data.
    const stale = await baton('work', 'transition', 's1', 'code', '--to', 'skipped', '--revision', '1');
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain('revision_conflict');
    expect(stale.stderr).toContain('"rule":"stale_revision"');
    const refused = await baton(
      'work',
      'transition',
      's1',
      'code',
      '--to',
      'succeeded',
      '--revision',
      '2',
      '--json',
    );
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stderr)).toMatchObject({
      error: { code: 'conflict', details: { rule: 'invalid_transition' } },
    });
    const missing = await baton('work', 'show', 'nobody');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('not_found');

    // Called wrongly: exit 2 and nothing written.
    const before = ok(await baton('ledger', 'export', 's1'));
    for (const args of [
      ['work', 'show'],
      ['work', 'reconcile', 's1', 'extra'],
      ['work', 'transition', 's1', 'code', '--to', 'finished', '--revision', '2'],
      ['work', 'transition', 's1', 'code', '--to', 'skipped'],
      ['work', 'confirm', 's1', '--revision', 'two'],
      ['work', 'confirm', 's1', '--revision', '2', '--answer', 'no-equals-sign'],
      ['work', 'reassign', 's1', 'code', '--owner', 'robot'],
      ['work', 'create', 's1'],
      ['session', 'start', 's2', '--parent-item', 'x'],
      ['work', 'show', 's1', '--frob'],
    ]) {
      expect((await baton(...args)).code, args.join(' ')).toBe(2);
    }
    // A file that is not there is the system's refusal, as for the other commands: exit 1.
    const missingFile = await baton('work', 'create', 's1', '--file', 'missing.json');
    expect(missingFile.code).toBe(1);
    expect(missingFile.stderr).toContain('ENOENT');
    const after = ok(await baton('work', 'show', 's1', '--json'));
    expect(JSON.parse(after.stdout)).toMatchObject({ contract: { revision: 2 } });
    expect(ok(await baton('ledger', 'export', 's1')).stdout).toBe(before.stdout);
    for (const name of ['show', 'create', 'confirm', 'revise', 'transition', 'retry', 'cancel', 'reassign']) {
      const help = ok(await baton('work', name, '--help'));
      expect(help.stdout).toContain(`Usage: baton work ${name}`);
      expect(help.stdout).toMatch(/Examples:\n {2}baton work/);
    }
  });

  it('exports a session ledger by its id as a positional argument, as --session does', async () => {
    ok(await baton('session', 'start', 's1'));
    ok(await baton('work', 'create', 's1', '--file', 'contract.json'));
    const positional = ok(await baton('ledger', 'export', 's1'));
    const named = ok(await baton('ledger', 'export', '--session', 's1'));
    expect(positional.stdout).toBe(named.stdout);
    expect(positional.stdout.trim().split('\n')).toHaveLength(4);
    expect(positional.stderr).toContain('exported 3 entries');
    expect((await baton('ledger', 'export', 's1', '--session', 's1')).code).toBe(2);
    expect((await baton('ledger', 'export', 's1', 's2')).code).toBe(2);
  });
});

describe('[work] in baton.toml', () => {
  it('warns about unknown keys and keeps going, and its limits reach the app', async () => {
    writeFileSync(join(dir, 'baton.toml'), '[work]\nmax_items = 1\nfoo = "bar"\n\n[models]\nroute = "x"\n');
    ok(await baton('session', 'start', 's1'));
    const created = await baton('work', 'create', 's1', '--file', 'contract.json');
    const unknown = `warning: ${join(dir, 'baton.toml')}: unknown key work.foo is ignored\n`;
    expect(created.stderr).toContain(unknown);
    expect(created.code).toBe(1);
    expect(created.stderr).toContain('"rule":"too_many_items"');
    const shown = ok(await baton('work', 'show', 's1'));
    expect(shown.stderr).toBe(unknown);
    expect(shown.stdout).toContain('No work contract in this session.');

    // Another file with --config; confirmation = "always" leaves a new contract a draft.
    writeFileSync(join(dir, 'other.toml'), '[work]\nconfirmation = "always"\ndefault_mode = "managed"\n');
    const session = ok(await baton('session', 'start', 's2', '--config', 'other.toml', '--json'));
    expect(JSON.parse(session.stdout)).toMatchObject({ work_mode: 'managed' });
    writeFileSync(join(dir, 'odd.toml'), '[work]\nunknown_key = 1\n');
    const odd = ok(await baton('work', 'show', 's2', '--config', 'odd.toml'));
    expect(odd.stderr).toBe(`warning: ${join(dir, 'odd.toml')}: unknown key work.unknown_key is ignored\n`);
    const draft = ok(
      await baton('work', 'create', 's2', '--file', 'contract.json', '--config', 'other.toml', '--json'),
    );
    expect(draft.stderr).toBe('');
    const noAssumption = { ...contractBody, assumptions: [] };
    writeFileSync(join(dir, 'plain.json'), JSON.stringify(noAssumption));
    ok(await baton('session', 'start', 's3', '--config', 'other.toml'));
    const plain = ok(
      await baton('work', 'create', 's3', '--file', 'plain.json', '--config', 'other.toml', '--json'),
    );
    expect(JSON.parse(plain.stdout)).toMatchObject({ contract: { status: 'draft' } });
    expect(JSON.parse(draft.stdout)).toMatchObject({ contract: { status: 'awaiting_input' } });
  });

  it('exits 2 naming the key for a bad value, the file for bad TOML, and a missing --config file', async () => {
    writeFileSync(join(dir, 'baton.toml'), '[work]\nmax_items = "many"\n');
    for (const args of [
      ['work', 'show', 's1'],
      ['session', 'start', 's1'],
      ['serve', '--port', '0'],
      ['mcp'],
    ]) {
      const result = await baton(...args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).toContain(`${join(dir, 'baton.toml')}: work.max_items`);
    }
    writeFileSync(join(dir, 'baton.toml'), '[work]\nconfirmation = "sometimes"\n');
    const badEnum = await baton('work', 'show', 's1');
    expect(badEnum.code).toBe(2);
    expect(badEnum.stderr).toContain('work.confirmation');
    writeFileSync(join(dir, 'baton.toml'), '[work\nmax_items = 3\n');
    const broken = await baton('work', 'show', 's1');
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain('is not valid TOML');
    writeFileSync(join(dir, 'baton.toml'), 'work = 3\n');
    expect((await baton('work', 'show', 's1')).code).toBe(2);
    const missing = await baton('work', 'show', 's1', '--config', 'nowhere.toml');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('nowhere.toml: no such file');
  });
});

describe('baton work against a server', () => {
  it('runs the same commands through the typed client with the token deciding the project', async () => {
    const opened = await backends[0]!.open();
    const { deps, tokens } = await seedTokens(opened.store);
    const server = await startServer({ deps, port: 0, logger: false });
    const remote = ['--server', server.url, '--token', tokens.writer];
    try {
      ok(await baton('session', 'start', 's1', ...remote));
      ok(await baton('work', 'create', 's1', '--file', 'contract.json', ...remote));
      ok(await baton('work', 'confirm', 's1', '--revision', '1', '--answer', 'db=staging', ...remote));
      ok(await baton('work', 'reassign', 's1', 'code', '--owner', 'human', ...remote));
      ok(await baton('work', 'cancel', 's1', 'docs', ...remote));
      writeFileSync(join(dir, 'evidence.json'), JSON.stringify({ type: 'child_session', session_id: 'kid' }));
      ok(
        await baton(
          'work',
          'evidence',
          's1',
          'code',
          '--revision',
          '1',
          '--file',
          'evidence.json',
          ...remote,
        ),
      );
      const shown = ok(await baton('work', 'show', 's1', '--json', ...remote));
      const expected = await readWork(deps, 'acme', { session_id: 's1' });
      expect(shown.stdout).toBe(`${JSON.stringify(expected, null, 2)}\n`);
      // The local project has no such session: the server's is the only one.
      expect((await baton('work', 'show', 's1')).code).toBe(1);
      const readOnly = await baton(
        'work',
        'cancel',
        's1',
        'code',
        '--server',
        server.url,
        '--token',
        tokens.reader,
      );
      expect(readOnly.code).toBe(1);
      expect(readOnly.stderr).toContain('forbidden');
      expect((await baton('work', 'show', 's1', ...remote, '--project', 'default')).code).toBe(2);
      const foreign = await baton('work', 'show', 's1', '--server', server.url, '--token', tokens.rival);
      expect(foreign.code).toBe(1);
      expect(foreign.stderr).toContain('not_found');
      // The bulk endpoints, through the typed client too.
      ok(await baton('session', 'start', 's2', ...remote));
      const both = JSON.parse(ok(await baton('work', 'show', 's1', 's2', '--json', ...remote)).stdout) as {
        sessions: { session_id: string; work?: unknown }[];
      };
      expect(both.sessions.map((entry) => [entry.session_id, 'work' in entry])).toEqual([
        ['s1', true],
        ['s2', true],
      ]);
      const bulk = await baton('work', 'cancel', 's1', 'code', 'nope', ...remote);
      expect(bulk.code, bulk.stderr).toBe(1);
      expect(bulk.stdout).toContain('  code: cancelled (ledger position');
      expect(bulk.stderr).toContain('1 of 2 items were not cancelled: item nope:');
      // The list, through the typed client: the reader's token sees the project's sessions only.
      const listed = ok(
        await baton('session', 'list', '--json', '--server', server.url, '--token', tokens.reader),
      );
      expect(JSON.parse(listed.stdout)).toEqual(await listSessions(deps, 'acme'));
      const rivals = ok(await baton('session', 'list', '--server', server.url, '--token', tokens.rival));
      expect(rivals.stdout).toBe('No sessions yet: baton session start <session> starts one.\n');
    } finally {
      await server.close();
      await opened.dispose();
    }
  });
});

describe('a session whose workspace cannot be used', () => {
  it('makes the gate and the verifier refuse with the workspace named, never crash; a control character is refused at start', async () => {
    const store = await openSqliteStore({ path: database });
    try {
      const deps = { store, clock: systemClock };
      const missing = join(dir, 'gone');
      await startSession(deps, 'default', { session_id: 'away', workspace: missing });
      const notFolder = join(dir, 'contract.json');
      await startSession(deps, 'default', { session_id: 'file', workspace: notFolder });
      await expect(
        startSession(deps, 'default', { session_id: 'nul', workspace: '/tmp/a\u0000b' }),
      ).rejects.toMatchObject({ code: 'invalid_input', data: { issues: [{ path: 'workspace' }] } });
    } finally {
      await store.close();
    }
    for (const session of ['away', 'file']) {
      ok(await baton('work', 'create', session, '--file', 'contract.json'));
      ok(await baton('work', 'confirm', session, '--revision', '1', '--answer', 'db=staging'));
    }
    const cases: [string, string][] = [
      ['away', 'does not exist on this machine'],
      ['file', 'is not a folder'],
    ];
    for (const [session, why] of cases) {
      for (const args of [
        ['work', 'gate', '--session', session],
        ['work', 'verify', '--session', session],
      ]) {
        const result = await baton(...args);
        expect(result.code, args.join(' ')).toBe(1);
        expect(result.stderr).toContain(`precondition_failed: the session's workspace`);
        expect(result.stderr).toContain(why);
        expect(result.stderr).not.toMatch(/\n\s+at /);
      }
    }
  });
});
