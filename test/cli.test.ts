import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { commands } from '../src/cli/run.ts';

const main = join(import.meta.dirname, '../src/cli/main.ts');
const exec = promisify(execFile);

let dir: string;

async function baton(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [main, ...args], {
      cwd: dir,
      env: { ...process.env, BATON_DATABASE_URL: '' },
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
  it('start creates the SQLite ledger under .baton/ and says what to do next', async () => {
    const result = await baton('start');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Baton ledger ready on SQLite');
    expect(result.stdout).toContain('project default');
    expect(result.stdout).toContain('Next:');
    expect(readFileSync(join(dir, '.baton/baton.db')).length).toBeGreaterThan(0);
  });

  it('captures idempotently and refuses changed content with exit 1 and the stored digest', async () => {
    await baton('start');
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
    );
    expect(again.stdout).toBe(first.stdout);
    const changed = await baton('capture', '--scope', 'w', '--source-id', 'n1', '--text', 'other');
    expect(changed.code).toBe(1);
    expect(changed.stderr).toContain('conflict');
    expect(changed.stderr).toContain(receipt.digest);
  });

  it('exports and imports a stream, warning about a torn last line', async () => {
    await baton('start');
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
    expect(JSON.parse(imported.stdout)).toMatchObject({ entries: 2 });
    const read = await baton('read', '--scope', 'copy');
    expect(read.stdout.trim().split('\n').length).toBe(2);
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

  it('has --help for every command', async () => {
    expect((await baton('--help')).stdout).toContain('Commands:');
    for (const name of Object.keys(commands)) {
      const result = await baton(...name.split(' '), '--help');
      expect(result.code, name).toBe(0);
      expect(result.stdout, name).toContain('Usage: baton');
    }
  });
});
