import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { describeStore, expectBatonError } from '../src/store/conformance/store.conformance.ts';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { openThreadedSqliteStore } from '../src/store/sqlite/threaded-store.ts';
import type { Store } from '../src/store/store.ts';

describeStore('sqlite', () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-store-'));
  const path = join(dir, 'baton.db');
  const opened: Store[] = [];
  return Promise.resolve({
    async open() {
      const store = await openSqliteStore({
        path,
      });
      opened.push(store);
      return store;
    },
    async dispose() {
      for (const store of opened) await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  });
});

describe('SQLite under a held write lock', () => {
  it('answers unavailable, not a raw error, when the lock outlasts the busy timeout', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-lock-'));
    const path = join(dir, 'baton.db');
    const store = await openSqliteStore({ path, busyTimeoutMs: 100 });
    await store.createProject('acme');
    const other = new DatabaseSync(path);
    other.exec('BEGIN IMMEDIATE');
    try {
      await expectBatonError(
        store.captureSource({ project_id: 'acme', scope_id: 's' }, { source_id: 'x', content: 1 }),
        'unavailable',
      );
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    expect(
      (await store.captureSource({ project_id: 'acme', scope_id: 's' }, { source_id: 'x', content: 1 }))
        .position,
    ).toBe(1);
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
});

/**
 * A database file this process may not write (here made immutable with chattr, which binds
 * root too): refused at open with what to fix, before any write could fail halfway.
 */
function immutable(path: string, on: boolean): boolean {
  try {
    execFileSync('chattr', [on ? '+i' : '-i', path], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('SQLite on a file it may not write', () => {
  it('refuses at open, inline and with the writer thread, naming the file', async (test) => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-readonly-'));
    const path = join(dir, 'baton.db');
    try {
      const store = await openSqliteStore({ path });
      await store.createProject('acme');
      await store.close();
      if (!immutable(path, true)) {
        const reason = 'chattr +i is not available here (needs root on an ext4-like file system)';
        console.warn(`SKIPPED: ${reason}`);
        test.skip(reason);
      }
      for (const open of [openSqliteStore, openThreadedSqliteStore]) {
        const error = await expectBatonError(open({ path }), 'invalid_input');
        expect(error.message).toContain(`cannot write the SQLite database ${path}`);
      }
    } finally {
      immutable(path, false);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a new SQLite database', () => {
  it('is readable by its owner only: the .baton folder 0700, the file and its -wal and -shm 0600, inline and with the writer thread', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-mode-'));
    const previous = process.umask(0o022);
    try {
      for (const [name, open] of [
        ['inline', openSqliteStore],
        ['threaded', openThreadedSqliteStore],
      ] as const) {
        const folder = join(dir, name, '.baton');
        const path = join(folder, 'baton.db');
        const store = await open({ path });
        await store.createProject('acme');
        const mode = (file: string) => (statSync(file).mode & 0o777).toString(8);
        expect({
          folder: mode(folder),
          file: mode(path),
          wal: mode(`${path}-wal`),
          shm: mode(`${path}-shm`),
        }).toEqual({
          folder: '700',
          file: '600',
          wal: '600',
          shm: '600',
        });
        await store.close();
      }
    } finally {
      process.umask(previous);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
