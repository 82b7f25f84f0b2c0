/**
 * SQLite with its writes on a writer thread (what `baton serve` runs): the whole Store
 * conformance suite, then what the thread adds: a write's caller reads its write even when
 * this turn's snapshot was taken before it; listeners hear of an append before its caller
 * resumes; errors keep their code and data across the thread; a value no JSON could carry is
 * refused; writes after close fail instead of hanging; an idle store does not keep a process
 * alive, and a database it cannot open is refused at open.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fixedClock } from '../src/core/clock.ts';
import { describeStore, expectBatonError } from '../src/store/conformance/store.conformance.ts';
import { openStore } from '../src/store/open.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { openThreadedSqliteStore, ThreadedSqliteStore } from '../src/store/sqlite/threaded-store.ts';
import type { Store } from '../src/store/store.ts';

const exec = promisify(execFile);
const scope = { project_id: 'acme', scope_id: 'relay' } as const;

describeStore('sqlite with a writer thread', () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-thread-'));
  const path = join(dir, 'baton.db');
  const opened: Store[] = [];
  return Promise.resolve({
    async open() {
      const store = await openThreadedSqliteStore({ path });
      opened.push(store);
      return store;
    },
    async dispose() {
      for (const store of opened) await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  });
});

describe('SQLite writer thread', () => {
  let dir: string;
  let path: string;
  let store: ThreadedSqliteStore;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-thread-'));
    path = join(dir, 'baton.db');
    store = await openThreadedSqliteStore({ path });
    await store.createProject('acme');
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Whether another connection (another process) sees the source committed. */
  function committed(source_id: string): boolean {
    const other = new DatabaseSync(path, { readOnly: true });
    try {
      return other.prepare('SELECT 1 FROM entries WHERE source_id = ?').get(source_id) !== undefined;
    } finally {
      other.close();
    }
  }

  it("lets a write's caller read the write, though this turn's snapshot was taken before it", async () => {
    const ref = { scope_id: 'relay', source_id: 'late', digest: `sha256:${'0'.repeat(64)}` } as const;
    // Run in a timer callback: the answer is then handled in the same event-loop turn, before
    // the turn's snapshot would end by itself.
    const seen = await new Promise<unknown>((resolve, reject) => {
      setTimeout(() => {
        void (async () => {
          // This turn's snapshot, taken now, knows no source "late".
          expect((await store.checkSource('acme', ref)).status).toBe('unavailable');
          const written = store.captureSource(scope, { source_id: 'late', content: 'the write' });
          // Hold this turn until the writer thread committed, so its answer is already waiting.
          const until = Date.now() + 10_000;
          while (!committed('late') && Date.now() < until);
          const receipt = await written;
          const read = await store.readSource('acme', receipt.source_ref);
          resolve(read.content);
        })().catch(reject);
      }, 0);
    });
    expect(seen).toBe('the write');
  });

  it('tells listeners of an append before its caller resumes', async () => {
    const heard: number[] = [];
    const unsubscribe = await store.subscribe((change) => heard.push(change.head));
    await store.captureSource(scope, { source_id: 'a', content: 1 });
    expect(heard).toEqual([1]);
    await store.append({ ...scope, kind: 'scope' }, [
      { type: 'note', source_id: 'b', content: 2 },
      { type: 'note', source_id: 'c', content: 3 },
    ]);
    expect(heard).toEqual([1, 3]);
    await unsubscribe();
    await store.captureSource(scope, { source_id: 'd', content: 4 });
    expect(heard).toEqual([1, 3]);
  });

  it('keeps an error code and its data across the thread', async () => {
    const body = { schema: 'test', n: 1 };
    await store.commitRevision(scope, 0, body);
    await expectBatonError(store.commitRevision(scope, 0, { schema: 'test', n: 2 }), 'revision_conflict', {
      actual_head: 1,
    });
    await expectBatonError(store.createProject('Not A Slug'), 'invalid_input');
  });

  it('refuses a value no JSON could carry, and writes nothing', async () => {
    const content = { run: () => 'code' } as unknown as string;
    await expectBatonError(store.captureSource(scope, { source_id: 'f', content }), 'invalid_input');
    expect(committed('f')).toBe(false);
    expect((await store.captureSource(scope, { source_id: 'g', content: 'fine' })).position).toBe(1);
  });

  it('fails writes after close instead of hanging, and closes twice', async () => {
    await store.captureSource(scope, { source_id: 'kept', content: 1 });
    await store.close();
    await expectBatonError(store.captureSource(scope, { source_id: 'lost', content: 2 }), 'unavailable');
    await store.close();
    expect(committed('kept')).toBe(true);
    expect(committed('lost')).toBe(false);
  });

  it('refuses :memory: and a clock of its own at open', async () => {
    await expectBatonError(openThreadedSqliteStore({ path: ':memory:' }), 'invalid_input');
    await expectBatonError(
      openThreadedSqliteStore({ path, clock: fixedClock('2026-01-01T00:00:00.000Z') }),
      'invalid_input',
    );
  });

  it('is what openStore gives a server on a file, and an in-memory database stays inline', async () => {
    const served = await openStore(
      { backend: 'sqlite', path: join(dir, 'served.db') },
      { writerThread: true },
    );
    const memory = await openStore({ backend: 'sqlite', path: ':memory:' }, { writerThread: true });
    try {
      expect(served).toBeInstanceOf(ThreadedSqliteStore);
      expect(memory).toBeInstanceOf(SqliteStore);
      await memory.createProject('acme');
      expect((await memory.captureSource(scope, { source_id: 'm', content: 1 })).position).toBe(1);
    } finally {
      await served.close();
      await memory.close();
    }
  });

  it('refuses a file that is not a database, with no thread left behind', async () => {
    const junk = join(dir, 'junk.db');
    writeFileSync(
      junk,
      'this is not a SQLite database, only text long enough to be read as one. '.repeat(20),
    );
    await expect(openThreadedSqliteStore({ path: junk })).rejects.toThrow(/not a database/);
  });
});

