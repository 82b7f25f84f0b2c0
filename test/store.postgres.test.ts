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

describe.skipIf(!postgresUrl)('PostgreSQL change notifications', () => {
  it('keeps telling subscribers after its notification connection breaks, reconnecting by itself', async () => {
    const schema = freshSchemaName();
    const writer = await openPostgresStore({ url: postgresUrl!, schema });
    const reader = await openPostgresStore({ url: postgresUrl!, schema });
    const admin = new pg.Client({ connectionString: postgresUrl });
    await admin.connect();
    try {
      await writer.createProject('acme');
      const heads: number[] = [];
      const unsubscribe = await reader.subscribe(({ stream, head }) => {
        if (stream.kind === 'session' && stream.session_id === 'live') heads.push(head);
      });
      const session = { project_id: 'acme', kind: 'session', session_id: 'live' } as const;
      await writer.append(session, [{ type: 'user_message', content: 'before' }]);
      await expect.poll(() => heads, { timeout: 5_000 }).toEqual([1]);

      // The notification connections of this schema's stores, and only those: other test files
      // share the server.
      const ended = await admin.query<{ ended: boolean }>(
        'SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE application_name = $1',
        [`baton-listen ${schema}`],
      );
      expect(ended.rows.length).toBeGreaterThanOrEqual(1);

      // Appends go on; once the reader has reconnected, their heads reach its subscriber again.
      // Each poll first looks for the heads appended so far (a notification may arrive after the
      // append's own answer), then appends one more.
      const appended: number[] = [];
      await expect
        .poll(
          async () => {
            if (heads.some((head) => appended.includes(head))) return true;
            const content = `after ${appended.length}`;
            appended.push((await writer.append(session, [{ type: 'user_message', content }]))[0]!.position);
            return false;
          },
          { timeout: 10_000, interval: 200 },
        )
        .toBe(true);
      await unsubscribe();
    } finally {
      await admin.end();
      await reader.close();
      await writer.close();
      await dropSchema(schema);
    }
  });
});
