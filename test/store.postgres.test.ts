import { describe, it } from 'vitest';
import { describeStore } from '../src/store/conformance/store.conformance.ts';
import { openPostgresStore } from '../src/store/postgres/postgres-store.ts';
import type { Store } from '../src/store/store.ts';
import { dropSchema, freshSchemaName, postgresUrl } from './helpers/postgres.ts';

if (postgresUrl) {
  const url = postgresUrl;
  describeStore('postgres', () => {
    const schema = freshSchemaName();
    const opened: Store[] = [];
    return Promise.resolve({
      async open() {
        const store = await openPostgresStore({
          url,
          schema,
        });
        opened.push(store);
        return store;
      },
      async dispose() {
        for (const store of opened) await store.close();
        await dropSchema(schema);
      },
    });
  });
} else {
  describe('Store conformance: postgres', () => {
    it.skip('needs BATON_TEST_POSTGRES_URL (skipped: no PostgreSQL configured)', () => {});
  });
}
