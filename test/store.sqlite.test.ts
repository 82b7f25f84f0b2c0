import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeStore } from '../src/store/conformance/store.conformance.ts';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
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
