/**
 * One server, two projects, one hostile token. Project beta's read-write token tries to read
 * project alpha's records, and other folders of the server's machine, through managed work on
 * `baton serve`: shell and file criteria aimed at the ledger in the server's workspace
 * (`.baton/`), and a session whose workspace names a folder the server never offered. Every
 * attempt is refused or sees nothing, and alpha's canary reaches no answer and no ledger entry
 * of beta's.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportStream } from '../src/app/ledger.ts';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { ok } from './helpers/mcp.ts';
import { runBaton, spawnServe, type ServeProcess } from './helpers/serve-process.ts';

/** What the probes search for; the whole canary appears nowhere but in what they try to read. */
const alphaMark = 'zz-alpha-secret-';
const alphaCanary = `${alphaMark}${randomBytes(8).toString('hex')}`;
const plantedMark = 'zz-planted-secret-';
const plantedCanary = `${plantedMark}${randomBytes(8).toString('hex')}`;

describe('a token of one project cannot read another project, or the machine, through managed work', () => {
  let workspace: string;
  let elsewhere: string;
  let database: string;
  let server: ServeProcess;
  let beta: Client;
  let betaToken: string;
  const answers: string[] = [];

  async function tokenOf(project: string): Promise<string> {
    const init = await runBaton(['init', '--project', project, '--json'], database, workspace);
    expect(init.code, init.stderr).toBe(0);
    return (JSON.parse(init.stdout) as { token: { token: string } }).token.token;
  }

  async function call(name: string, args: Record<string, unknown>) {
    const result = await beta.callTool({ name, arguments: args });
    answers.push(JSON.stringify(result));
    return result;
  }

  function ledgerBytes(): string {
    const folder = join(workspace, '.baton');
    return readdirSync(folder)
      .map((name) => readFileSync(join(folder, name)).toString('latin1'))
      .join('\n');
  }

  beforeAll(async () => {
    // The default layout: the ledger in .baton/ inside the folder baton serve runs in.
    workspace = mkdtempSync(join(tmpdir(), 'baton-boundary-ws-'));
    execFileSync('git', ['init', '-q', workspace]);
    writeFileSync(join(workspace, 'notes.md'), 'all done\n');
    database = join(workspace, '.baton', 'baton.db');
    elsewhere = mkdtempSync(join(tmpdir(), 'baton-boundary-elsewhere-'));
    writeFileSync(join(elsewhere, 'secret.txt'), `${plantedCanary}\n`);
    await tokenOf('alpha');
    betaToken = await tokenOf('beta');
    const captured = await runBaton(
      [
        'capture',
        '--project',
        'alpha',
        '--scope',
        'payroll',
        '--source-id',
        'salaries',
        '--text',
        alphaCanary,
      ],
      database,
      workspace,
    );
    expect(captured.code, captured.stderr).toBe(0);
    server = await spawnServe(database, workspace);
    beta = new Client({ name: 'baton-boundary-test', version: '0.0.0' });
    await beta.connect(
      new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${betaToken}` } },
      }),
    );
  });

  afterAll(async () => {
    await beta?.close();
    expect(await server?.stop()).toBe(0);
    rmSync(workspace, { recursive: true, force: true });
    rmSync(elsewhere, { recursive: true, force: true });
  });

  it("shell and file criteria read nothing of the ledger inside the server's workspace", async () => {
    // The attack is real: alpha's record is in the bytes under .baton/ that a criterion would read.
    expect(ledgerBytes()).toContain(alphaCanary);
    // A link the workspace happens to hold leads to the ledger too.
    symlinkSync(database, join(workspace, 'linked-ledger'));
    const probes = [
      `cat .baton/* | grep -q ${alphaMark}`,
      `grep -rq ${alphaMark} ${join(workspace, '.baton')}`,
      `strings ${database}* | grep -q ${alphaMark}`,
      'test -s .baton/baton.db || test -s .baton/baton.db-wal',
      `cat linked-ledger | grep -q ${alphaMark}`,
      // Its output is kept as evidence in beta's own ledger: it must hold nothing of alpha's.
      `ls -A .baton; cat .baton/* ${database}*; true`,
    ];
    const probe = (criterion_id: string, kind: Record<string, string>) => ({
      criterion_id,
      statement: 'probe',
      kind,
    });
    const criteria = [
      ...probes.map((command, at) => probe(`shell-${at}`, { type: 'shell', command })),
      probe('db', { type: 'file_contains', path: '.baton/baton.db', pattern: alphaMark }),
      probe('db-exists', { type: 'file_exists', path: '.baton/baton.db-wal' }),
      probe('db-linked', { type: 'file_contains', path: 'linked-ledger', pattern: alphaMark }),
      // The workspace itself stays readable.
      probe('notes', { type: 'shell', command: 'grep -q done notes.md' }),
    ];
    const session_id = 'probe-ledger';
    await ok(beta, 'work_revise', {
      session_id,
      contract_id: 'probe',
      objective: 'read what is not mine',
      criteria,
      items: [
        { item_id: 'probe', title: 'Probe', criterion_ids: criteria.map(({ criterion_id }) => criterion_id) },
      ],
    });
    for (const to of ['running', 'ready_for_verification'])
      await ok(beta, 'work_transition', { session_id, revision: 1, item_id: 'probe', to });
    const verified = await ok<{ verdicts: { criterion_id: string; verdict: string; reason: string }[] }>(
      beta,
      'work_verify',
      { session_id },
    );
    answers.push(JSON.stringify(verified));
    const verdicts = Object.fromEntries(
      verified.verdicts.map(({ criterion_id, verdict }) => [criterion_id, verdict]),
    );
    expect(verdicts).toEqual({
      'shell-0': 'failed',
      'shell-1': 'failed',
      'shell-2': 'failed',
      'shell-3': 'failed',
      'shell-4': 'failed',
      'shell-5': 'passed',
      db: 'failed',
      'db-exists': 'failed',
      'db-linked': 'failed',
      notes: 'passed',
    });
    expect(verified.verdicts.find(({ criterion_id }) => criterion_id === 'db')?.reason).toMatch(
      /Baton's own database, which criteria never read/,
    );
  });

  it("a session over HTTP may not name a workspace outside the server's folders: 403, nothing written", async () => {
    const link = join(workspace, 'escape');
    symlinkSync(elsewhere, link);
    mkdirSync(join(workspace, 'sub'), { recursive: true });
    const start = (session_id: string, at: string) =>
      fetch(`${server.url}/v1/sessions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${betaToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ session_id, workspace: at }),
      });
    for (const [session_id, at] of [
      ['far', elsewhere],
      ['root', '/'],
      ['link', link],
      ['up', join(workspace, 'sub', '..', '..')],
    ] as const) {
      const answer = await start(session_id, at);
      expect(answer.status, at).toBe(403);
      expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('forbidden');
      const read = await fetch(`${server.url}/v1/sessions/${session_id}/work`, {
        headers: { authorization: `Bearer ${betaToken}` },
      });
      expect(read.status, `session ${session_id} was not written`).toBe(404);
    }
    const inside = await start('inside', join(workspace, 'sub'));
    expect(inside.status).toBe(200);
  });

  it('a session recorded with a foreign workspace (say, by a local CLI) is refused when verified over MCP', async () => {
    const started = await runBaton(
      ['session', 'start', 'planted', '--project', 'beta', '--workspace', elsewhere],
      database,
      workspace,
    );
    expect(started.code, started.stderr).toBe(0);
    const criteria = [
      {
        criterion_id: 'read',
        statement: 'probe',
        kind: { type: 'shell', command: `cat secret.txt; grep -q ${plantedMark} secret.txt` },
      },
    ];
    await ok(beta, 'work_revise', {
      session_id: 'planted',
      contract_id: 'planted',
      objective: 'read the planted file',
      criteria,
      items: [{ item_id: 'read', title: 'Read', criterion_ids: ['read'] }],
    });
    for (const to of ['running', 'ready_for_verification'])
      await ok(beta, 'work_transition', { session_id: 'planted', revision: 1, item_id: 'read', to });
    const refused = await call('work_verify', { session_id: 'planted' });
    expect(refused.isError).toBe(true);
    expect((refused.structuredContent as { error: { code: string } }).error.code).toBe('forbidden');
    const snapshot = await ok<{ projection: { verdicts?: unknown[] } | null }>(beta, 'work_get', {
      session_id: 'planted',
    });
    expect(JSON.stringify(snapshot)).not.toContain('"verdict":"passed"');
    // A child over HTTP inherits its parent's workspace, and is held to the server's folders too.
    const child = await fetch(`${server.url}/v1/sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${betaToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ session_id: 'planted-child', parent_session_id: 'planted' }),
    });
    expect(child.status).toBe(403);
    expect(((await child.json()) as { error: { code: string } }).error.code).toBe('forbidden');
  });

  it('baton serve --workspace-root lets sessions work in one more folder, and refuses a folder that is not one', async () => {
    const wider = await spawnServe(database, workspace, { args: ['--workspace-root', elsewhere] });
    try {
      const answer = await fetch(`${wider.url}/v1/sessions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${betaToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ session_id: 'wider', workspace: elsewhere }),
      });
      expect(answer.status).toBe(200);
    } finally {
      expect(await wider.stop()).toBe(0);
    }
    const refused = await runBaton(
      ['serve', '--workspace-root', join(elsewhere, 'missing')],
      database,
      workspace,
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--workspace-root .*missing.* is not a folder on this machine/);
  });

  it("no answer beta received, and nothing in beta's ledger, holds alpha's record or the planted file", async () => {
    const store = await openSqliteStore({ path: database });
    let ledger = '';
    try {
      for (const session_id of ['probe-ledger', 'planted']) {
        await exportStream({ store }, { project_id: 'beta', kind: 'session', session_id }, (chunk) => {
          ledger += chunk;
        });
      }
    } finally {
      await store.close();
    }
    // The dump probe's output is there: the folder's listing, without a byte of the files.
    expect(ledger).toContain('ls -A .baton; cat .baton/*');
    expect(ledger).toMatch(/\.gitignore\\nbaton\.db\\nbaton\.db-shm\\nbaton\.db-wal/);
    const everything = `${answers.join('\n')}\n${ledger}`;
    expect(everything).not.toContain(alphaCanary);
    expect(everything).not.toContain(plantedCanary);
  });
});
