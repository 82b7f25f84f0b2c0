import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { operations } from '../src/app/operations.ts';
import { commands, run } from '../src/cli/run.ts';
import { spawnServe } from './helpers/serve-process.ts';

const main = join(import.meta.dirname, '../src/cli/main.ts');
const exec = promisify(execFile);

let dir: string;

async function baton(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [main, ...args], {
      cwd: dir,
      env: { ...process.env, BATON_DATABASE_URL: '', BATON_SERVER: '', BATON_TOKEN: '', BATON_SCOPE: '' },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'baton-cli-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('baton CLI', () => {
  it('start --no-serve creates the SQLite ledger under .baton/ and says what to do next', async () => {
    const result = await baton('start', '--no-serve');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Baton ledger ready on SQLite');
    expect(result.stdout).toContain('project default');
    expect(result.stdout).toContain('Next:');
    expect(readFileSync(join(dir, '.baton/baton.db')).length).toBeGreaterThan(0);
    expect(readFileSync(join(dir, '.baton/.gitignore'), 'utf8')).toBe('*\n');
  });

  it('says what to run next as it was started: baton from an install, npm run baton -- from npm start', async () => {
    const next = async (env: Record<string, string>) => {
      const out: string[] = [];
      const code = await run(['start', '--no-serve'], {
        out: (text) => out.push(text),
        err: () => {},
        env,
        cwd: dir,
      });
      expect(code).toBe(0);
      return out.join('').split('Next:')[1]!;
    };
    const installed = await next({});
    expect(installed).toContain('\n  baton capture --scope my-work');
    expect(installed).not.toContain('npm run');
    // npm start (and npm run baton) set npm_lifecycle_event; npm test sets it too, to "test".
    expect(await next({ npm_lifecycle_event: 'start' })).toContain(
      '\n  npm run baton -- capture --scope my-work',
    );
    expect(await next({ npm_lifecycle_event: 'test' })).not.toContain('npm run');
  });

  it('captures idempotently and refuses changed content with exit 1 and the stored digest', async () => {
    await baton('start', '--no-serve');
    const first = await baton(
      'capture',
      '--scope',
      'w',
      '--source-id',
      'n1',
      '--text',
      'state',
      '--kind',
      'note',
      '--json',
    );
    expect(first.code).toBe(0);
    const receipt = JSON.parse(first.stdout) as { position: number; digest: string };
    expect(receipt.position).toBe(1);
    const again = await baton(
      'capture',
      '--scope',
      'w',
      '--source-id',
      'n1',
      '--text',
      'state',
      '--kind',
      'note',
      '--json',
    );
    expect(again.stdout).toBe(first.stdout);
    const changed = await baton('capture', '--scope', 'w', '--source-id', 'n1', '--text', 'other');
    expect(changed.code).toBe(1);
    const human = await baton(
      'capture',
      '--scope',
      'w',
      '--source-id',
      'n1',
      '--text',
      'state',
      '--kind',
      'note',
    );
    expect(human.stdout).toContain(`exact reference: n1@${receipt.digest}`);
    expect(changed.code).toBe(1);
    expect(changed.stderr).toContain('conflict');
    expect(changed.stderr).toContain(receipt.digest);
  });

  it('exports and imports a stream, warning about a torn last line', async () => {
    await baton('start', '--no-serve');
    await baton('capture', '--scope', 'w', '--source-id', 'a', '--text', 'one');
    await baton('capture', '--scope', 'w', '--source-id', 'b', '--text', 'two');
    const out = join(dir, 'w.jsonl');
    const exported = await baton('ledger', 'export', '--scope', 'w', '--out', out);
    expect(exported.code).toBe(0);
    expect(exported.stderr).toContain('exported 2 entries');
    const text = readFileSync(out, 'utf8');
    writeFileSync(out, text + text.split('\n')[1]!.slice(0, 25));
    const imported = await baton('ledger', 'import', out, '--scope', 'copy');
    expect(imported.code).toBe(0);
    expect(imported.stderr).toContain('torn last line skipped');
    expect(imported.stdout).toBe('Imported 2 entries into default/scope/copy.\n');
    const again = await baton('ledger', 'import', out, '--scope', 'copy-2', '--json');
    expect(JSON.parse(again.stdout)).toMatchObject({ entries: 2 });
    const project = await baton('project', 'create', 'billing');
    expect(project.stdout).toBe('Project billing is ready.\n');
    expect(JSON.parse((await baton('project', 'create', 'billing', '--json')).stdout)).toMatchObject({
      project_id: 'billing',
    });
    const retracted = await baton('retract', '--scope', 'w', '--source-id', 'a', '--reason', 'a test');
    expect(retracted.code).toBe(0);
    expect(retracted.stdout).toMatch(/^Source a retracted from w at position 1: its content is purged/);
    const json = await baton('retract', '--scope', 'w', '--source-id', 'b', '--reason', 'a test', '--json');
    expect(JSON.parse(json.stdout)).toMatchObject({
      source_id: 'b',
      content: null,
      retracted: { reason: 'a test' },
    });
    const help = await baton('retract', '--help');
    expect(help.stdout).toMatch(/--source-id ID +the source to purge/);
    expect(help.stdout).toMatch(/--reason TEXT +why/);
    const read = await baton('read', '--scope', 'copy');
    expect(read.stdout.trim().split('\n').length).toBe(2);
  });

  it('lists tokens without their secrets, and revokes one so that a running server refuses it at once', async () => {
    await baton('start', '--no-serve');
    const created = [
      JSON.parse((await baton('token', 'create', '--label', 'ci', '--json')).stdout),
      JSON.parse((await baton('token', 'create', '--read-only', '--label', 'wall', '--json')).stdout),
    ] as { token: string; token_id: string }[];
    const server = await spawnServe(join(dir, '.baton', 'baton.db'), dir);
    try {
      const metrics = (token: string) =>
        fetch(`${server.url}/v1/work/metrics`, { headers: { authorization: `Bearer ${token}` } }).then(
          (response) => response.status,
        );
      expect(await metrics(created[0]!.token)).toBe(200);

      const listed = await baton('token', 'list', '--json');
      expect(listed.code, listed.stderr).toBe(0);
      const tokens = JSON.parse(listed.stdout) as { tokens: Record<string, unknown>[] };
      const mine = tokens.tokens.filter((token) => created.some((c) => c.token_id === token.token_id));
      expect(mine).toEqual([
        {
          token_id: created[0]!.token_id,
          project_id: 'default',
          label: 'ci',
          read_only: false,
          created_at: expect.any(String) as string,
          revoked_at: null,
        },
        {
          token_id: created[1]!.token_id,
          project_id: 'default',
          label: 'wall',
          read_only: true,
          created_at: expect.any(String) as string,
          revoked_at: null,
        },
      ]);
      expect(listed.stdout).not.toContain(created[0]!.token);
      expect(listed.stdout).not.toContain('hash');
      const human = await baton('token', 'list');
      expect(human.stdout).toContain(created[1]!.token_id);
      expect(human.stdout).toContain('read-only');

      const revoked = await baton('token', 'revoke', created[0]!.token_id, '--json');
      expect(revoked.code, revoked.stderr).toBe(0);
      expect(JSON.parse(revoked.stdout)).toMatchObject({
        token_id: created[0]!.token_id,
        revoked_at: expect.any(String) as string,
      });
      expect(await metrics(created[0]!.token)).toBe(401);
      expect(await metrics(created[1]!.token)).toBe(200);
      // Revoking again answers the same record; the list shows when.
      const again = await baton('token', 'revoke', created[0]!.token_id, '--json');
      expect(JSON.parse(again.stdout)).toEqual(JSON.parse(revoked.stdout));
      expect((await baton('token', 'list')).stdout).toMatch(/revoked/);

      const long = await baton('token', 'create', '--label', 'x'.repeat(300));
      expect(long.code).toBe(1);
      expect(long.stderr).toContain('--label');
      const unknown = await baton('token', 'revoke', 'no-such-token');
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain('not_found');
      const pasted = await baton('token', 'revoke', created[1]!.token);
      expect(pasted.code).toBe(2);
      expect(pasted.stderr).toContain("that is a token's secret, not its id");
      expect(pasted.stderr).not.toContain(created[1]!.token);
      expect(await metrics(created[1]!.token)).toBe(200);
      const missing = await baton('token', 'revoke');
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain('TOKEN_ID');
    } finally {
      await server.stop();
    }
  });

  it('answers bad input with a message that says what to fix and a non-zero exit', async () => {
    expect((await baton('frobnicate')).code).toBe(2);
    const noStream = await baton('read');
    expect(noStream.code).toBe(2);
    expect(noStream.stderr).toContain('--scope SCOPE_ID or --session SESSION_ID');
    const missing = await baton('read', '--scope', 'nope');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('not_found');
    const badRange = await baton('read', '--scope', 'nope', '--from', 'x');
    expect(badRange.code).toBe(2);
    const unknownFlag = await baton('status', '--frob');
    expect(unknownFlag.code).toBe(2);
    const badDb = await baton('status', '--database', 'mysql://x');
    expect(badDb.code).toBe(1);
    expect(badDb.stderr).toContain('invalid_input');
  });

  it('has --help with an example for every command', async () => {
    const overview = await baton('--help');
    expect(overview.code).toBe(0);
    for (const name of Object.keys(commands)) expect(overview.stdout).toContain(`  ${name} `);
    expect((await baton('handoff', '--help')).code).toBe(0);
    for (const name of Object.keys(commands)) {
      const out: string[] = [];
      const code = await run([...name.split(' '), '--help'], {
        out: (text) => out.push(text),
        err: () => {},
        env: {},
      });
      expect(code, name).toBe(0);
      expect(out.join(''), name).toContain(`Usage: baton ${name}`);
      expect(out.join(''), name).toMatch(/Examples:\n {2}\S/);
      // Every indented description line starts on the options' column (24), continuations included.
      const misaligned = out
        .join('')
        .split('\n')
        .filter((line) => /^ {3,}\S/.test(line) && !/^ {24}\S/.test(line));
      expect(misaligned, name).toEqual([]);
    }
  });

  it('prints its version with --version, and names the closest command for a mistyped one', async () => {
    const { version } = JSON.parse(readFileSync(join(import.meta.dirname, '../package.json'), 'utf8')) as {
      version: string;
    };
    for (const flag of ['--version', '-v', 'version']) {
      const shown = await baton(flag);
      expect({ flag, code: shown.code, stdout: shown.stdout }).toEqual({
        flag,
        code: 0,
        stdout: `baton ${version} (HTTP API v1, Node ${process.version})\n`,
      });
    }
    const typo = await baton('hnadoff', 'Ship it');
    expect(typo.code).toBe(2);
    expect(typo.stderr).toBe(
      'baton: unknown command "hnadoff"; did you mean baton handoff?\nbaton --help lists the commands\n',
    );
    const grouped = await baton('wrok', 'show');
    expect(grouped.stderr).toContain('did you mean baton work?');
    const unknown = await baton('frobnicate');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe('baton: unknown command "frobnicate"\nbaton --help lists the commands\n');
  });

  it('reaches every registry operation through some command', () => {
    const called = new Set(Object.values(commands).flatMap((command) => command.operations ?? []));
    const named = (operationId: string) =>
      Object.entries(commands).some(
        ([name, command]) => name !== 'call' && (command.operations ?? []).includes(operationId),
      );
    for (const { operationId } of operations) {
      expect(called.has(operationId), operationId).toBe(true);
      expect(named(operationId), `${operationId} has a command of its own`).toBe(true);
    }
  });
});

