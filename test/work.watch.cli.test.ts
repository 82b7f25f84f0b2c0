/**
 * `baton work watch`: a session's work events as lines or JSONL, on the local store (following
 * commits another connection makes) and on a server (through the typed client, reconnecting
 * after the last position printed when the server goes away and comes back), its refusals with
 * their exit codes, and Ctrl-C ending it with exit 0.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createToken } from '../src/app/auth.ts';
import { run } from '../src/cli/run.ts';
import { createClient } from '../src/client/index.ts';
import { systemClock } from '../src/core/clock.ts';
import { liveMessage } from '../src/core/work/live.ts';
import { startServer } from '../src/http/server.ts';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../src/store/store.ts';
import { cliEnv } from './helpers/git.ts';
import { spawnBaton } from './helpers/spawn.ts';
import { contractBody } from './helpers/work-surface.ts';

let dir: string;
let database: string;
const s1 = { project_id: 'default', kind: 'session', session_id: 's1' } as const;

interface Watching {
  readonly out: string[];
  readonly err: string[];
  readonly code: Promise<number>;
}

/** Run the CLI in this process; the result's output grows while the command runs. */
function start(args: readonly string[], env: Record<string, string> = {}): Watching {
  const out: string[] = [];
  const err: string[] = [];
  const code = run(args, {
    out: (text) => out.push(text),
    err: (text) => err.push(text),
    env: { BATON_DATABASE_URL: database, ...env },
    cwd: dir,
  });
  return { out, err, code };
}

async function baton(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const running = start(args);
  const code = await running.code;
  return { code, stdout: running.out.join(''), stderr: running.err.join('') };
}

async function ok(...args: string[]): Promise<string> {
  const result = await baton(...args);
  expect(result.code, result.stderr).toBe(0);
  return result.stdout;
}

async function until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function lines(text: string): string[] {
  return text.split('\n').filter((line) => line !== '');
}

