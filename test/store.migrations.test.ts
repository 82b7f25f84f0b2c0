/**
 * Databases made by an earlier migration set open with today's code and keep their records.
 * The fixtures are frozen: they were written by the first release (schema version 2).
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { collect } from '../src/store/conformance/store.conformance.ts';
import { postgresMigrations } from '../src/store/postgres/postgres-migrations.ts';
import { openPostgresStore } from '../src/store/postgres/postgres-store.ts';
import { sqliteMigrations } from '../src/store/sqlite/sqlite-migrations.ts';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../src/store/store.ts';
import { dropSchema, freshSchemaName, postgresUrl } from './helpers/postgres.ts';

const fixtures = join(import.meta.dirname, 'fixtures/upgrade');
const scope = { project_id: 'acme', scope_id: 'auto-refresh' };
const stream = { ...scope, kind: 'scope' as const };

async function expectUpgraded(store: Store): Promise<void> {
  expect((await store.getProject('acme')).project_id).toBe('acme');
  const entries = await collect(store.readStream(stream));
  expect(entries.map((e) => [e.position, e.source_id, e.content])).toEqual([
    [1, 'contract', { objective: 'Add safe auto-refresh' }],
    [2, 'note', 'plain note'],
    [3, 'leak', null],
  ]);
  expect(entries[2]!.retracted).toEqual({ at: '2026-12-02T16:00:00.000Z', reason: 'held a token' });
  // Written before entries had a kind column: the migration filled it in.
  const contracts = await collect(store.readStream(stream, { kinds: ['work-contract'] }));
  expect(contracts.map((e) => e.source_id)).toEqual(['contract']);
  expect((await store.getStream({ project_id: 'acme', kind: 'session', session_id: 'run-1' })).head).toBe(1);
  const first = await store.getRevision(scope, 1);
  expect(await store.getPrepared('acme', first.prepared_digest)).toEqual({
    schema: 'baton.prepared-handoff/v1',
    objective: 'first',
  });
  // Today's writes work on the upgraded database.
  const again = await store.captureSource(scope, {
    source_id: 'contract',
    content: { objective: 'Add safe auto-refresh' },
    metadata: { kind: 'work-contract' },
  });
  expect(again.position).toBe(1);
  expect((await store.captureSource(scope, { source_id: 'new', content: 'today' })).position).toBe(4);
  expect(
    await store.commitRevision(scope, 0, { schema: 'baton.prepared-handoff/v1', objective: 'first' }),
  ).toEqual(first);
  expect((await store.commitRevision(scope, 1, { objective: 'second' })).revision).toBe(2);
}

describe('upgrading a database made by an earlier migration set', () => {
  it('sqlite: schema version 2 opens, migrates to the latest and keeps every record', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-upgrade-'));
    const path = join(dir, 'baton.db');
    copyFileSync(join(fixtures, 'sqlite-schema-v2.db'), path);
    const store = await openSqliteStore({ path });
    try {
      await expectUpgraded(store);
    } finally {
      await store.close();
    }
    const { DatabaseSync } = await import('node:sqlite');
    const db = new DatabaseSync(path);
    const versions = db.prepare('SELECT version FROM schema_migrations ORDER BY version').all();
    db.close();
    expect(versions.map((row) => row.version)).toEqual(sqliteMigrations.map((m) => m.version));
    rmSync(dir, { recursive: true, force: true });
  });

  it.skipIf(!postgresUrl)(
    'postgres: schema version 2 opens, migrates to the latest and keeps every record',
    async () => {
      const schema = freshSchemaName();
      const client = new pg.Client({ connectionString: postgresUrl });
      await client.connect();
      try {
        const dump = readFileSync(join(fixtures, 'postgres-schema-v2.sql'), 'utf8').replaceAll(
          'baton_fixture',
          schema,
        );
        await client.query(dump);
        const store = await openPostgresStore({ url: postgresUrl!, schema });
        try {
          await expectUpgraded(store);
        } finally {
          await store.close();
        }
        const versions = await client.query<{ version: number }>(
          `SELECT version FROM "${schema}".schema_migrations ORDER BY version`,
        );
        expect(versions.rows.map((row) => row.version)).toEqual(postgresMigrations.map((m) => m.version));
      } finally {
        await client.end();
        await dropSchema(schema);
      }
    },
  );
});
