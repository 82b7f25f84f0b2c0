/** A SQLite store in a fresh temporary folder, removed on dispose. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';

export async function tempSqliteStore(): Promise<{
  store: SqliteStore;
  path: string;
  dispose(): Promise<void>;
}> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-test-'));
  const path = join(dir, 'baton.db');
  const store = await openSqliteStore({ path, synchronous: 'normal' });
  return {
    store,
    path,
    async dispose() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
