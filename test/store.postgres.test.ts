import pg from 'pg';
import { describe, expect, it } from 'vitest';
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

describe.skipIf(!postgresUrl)('PostgreSQL schema selection', () => {
  it('keeps every table in the chosen schema even when the URL sets another search_path', async () => {
    const schema = freshSchemaName();
    const url = `${postgresUrl}?options=${encodeURIComponent('-c search_path=public')}`;
    const store = await openPostgresStore({ url, schema });
    try {
      await store.createProject('acme');
      const client = new pg.Client({ connectionString: postgresUrl });
      await client.connect();
      try {
        const tables = await client.query<{ table_schema: string }>(
          "SELECT DISTINCT table_schema FROM information_schema.tables WHERE table_name = 'projects'" +
            ' AND table_schema IN ($1, $2)',
          [schema, 'public'],
        );
        expect(tables.rows.map((row) => row.table_schema)).toEqual([schema]);
      } finally {
        await client.end();
      }
    } finally {
      await store.close();
      await dropSchema(schema);
    }
  });
});
