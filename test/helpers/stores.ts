/**
 * The backends a test runs on: SQLite always, both ways it writes (inline, as the CLI and the
 * library open it, and on a writer thread, as `baton serve` opens it), and PostgreSQL when
 * BATON_TEST_POSTGRES_URL is set (each opened store gets a fresh schema, dropped on dispose).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { openThreadedSqliteStore } from '../../src/store/sqlite/threaded-store.ts';
import type { Store } from '../../src/store/store.ts';
import { dropSchema, freshSchemaName, postgresUrl } from './postgres.ts';

export interface OpenedStore {
  readonly store: Store;
  dispose(): Promise<void>;
}

export interface Backend {
  readonly name: 'sqlite' | 'sqlite-thread' | 'postgres';
  open(): Promise<OpenedStore>;
}

function sqliteBackend(name: 'sqlite' | 'sqlite-thread'): Backend {
  return {
    name,
    async open() {
      const dir = mkdtempSync(join(tmpdir(), 'baton-test-'));
      const options = { path: join(dir, 'baton.db'), synchronous: 'normal' } as const;
      const store =
        name === 'sqlite' ? await openSqliteStore(options) : await openThreadedSqliteStore(options);
      return {
        store,
        async dispose() {
          await store.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  };
}

const postgres: Backend = {
  name: 'postgres',
  async open() {
    const schema = freshSchemaName();
    const store = await openPostgresStore({ url: postgresUrl!, schema });
    return {
      store,
      async dispose() {
        await store.close();
        await dropSchema(schema);
      },
    };
  },
};

/** The backends to run on here; PostgreSQL is missing (and said so) without its URL. */
const sqlite = [sqliteBackend('sqlite'), sqliteBackend('sqlite-thread')];
export const backends: readonly Backend[] = postgresUrl ? [...sqlite, postgres] : sqlite;

/** The same store with some methods replaced; the others still run on the real one. */
export function withOverrides(store: Store, overrides: Partial<Store>): Store {
  return new Proxy(store, {
    get(target, property, receiver) {
      const override = (overrides as Record<PropertyKey, unknown>)[property];
      if (override !== undefined) return override;
      const value = Reflect.get(target, property, receiver) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * The store with some methods replaced and every other one bound to it: a fault or a race
 * injected into one call, as a crash or another writer would cause it.
 */
export function overriding(store: Store, overrides: Partial<Store>): Store {
  return new Proxy(store, {
    get(target, key, receiver) {
      if (Object.hasOwn(overrides, key)) return overrides[key as keyof Store];
      const value = Reflect.get(target, key, receiver) as unknown;
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
    },
  });
}