describe('baton CLI: options out of range and outputs that fail', () => {
  it('refuses an empty --host, a --server without a scheme, and counts out of range, with exit 2', async () => {
    const refusals: [string[], string][] = [
      [['serve', '--host', '', '--port', '0'], '--host takes an address such as 127.0.0.1'],
      [['report', '--server', '127.0.0.1:4680', '--token', 'x'], '--server (or BATON_SERVER) takes an http'],
      [['metrics', '--server', 'notaurl', '--token', 'x', '--json'], 'not "notaurl"'],
      [
        ['work', 'gate', '--session', 's', '--max-blocks', '0'],
        '--max-blocks takes a whole number from 1 to 1000',
      ],
      [
        ['work', 'verify', '--session', 's', '--timeout-ms', '99999999999999'],
        '--timeout-ms takes a whole number from 1 to 2147483647',
      ],
    ];
    for (const [args, message] of refusals) {
      const result = await baton(...args);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toContain(message);
      expect(result.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it('refuses a session workspace that is not a folder, before anything is written', async () => {
    await baton('start', '--no-serve');
    writeFileSync(join(dir, 'a-file'), 'x');
    for (const workspace of [join(dir, 'nonexistent'), join(dir, 'a-file')]) {
      const refused = await baton('session', 'start', 'v', '--workspace', workspace, '--mode', 'managed');
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(`--workspace ${workspace} is not a folder on this machine`);
    }
    expect((await baton('read', '--session', 'v')).code).toBe(1);
    expect((await baton('session', 'start', 'v', '--workspace', '.')).code).toBe(0);
  });

  it('refuses words after a command that takes options only, before doing anything', async () => {
    for (const args of [
      ['init', 'extra'],
      ['report', 's1'],
      ['mcp', 'extra'],
      ['status', 'x'],
    ]) {
      const refused = await baton(...args);
      expect(refused.code, args.join(' ')).toBe(2);
      expect(refused.stderr).toContain(
        `unexpected argument "${args[1]}": baton ${args[0]} takes options only`,
      );
    }
    expect(existsSync(join(dir, '.baton'))).toBe(false);
  });

  it('status of a project that does not exist is not_found, not an empty answer', async () => {
    await baton('start', '--no-serve');
    for (const json of [[], ['--json']]) {
      const missing = await baton('status', '--project', 'nope', ...json);
      expect(missing.code).toBe(1);
      expect(missing.stdout).toBe('');
      expect(missing.stderr).toContain('project nope does not exist');
    }
    expect((await baton('status', '--project', 'default')).stdout).toContain('project default:');
  });

  it('says a JSON input file must hold an object, and what it holds instead', async () => {
    await baton('start', '--no-serve');
    writeFileSync(join(dir, 'list.json'), '[]');
    const refused = await baton('session', 'start', 's', '--capabilities', 'list.json');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('list.json must hold a JSON object, not an array');
  });

  it('answers a file it cannot read with the JSON error envelope under --json', async () => {
    await baton('start', '--no-serve');
    const missing = join(dir, 'missing.txt');
    const failed = await baton('capture', '--scope', 'w', '--source-id', 'm', '--file', missing, '--json');
    expect(failed.code).toBe(1);
    expect(JSON.parse(failed.stderr)).toEqual({
      error: {
        code: 'invalid_input',
        message: `ENOENT: no such file or directory, open '${missing}'`,
        details: { errno: 'ENOENT', syscall: 'open', path: missing },
      },
    });
    // A folder opens and fails only when read: the answer still names it.
    const folder = await baton('capture', '--scope', 'w', '--source-id', 'm', '--file', dir, '--json');
    expect(folder.code).toBe(1);
    expect(JSON.parse(folder.stderr)).toEqual({
      error: {
        code: 'invalid_input',
        message: `EISDIR: ${dir} is a folder: give a file`,
        details: { errno: 'EISDIR', syscall: 'read', path: dir },
      },
    });
    // The same for the other files a command reads: a configuration and an import.
    for (const args of [
      ['serve', '--config', dir, '--port', '0'],
      ['ledger', 'import', dir, '--scope', 'copy'],
    ]) {
      const refused = await baton(...args);
      expect(refused.code, refused.stderr).toBe(1);
      expect(refused.stderr).toBe(
        `baton ${args[0] === 'serve' ? 'serve' : 'ledger import'}: EISDIR: ${dir} is a folder: give a file\n`,
      );
    }
  });

  it('refuses to read a database that does not exist, and leaves none behind', async () => {
    for (const args of [['report'], ['status'], ['report', '--database', 'typo/b.db']]) {
      const missing = await baton(...args);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(
        /^baton (report|status): not_found: no Baton database at \S+: create it with baton init/,
      );
    }
    expect(existsSync(join(dir, '.baton'))).toBe(false);
    expect(existsSync(join(dir, 'typo'))).toBe(false);
  });

  it('hints to create the project only when the project is what is missing', async () => {
    await baton('project', 'create', 'other');
    const missing = await baton('report');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('create the project first: baton init --project default');
    await baton('start', '--no-serve');
    for (const args of [
      ['work', 'show', 'nosuch'],
      ['read', '--session', 'nosuch'],
      ['commit', '--scope', 's', '--prepared', `sha256:${'0'.repeat(64)}`, '--expected-head', '0'],
    ]) {
      const result = await baton(...args);
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toContain('not_found');
      expect(result.stderr).not.toContain('create the project first');
    }
  });

  it('ends quietly when the reader closes the pipe, and fails with exit 1 when the output cannot be written', async () => {
    await baton('start', '--no-serve');
    for (let n = 0; n < 3; n += 1)
      await baton('capture', '--scope', 'w', '--source-id', `n${n}`, '--text', 'x');
    const env = {
      ...process.env,
      BATON_DATABASE_URL: '',
      BATON_SERVER: '',
      BATON_TOKEN: '',
      BATON_SCOPE: '',
    };
    const closed = spawn(process.execPath, [main, 'read', '--scope', 'w'], { cwd: dir, env });
    closed.stdout.destroy();
    let closedErr = '';
    closed.stderr.setEncoding('utf8').on('data', (chunk: string) => (closedErr += chunk));
    const [closedCode] = (await once(closed, 'close')) as [number];
    expect(closedErr).toBe('');
    expect(closedCode).toBe(0);

    const full = openSync('/dev/full', 'w');
    try {
      const failing = spawn(process.execPath, [main, 'status'], {
        cwd: dir,
        env,
        stdio: ['ignore', full, 'pipe'],
      });
      let failingErr = '';
      failing.stderr!.setEncoding('utf8').on('data', (chunk: string) => (failingErr += chunk));
      const [failingCode] = (await once(failing, 'close')) as [number];
      expect(failingErr).toMatch(/^baton: the output could not be written: ENOSPC/);
      expect(failingErr).not.toMatch(/\n\s+at /);
      expect(failingCode).toBe(1);
    } finally {
      closeSync(full);
    }
  });
});