/** The session's work events as the ledger holds them, as live messages. */
async function ledgerMessages(store: Store, after = 0) {
  const messages = [];
  for await (const entry of store.readStream(s1, { from: after + 1, kinds: ['work_event'] }))
    messages.push(liveMessage(entry));
  return messages;
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'baton-work-watch-'));
  database = join(dir, 'baton.db');
  await ok('project', 'create', 'default');
  writeFileSync(join(dir, 'contract.json'), JSON.stringify(contractBody));
  await ok('session', 'start', 's1');
  await ok('work', 'create', 's1', '--file', 'contract.json');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('baton work watch on the local store', () => {
  it('prints the events so far one line each or as JSONL, after a position, up to a count', async () => {
    const human = lines(await ok('work', 'watch', 's1', '--count', '2'));
    expect(human).toHaveLength(2);
    expect(human[0]).toMatch(
      /^2 {2}\d{4}-\d\d-\d\dT\S+Z {2}WorkContractCreated {2}contract c1 r1: Fix the login form \(acme-private\) {2}· human cli$/,
    );
    expect(human[1]).toMatch(
      /^3 {2}\S+ {2}WorkNeedsInput {2}contract c1 draft → awaiting_input: .+ {2}· runtime baton$/,
    );

    const store = await openSqliteStore({ path: database });
    try {
      const stored = await ledgerMessages(store);
      const json = lines(await ok('work', 'watch', 's1', '--count', '2', '--json'));
      expect(json.map((line) => JSON.parse(line) as unknown)).toEqual(JSON.parse(JSON.stringify(stored)));
      expect(Object.keys(JSON.parse(json[0]!) as object)).toEqual([
        'name',
        'position',
        'recorded_at',
        'event',
      ]);
    } finally {
      await store.close();
    }
    const after = lines(await ok('work', 'watch', 's1', '--after', '2', '--count', '1'));
    expect(after.map((line) => line.split('  ')[2])).toEqual(['WorkNeedsInput']);
  });

  it('waits for the next events, committed by another connection to the same file', async () => {
    const watching = start(['work', 'watch', 's1', '--after', '3', '--count', '3']);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(watching.out).toEqual([]);
    await ok('work', 'confirm', 's1', '--revision', '1', '--answer', 'db=use staging');
    expect(await watching.code).toBe(0);
    expect(lines(watching.out.join('')).map((line) => line.split('  ').slice(2, 4))).toEqual([
      ['WorkAssumptionResolved', 'assumption db: use staging'],
      ['WorkContractStatusChanged', 'contract c1 awaiting_input → active: confirmed'],
      ['WorkItemChanged', 'item code proposed → ready (attempt 1): contract active'],
    ]);
  });

  it('refuses what it cannot watch, with exit 2 for usage and 1 for the operation', async () => {
    const refusals: [string[], number, RegExp][] = [
      [['work', 'watch'], 2, /give SESSION/],
      [['work', 'watch', 's1', 's2'], 2, /give SESSION, nothing more/],
      [['work', 'watch', 's1', '--after', 'x'], 2, /--after takes a whole number/],
      [['work', 'watch', 's1', '--count', '0'], 2, /--count takes a whole number from 1/],
      [['work', 'watch', 'nobody'], 1, /nobody/],
      [['work', 'watch', 's1', '--after', '99'], 1, /position 99 is past the session's head 3/],
    ];
    for (const [args, code, message] of refusals) {
      const result = await baton(...args);
      expect({ code: result.code, stdout: result.stdout }, args.join(' ')).toEqual({ code, stdout: '' });
      expect(result.stderr).toMatch(message);
    }
  });

  it('stops on Ctrl-C with exit 0, its lines written', async () => {
    const watching = spawnBaton(['work', 'watch', 's1'], dir, cliEnv(database));
    await watching.waitFor(/WorkNeedsInput/);
    watching.child.kill('SIGINT');
    // Its own exit, awaited: stop() would send SIGTERM at once, racing the SIGINT it handles.
    const { child } = watching;
    const code = await new Promise<number | null>((resolve) => {
      if (child.exitCode !== null) resolve(child.exitCode);
      else child.once('exit', (exit) => resolve(exit));
    });
    expect(code).toBe(0);
    expect(lines(watching.stdout())).toHaveLength(2);
    expect(watching.stderr()).toBe('');
  });
});

describe('baton work watch on a server', () => {
  let store: Store;
  let token: string;
  const servers: { url: string; close(): Promise<void> }[] = [];

  beforeEach(async () => {
    store = await openSqliteStore({ path: database });
    token = (await createToken({ store, clock: systemClock }, { project_id: 'default' })).token;
  });
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.close();
    await store.close();
  });

  async function serve(port = 0) {
    const server = await startServer({ deps: { store, clock: systemClock }, port, logger: false });
    servers.push(server);
    return server;
  }

  it('prints what the local store prints, and refuses as the server does', async () => {
    const { url } = await serve();
    const remote = ['--server', url, '--token', token];
    const watching = start(['work', 'watch', 's1', '--json', '--count', '5', ...remote]);
    await until(() => watching.out.length === 2);
    await createClient({ baseUrl: url, token }).confirmWork({
      session_id: 's1',
      revision: 1,
      resolutions: [{ assumption_id: 'db', resolution: 'use staging' }],
    });
    expect(await watching.code).toBe(0);
    const received = lines(watching.out.join('')).map((line) => JSON.parse(line) as unknown);
    expect(received).toEqual(JSON.parse(JSON.stringify(await ledgerMessages(store))));
    expect(await ok('work', 'watch', 's1', '--count', '5', ...remote)).toBe(
      await ok('work', 'watch', 's1', '--count', '5'),
    );

    const unknown = await baton('work', 'watch', 'nobody', ...remote);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/not_found: stream .*nobody does not exist/);
    const offline = await baton('work', 'watch', 's1', '--server', 'http://127.0.0.1:1', '--token', token);
    expect(offline.code).toBe(1);
    expect(offline.stderr).toContain('cannot reach the Baton server at http://127.0.0.1:1');
  });

  it('reconnects after the last position printed when the server goes away and comes back', async () => {
    const first = await serve();
    const port = Number(new URL(first.url).port);
    const watching = start(['work', 'watch', 's1', '--count', '5', '--server', first.url, '--token', token]);
    await until(() => watching.out.length === 2);
    await first.close();
    servers.splice(servers.indexOf(first), 1);
    await until(() => watching.err.join('').includes('reconnecting in'));
    // Meanwhile the work goes on; the server returns on the same address.
    await ok('work', 'confirm', 's1', '--revision', '1', '--answer', 'db=use staging');
    await serve(port);
    expect(await watching.code).toBe(0);
    const positions = lines(watching.out.join('')).map((line) => Number(line.split('  ')[0]));
    expect(positions).toEqual((await ledgerMessages(store)).map((message) => message.position));
    expect(watching.err.join('')).toMatch(
      /resume after position 3: reconnecting in 0\.5 s \(Ctrl-C stops\)\n(.*\n)*resumed after position 3\n$/,
    );
  });
});
