/**
 * The `baton` CLI with a running server: `baton serve` as a subprocess on a free port, then the
 * same commands with --server and --token (or BATON_SERVER and BATON_TOKEN); `baton start` (what
 * `npm start` runs) printing its address and a working token; `baton mcp` over stdio with the
 * official MCP client; graceful stop on SIGTERM.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { tmpdir } from 'node:os';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClient } from '../src/client/index.ts';
import { createToken } from '../src/app/auth.ts';
import { handoffCurrentWork } from '../src/app/continuity.ts';
import { commitHandoff } from '../src/app/handoffs.ts';
import { systemClock } from '../src/core/clock.ts';
import type { JsonObject } from '../src/core/json.ts';
import type { ScopeKey } from '../src/core/ledger/names.ts';
import { startServer } from '../src/http/server.ts';
import { run } from '../src/cli/run.ts';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../src/store/store.ts';

import { cliEnv, cliMain, tempWorkTree, type CliResult, type WorkTree } from './helpers/git.ts';
import { spawnBaton, type Running } from './helpers/spawn.ts';

function ok(result: CliResult): CliResult {
  expect(result.code, result.stderr).toBe(0);
  return result;
}

let tree: WorkTree;
const running: Running[] = [];

beforeEach(async () => {
  tree = await tempWorkTree();
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((process) => process.stop()));
  tree.dispose();
});

describe('baton CLI with a server', () => {
  it('serves, takes the relay over HTTP with --server and --token, and stops on SIGTERM', async () => {
    const { token } = JSON.parse(ok(await tree.baton(['init', '--json'])).stdout) as {
      token: { token: string };
    };
    const server = spawnBaton(['serve', '--port', '0', '--quiet'], tree.repo, cliEnv(tree.database));
    running.push(server);
    const [, url] = await server.waitFor(/Baton serving on (http:\/\/\S+) /);
    ok(await tree.baton(['bind', 'remote-work']));

    const remote = ['--server', url!, '--token', token.token];
    const first = ok(await tree.baton(['handoff', 'Write the importer', ...remote]));
    expect(first.stdout).toContain('Revision 1 of remote-work committed');
    const env = { BATON_SERVER: url!, BATON_TOKEN: token.token };
    const second = JSON.parse(
      ok(await tree.baton(['handoff', 'Test the importer', '--json'], { env })).stdout,
    ) as {
      revision: { revision: number };
    };
    expect(second.revision.revision).toBe(2);
    expect(ok(await tree.baton(['continue', ...remote])).stdout).toContain('Next action: Test the importer');
    const ack = ok(
      await tree.baton([
        'ack',
        'accepted',
        '--confirm-workspace',
        '--confirm-capability',
        '--confirm-authorization',
        ...remote,
      ]),
    );
    expect(ack.stdout).toContain('Receipt accepted for revision 2');
    ok(
      await tree.baton(
        ['outcome', '--status', 'failed', '--summary', 'Importer crashes', '--receipt', 'active'],
        { env },
      ),
    );
    const report = JSON.parse(ok(await tree.baton(['report', '--json'], { env })).stdout) as {
      revision_count: number;
      continuity: { outcome_state: string };
    };
    expect(report).toMatchObject({ revision_count: 2, continuity: { outcome_state: 'covered' } });

    // The server wrote to the same ledger the local store reads.
    const local = JSON.parse(ok(await tree.baton(['continuity', '--json'])).stdout) as {
      outcome_state: string;
    };
    expect(local.outcome_state).toBe('covered');

    const wrongProject = await tree.baton(['metrics', '--project', 'other'], { env });
    expect(wrongProject.code).toBe(2);
    expect(wrongProject.stderr).toContain('the token decides the project');
    const badToken = await tree.baton(['metrics', '--server', url!, '--token', 'baton_nope']);
    expect(badToken.code).toBe(1);
    expect(badToken.stderr).toContain('unauthorized');
    expect(badToken.stderr).toContain('--token TOKEN or BATON_TOKEN');
    // A local-only command with a server configured says that it does not use it.
    const localOnly = await tree.baton(['read', '--scope', 'remote-work'], {
      env: { ...env, BATON_DATABASE_URL: join(tree.dir, 'absent.db') },
    });
    expect(localOnly.code).toBe(1);
    expect(localOnly.stderr).toContain('baton read reads the local database only; BATON_SERVER is not used');

    expect(await server.stop()).toBe(0);
    expect(server.stderr()).toContain('stopped');
  });

  it('refuses a port out of range as a usage error, and a database path it cannot use with what to fix', async () => {
    for (const port of ['65536', '99999', '123456789012345678901234']) {
      const refused = await tree.baton(['serve', '--port', port]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(`--port takes a whole number from 0 to 65535, not "${port}"`);
      expect(refused.stderr).not.toMatch(/\n\s+at /);
    }
    // A folder inside a file, a folder, a file that is not SQLite: refused with what to fix, the
    // same from the writer thread (serve) as from a command that writes inline (init), never a stack.
    writeFileSync(join(tree.dir, 'a-file'), 'not a folder');
    writeFileSync(join(tree.dir, 'junk.db'), 'text, not a SQLite database. '.repeat(40));
    const refusals = [
      [
        join(tree.dir, 'a-file', 'baton.db'),
        /invalid_input: the database's folder .*a-file cannot be created/,
      ],
      [tree.dir, /invalid_input: cannot use .* as a SQLite database \(unable to open database file\)/],
      [
        join(tree.dir, 'junk.db'),
        /invalid_input: cannot use .*junk\.db as a SQLite database \(file is not a database\)/,
      ],
    ] as const;
    for (const [path, reason] of refusals) {
      for (const command of [
        ['serve', '--port', '0'],
        ['init', '--project', 'p'],
      ]) {
        const failed = await tree.baton([...command, '--database', path]);
        expect(failed.code, failed.stderr).toBe(1);
        expect(failed.stderr).toMatch(new RegExp(`^baton ${command[0]}: ${reason.source}`));
        expect(failed.stderr).not.toMatch(/\n\s+at /);
      }
    }
  });

  it('says what to do when it cannot listen: a port in use, an address this machine does not have', async () => {
    const taken = createNetServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    try {
      const inUse = await tree.baton(['serve', '--port', String(port)]);
      expect(inUse.code).toBe(1);
      expect(inUse.stderr).toContain(`127.0.0.1:${port} is in use by another program`);
      expect(inUse.stderr).toContain('--port 0');
      expect(inUse.stderr).not.toMatch(/\n\s+at /);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
    // 192.0.2.0/24 is reserved for documentation: no machine has it.
    const foreign = await tree.baton(['serve', '--host', '192.0.2.1', '--port', '0']);
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toContain('this machine has no address 192.0.2.1');
    expect(foreign.stderr).not.toMatch(/\n\s+at /);
  });

  it('after losing a commit race, says to read the new revision and hand off again, not to retry', async () => {
    const store = await openSqliteStore({ path: join(tree.dir, 'race.db') });
    const deps = { store, clock: systemClock };
    await store.createProject('default');
    const { token } = await createToken(deps, { project_id: 'default', label: 'race' });
    // Another handoff commits on the same head just before this one's commit reaches the store.
    const racing: Store = new Proxy(store, {
      get(target, property) {
        if (property !== 'commitRevision') {
          const value = Reflect.get(target, property, target) as unknown;
          return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
        }
        return async (scope: ScopeKey, expected_head: number, body: JsonObject) => {
          const rival = await handoffCurrentWork(deps, {
            project_id: scope.project_id,
            scope_id: scope.scope_id,
            source_id: 'rival',
            objective: 'The rival',
            current_state: [],
            disposition: 'continue',
            next_action: { text: 'Rival next', basis: 'declared' },
          });
          await commitHandoff(deps, { ...scope, prepared: rival.digest, expected_head });
          return target.commitRevision(scope, expected_head, body);
        };
      },
    });
    const server = await startServer({ deps: { ...deps, store: racing }, port: 0, logger: false });
    try {
      const lost = await tree.baton(['handoff', 'Fix the login', '--scope', 'my work'], {
        env: { BATON_SERVER: server.url, BATON_TOKEN: token },
      });
      expect(lost.code).toBe(1);
      expect(lost.stderr).toContain('revision_conflict');
      expect(lost.stderr).toContain(
        "Another handoff was committed meanwhile; this one was prepared on revision 0. Read the latest (baton continue --scope 'my work'), then hand off again.",
      );
      expect(lost.stderr).not.toContain('Retry');
    } finally {
      await server.close();
      await store.close();
    }
  });

  it('start (npm start) creates the project and a first token, serves, and prints both', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-start-'));
    try {
      const env = cliEnv('');
      const started = spawnBaton(['start', '--port', '0', '--quiet'], dir, env);
      running.push(started);
      const [, url] = await started.waitFor(/Baton is running at (http:\/\/\S+)\n/);
      const [, token] = await started.waitFor(/\n {2}(baton_\S+)\n/);
      expect(started.stdout()).toContain('project default');
      await started.waitFor(/Semantic criteria: no \[judge\] in baton\.toml, so they stay unverified/);
      expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: 'ok' });
      const client = createClient({ baseUrl: url!, token: token! });
      expect((await client.getMetrics()).project_id).toBe('default');
      expect(await started.stop()).toBe(0);

      writeFileSync(join(dir, 'baton.toml'), '[judge]\nprovider = "anthropic"\nmodel = "claude-judge"\n');
      const again = spawnBaton(['start', '--port', '0', '--quiet'], dir, {
        ...env,
        ANTHROPIC_API_KEY: 'sk-a',
      });
      running.push(again);
      await again.waitFor(/Baton is running at/);
      await again.waitFor(/Stop with Ctrl-C/);
      expect(again.stdout()).toContain('has 1 token(s) already');
      await again.waitFor(
        /Semantic criteria: judged by anthropic\/claude-judge at https:\/\/api\.anthropic\.com \(key ANTHROPIC_API_KEY: set\)\n/,
      );
      expect(again.stdout()).not.toContain('sk-a');
      expect(again.stdout()).not.toMatch(/baton_[\w-]{20,}/);
      expect(await again.stop()).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('mcp speaks MCP over stdio for the local project', async () => {
    ok(await tree.baton(['init']));
    ok(await tree.baton(['handoff', 'Read the logs', '--scope', 'm']));
    const client = new Client({ name: 'cli-test', version: '1.0.0' });
    const env = Object.fromEntries(
      Object.entries(cliEnv(tree.database)).filter(
        (entry): entry is [string, string] => entry[1] !== undefined,
      ),
    );
    await client.connect(
      new StdioClientTransport({ command: process.execPath, args: [cliMain, 'mcp'], cwd: tree.repo, env }),
    );
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toContain('continue_handoff');
      const result = await client.callTool({
        name: 'continue_handoff',
        arguments: { scope_id: 'm', selection: 'latest' },
      });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({ selection: { kind: 'exact', revision: 1 } });
    } finally {
      await client.close();
    }
  });

  it('says the server answered in a form it cannot read, instead of crashing, when a success body has the wrong shape', async () => {
    let body = '{}';
    const other = createHttpServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'baton-api': 'v1' }).end(body);
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    const commands = [
      ['report'],
      ['report', '--json'],
      ['continuity'],
      ['context'],
      ['metrics'],
      ['continue'],
      ['handoff', 'the parser is done'],
      [
        'ack',
        'accepted',
        '--revision',
        '1',
        '--confirm-workspace',
        '--confirm-capability',
        '--confirm-authorization',
      ],
      ['outcome', '--status', 'succeeded', '--summary', 'done', '--objective', 'parse'],
      ['experience', 'list'],
      ['work', 'show', 'session-1'],
      ['contract', '--objective', 'ship it', '--criterion', 'tests pass'],
    ];
    try {
      for (const shape of ['{}', 'null', '[]', '"text"', '{"revision":{}}']) {
        body = shape;
        for (const words of commands) {
          const out: string[] = [];
          const err: string[] = [];
          const code = await run([...words, '--server', url, '--token', 'baton_test'], {
            out: (text) => out.push(text),
            err: (text) => err.push(text),
            env: { BATON_SCOPE: 'parser' },
            cwd: tree.repo,
          });
          const said = err.join('');
          const what = `${words.join(' ')} answered ${shape}: ${said}`;
          expect([0, 1], what).toContain(code);
          if (code === 1) expect(said, what).toContain(`the server at ${url}`);
          if (shape === 'null' || shape === '"text"') expect(code, what).toBe(1);
        }
      }
    } finally {
      await new Promise((resolve) => other.close(resolve));
    }
  });
});
