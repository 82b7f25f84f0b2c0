/**
 * `baton ledger export` and `baton ledger import` run as a person runs them: an export that
 * cannot be written fails in one line with exit 1 and leaves no file and no success line, and
 * an export cut short is refused on import.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, existsSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { cliEnv, cliMain, tempWorkTree, type CliResult, type WorkTree } from './helpers/git.ts';

let tree: WorkTree;

beforeEach(async () => {
  tree = await tempWorkTree();
  expect((await tree.baton(['init'])).code).toBe(0);
  for (const [id, text] of [
    ['a', 'hi'],
    ['b', 'hi2'],
  ] as const) {
    expect((await tree.baton(['capture', '--scope', 'x', '--source-id', id, '--text', text])).code).toBe(0);
  }
});
afterEach(() => tree.dispose());

/** Run `baton ARGS` through sh, its stdout on fd, e.g. with `ulimit -f` first. */
async function batonVia(
  shell: string,
  args: readonly string[],
  stdout: number | 'pipe' = 'pipe',
): Promise<CliResult> {
  const child = spawn('sh', ['-c', `${shell}; exec "$0" "$@"`, process.execPath, cliMain, ...args], {
    cwd: tree.repo,
    env: cliEnv(tree.database),
    stdio: ['ignore', stdout, 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const [code] = (await once(child, 'close')) as [number];
  return { code, stdout: out, stderr: err };
}

function expectOneLine(stderr: string, pattern: RegExp): void {
  expect(stderr).toMatch(/^[^\n]+\n$/);
  expect(stderr).toMatch(pattern);
}

describe('baton ledger export --out', () => {
  it('refuses a file that exists, in one line, and leaves it as it was', async () => {
    const out = join(tree.dir, 'e.jsonl');
    writeFileSync(out, 'keep me\n');
    const result = await tree.baton(['ledger', 'export', '--scope', 'x', '--out', out]);
    expect(result.code).toBe(1);
    expectOneLine(
      result.stderr,
      /^baton ledger export: --out .*e\.jsonl exists: choose another file or remove it/,
    );
    expect(readFileSync(out, 'utf8')).toBe('keep me\n');
  });

  it('refuses a folder, a missing folder and an empty path, in one line, writing nothing', async () => {
    const folder = await tree.baton(['ledger', 'export', '--scope', 'x', '--out', tree.dir]);
    expect(folder.code).toBe(1);
    expectOneLine(folder.stderr, /^baton ledger export: --out .* is a folder: name a file in it/);

    const missing = join(tree.dir, 'nonexistent', 'd', 'f');
    const nowhere = await tree.baton(['ledger', 'export', '--scope', 'x', '--out', missing]);
    expect(nowhere.code).toBe(1);
    expectOneLine(
      nowhere.stderr,
      /^baton ledger export: --out .*f: the folder .*d does not exist: create it/,
    );
    expect(existsSync(join(tree.dir, 'nonexistent'))).toBe(false);

    const empty = await tree.baton(['ledger', 'export', '--scope', 'x', '--out', '']);
    expect(empty.code).toBe(2);
    expectOneLine(empty.stderr, /^baton ledger export: --out is empty: name a file/);
  });

  it('removes the file of an export that fails, and prints no success line', async () => {
    const out = join(tree.dir, 'missing-stream.jsonl');
    const missing = await tree.baton(['ledger', 'export', '--scope', 'nosuch', '--out', out]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('not_found');
    expect(existsSync(out)).toBe(false);

    // 40 kB entries against a 32 kB file size limit: the second write fails with EFBIG.
    const big = 'a'.repeat(40_000);
    for (const id of ['big-1', 'big-2'])
      await tree.baton(['capture', '--scope', 'big', '--source-id', id, '--text', big]);
    const large = join(tree.dir, 'big.jsonl');
    const result = await batonVia('ulimit -f 64', ['ledger', 'export', '--scope', 'big', '--out', large]);
    expect(result.code).toBe(1);
    expectOneLine(result.stderr, /^baton ledger export: --out .*big\.jsonl could not be written \(EFBIG/);
    expect(existsSync(large)).toBe(false);
  });

  it('removes the partial file when interrupted (Ctrl-C or SIGTERM)', async () => {
    const store = await openSqliteStore({ path: tree.database });
    try {
      const stream = { project_id: 'default', kind: 'scope', scope_id: 'long' } as const;
      for (let batch = 0; batch < 40; batch += 1) {
        const notes = Array.from({ length: 1000 }, (_, n) => ({
          type: 'note',
          source_id: `n-${batch}-${n}`,
          content: { text: `note ${n} of batch ${batch}` },
        }));
        await store.append(stream, notes);
      }
    } finally {
      await store.close();
    }
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      const out = join(tree.dir, `long-${signal}.jsonl`);
      const child = spawn(process.execPath, [cliMain, 'ledger', 'export', '--scope', 'long', '--out', out], {
        cwd: tree.repo,
        env: cliEnv(tree.database),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let err = '';
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
        err += chunk;
        // Interrupted once the first progress line shows the file half written.
        if (err.includes('exported 10000/40000')) child.kill(signal);
      });
      const [code, killed] = (await once(child, 'close')) as [number | null, NodeJS.Signals | null];
      expect(err).toContain('exported 10000/40000');
      expect(err).not.toContain('exported 40000 entries');
      expect({ code, killed }).toEqual({ code: null, killed: signal });
      expect(existsSync(out)).toBe(false);
    }
  });

  it('writes the whole stream, then says so', async () => {
    const out = join(tree.dir, 'e.jsonl');
    const result = await tree.baton(['ledger', 'export', '--scope', 'x', '--out', out]);
    expect(result).toMatchObject({ code: 0, stdout: '' });
    expect(result.stderr).toBe(`exported 2 entries of default/scope/x to ${out}\n`);
    expect(readFileSync(out, 'utf8').trimEnd().split('\n')).toHaveLength(3);
  });
});

describe('baton ledger export to stdout', () => {
  // The command waits for stdout (Io.flushed) before it says "exported".
  it('says nothing of success when stdout cannot be written', async () => {
    const full = openSync('/dev/full', 'w');
    try {
      const result = await batonVia(':', ['ledger', 'export', '--scope', 'x'], full);
      expect(result.code).toBe(1);
      expectOneLine(result.stderr, /^baton: the output could not be written: ENOSPC/);
    } finally {
      closeSync(full);
    }
  });
});

describe('baton ledger import', () => {
  it('refuses an export cut short (head -2), naming the head and the count, and writes nothing', async () => {
    const out = join(tree.dir, 'e.jsonl');
    expect((await tree.baton(['ledger', 'export', '--scope', 'x', '--out', out])).code).toBe(0);
    const cut = join(tree.dir, 't.jsonl');
    writeFileSync(cut, readFileSync(out, 'utf8').split('\n').slice(0, 2).join('\n') + '\n');
    const refused = await tree.baton(['ledger', 'import', cut, '--scope', 'y', '--project', 'fresh']);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/^baton ledger import: invalid_input: .*head 2.* 1 entr/);
    expect(refused.stderr).toContain('{"head":2,"entries":1}');
    const status = await tree.baton(['status', '--json']);
    expect((JSON.parse(status.stdout) as { projects: { project_id: string }[] }).projects).toEqual([
      expect.objectContaining({ project_id: 'default' }),
    ]);
    const read = await tree.baton(['read', '--scope', 'y']);
    expect(read.code).toBe(1);
    expect(read.stderr).toContain('not_found');

    const whole = await tree.baton(['ledger', 'import', out, '--scope', 'y', '--json']);
    expect(whole.code).toBe(0);
    expect(JSON.parse(whole.stdout)).toMatchObject({ entries: 2, warnings: [] });
  });

  /** The project ids `baton status --json` lists. */
  async function projects(): Promise<string[]> {
    const status = await tree.baton(['status', '--json']);
    return (JSON.parse(status.stdout) as { projects: { project_id: string }[] }).projects.map(
      (project) => project.project_id,
    );
  }

  it('imports into --project the stream the header names, creating that project', async () => {
    const out = join(tree.dir, 'e.jsonl');
    expect((await tree.baton(['ledger', 'export', '--scope', 'x', '--out', out])).code).toBe(0);
    const result = await tree.baton(['ledger', 'import', out, '--project', 'other', '--json']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      stream: { project_id: 'other', kind: 'scope', scope_id: 'x' },
      entries: 2,
    });
    expect(await projects()).toEqual(['default', 'other']);
    const read = await tree.baton(['read', '--scope', 'x', '--project', 'other']);
    expect(read.code).toBe(0);
    expect(
      read.stdout
        .trimEnd()
        .split('\n')
        .map((line) => (JSON.parse(line) as { content: string }).content),
    ).toEqual(['hi', 'hi2']);
  });

  it('leaves no new project behind when the store refuses the file', async () => {
    const out = join(tree.dir, 'e.jsonl');
    expect((await tree.baton(['ledger', 'export', '--scope', 'x', '--out', out])).code).toBe(0);
    const forged = join(tree.dir, 'f.jsonl');
    writeFileSync(forged, readFileSync(out, 'utf8').replace('"hi2"', '"forged"'));
    const refused = await tree.baton(['ledger', 'import', forged, '--scope', 'y', '--project', 'third']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /^baton ledger import: invalid_input: .*position 2 does not match its digest/,
    );
    // A stream that exists already is refused too, and its would-be project is not made either.
    const taken = await tree.baton(['ledger', 'import', out, '--session', 'x', '--project', 'fourth']);
    expect(taken.code).toBe(0);
    const again = await tree.baton(['ledger', 'import', out, '--session', 'x', '--project', 'fourth']);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('conflict');
    expect(await projects()).toEqual(['default', 'fourth']);
  });
});