/**
 * Run `node [flags] script` (script is an ES module given the threaded store as
 * `openThreadedSqliteStore` and a fresh folder as `dir`) from a file, or with -e when `how`
 * says so; its standard output, trimmed.
 */
async function runNode(
  body: string,
  flags: readonly string[] = [],
  how: readonly string[] = [],
): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-thread-'));
  try {
    const module = new URL('../src/store/sqlite/threaded-store.ts', import.meta.url).href;
    const script = `
      const { openThreadedSqliteStore } = await import(${JSON.stringify(module)});
      const dir = ${JSON.stringify(dir)};
      ${body}
    `;
    const file = join(dir, 'start.mjs');
    writeFileSync(file, script);
    const args = how.length === 0 ? [...flags, file] : [...flags, ...how, script];
    const { stdout } = await exec(process.execPath, args, { timeout: 20_000 });
    return stdout.trim();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('SQLite writer thread in a process', () => {
  it('does not keep an idle process alive', async () => {
    const stdout = await runNode(
      `const store = await openThreadedSqliteStore({ path: dir + '/b.db' });
      await store.createProject('acme');
      const receipt = await store.captureSource({ project_id: 'acme', scope_id: 's' }, { source_id: 'x', content: 1 });
      const unused = await openThreadedSqliteStore({ path: dir + '/c.db' });
      console.log(receipt.position, (await unused.listProjects()).length);`,
      [],
      ['--input-type=module', '-e'],
    );
    expect(stdout).toBe('1 0');
  });

  // A thread refuses V8 and process-wide flags in an explicit execArgv (ERR_WORKER_INVALID_EXEC_ARGV),
  // yet `node --max-old-space-size=… baton serve` is how a server's memory is sized.
  it.each([
    ['a script', []],
    ['--input-type=module -e', ['--input-type=module', '-e']],
  ])('starts when the process runs with V8 and process-wide flags, from %s', async (_from, how) => {
    const stdout = await runNode(
      `const store = await openThreadedSqliteStore({ path: dir + '/b.db' });
      await store.createProject('acme');
      const receipt = await store.captureSource({ project_id: 'acme', scope_id: 's' }, { source_id: 'x', content: 1 });
      await store.close();
      console.log(receipt.position);`,
      ['--max-old-space-size=256', '--stack-size=900', '--title=baton-test', '--expose-gc'],
      how,
    );
    expect(stdout).toBe('1');
  });
});
