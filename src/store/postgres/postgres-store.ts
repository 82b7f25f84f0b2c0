/**
 * The shared Store: PostgreSQL through a pg pool, safe for several processes on one database.
 * An append locks its stream row, so positions are gap-free; a Handoff Revision is a conditional
 * insert that the PRIMARY KEY (stream_id, revision) settles when two race. No write relies on
 * an isolation level above READ COMMITTED; unique indexes back every rule the code checks.
 */
import {
  Client,
  DatabaseError,
  Pool,
  escapeIdentifier,
  type ClientConfig,
  type PoolClient,
  type QueryResultRow,
} from 'pg';
import type { Digest } from '../../core/canonical.ts';
import { systemClock, type Clock } from '../../core/clock.ts';
import { BatonError } from '../../core/errors.ts';
import type { JsonObject } from '../../core/json.ts';
import { ledgerLimits, sealBatch, type Entry, type EntryInput } from '../../core/ledger/entry.ts';
import {
  describeStream,
  scopeStream,
  streamKey,
  streamName,
  type ScopeKey,
  type StreamKey,
  type StreamKind,
} from '../../core/ledger/names.ts';
import { checkExpectedHead, revisionConflict, type Revision } from '../../core/ledger/revision.ts';
import {
  planAppend,
  sourceReceipt,
  type AppendResult,
  type SourceReceipt,
  type SourceRef,
  type StoredSource,
} from '../../core/ledger/source.ts';
import { checkMigrations, type Migration } from '../migrations.ts';
import {
  availability,
  checkDigest,
  checkHash,
  checkImport,
  checkNewSession,
  checkTime,
  checkNewToken,
  rowToSession,
  rowToToken,
  type SessionRow,
  type TokenRow,
  checkKinds,
  sealPrepared,
  type PreparedText,
  checkProjectId,
  checkRange,
  checkReason,
  checkRevisionNumber,
  checkScope,
  checkSourceId,
  checkSourceRef,
  checkStream,
  entryColumns,
  pagedRead,
  requireStreamHead,
  rowToEntry,
  identityColumns,
  readableEntry,
  type EntryRow,
  type IdentityRow,
} from '../shared.ts';
import {
  sessionsPerToken,
  type AppendOptions,
  type ImportOptions,
  type NewSession,
  type NewToken,
  type PortableEntry,
  type PositionRange,
  type Project,
  type SessionRecord,
  type SourceAvailability,
  type SourceInput,
  type Store,
  type StreamInfo,
  type StreamListener,
  type TokenRecord,
} from '../store.ts';
import { postgresMigrations } from './postgres-migrations.ts';

/**
 * The pool's connection settings. The schema goes into the startup options, so every
 * connection uses it from its first statement; an options= in the URL is kept, but the URL
 * would override a separate setting, so it is moved out of the URL and ours comes last.
 */
function connectionConfig(
  url: string,
  schema: string | undefined,
): { connectionString: string; options?: string } {
  if (schema === undefined) return { connectionString: url };
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new BatonError('invalid_input', 'the PostgreSQL URL is not a valid URL');
  }
  const given = parsed.searchParams.get('options');
  parsed.searchParams.delete('options');
  return {
    connectionString: parsed.toString(),
    options: `${given ? `${given} ` : ''}-c search_path=${schema}`,
  };
}

/** The channel every append NOTIFYs on; payloads name the schema, so schemas sharing a database stay apart. */
const notifyChannel = 'baton_entries';

export interface PostgresStoreOptions {
  /** A postgres:// URL; its credentials never appear in error messages. */
  readonly url: string;
  /** The schema holding Baton's tables, created when missing; default the server's search_path. */
  readonly schema?: string;
  readonly clock?: Clock;
  /** For tests of upgrades only: the migration set to apply. */
  readonly migrations?: readonly Migration[];
  /** Connections in the pool; default 10. */
  readonly poolSize?: number;
}

/** Anything that runs a query: the pool itself, or one client inside a transaction. */
type Queryable = Pool | PoolClient;

interface StreamRow {
  /** bigint, which pg returns as a string. */
  readonly stream_id: string;
  readonly project_id: string;
  readonly kind: StreamKind;
  readonly name: string;
  readonly head: number;
  readonly created_at: string;
}

interface RevisionRow {
  readonly revision: number;
  readonly prepared_digest: string;
  readonly committed_at: string;
}

/** One row for the entries table, as an append or an import writes it. */
interface EntryWrite {
  readonly position: number;
  readonly type: string;
  readonly source_id: string | null;
  readonly digest: string;
  readonly body: string | null;
  readonly recorded_at: string;
  readonly retracted_at: string | null;
  readonly retraction_reason: string | null;
  readonly kind: string | null;
}

const schemaNamePattern = /^[a-z_][a-z0-9_]{0,62}$/;

/** The first key of the two-key advisory lock that serialises migrations ('bato'). */
const migrationLockClass = 0x6261746f;

/** SQLSTATEs and Node socket errors that mean the server cannot be reached or went away. */
const connectionStates = /^(08|28|3D000|53300|57P0[123])/;
const socketErrors = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'EPIPE',
]);

export function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  return PostgresStore.open(options);
}

function checkSchemaName(schema: string): string {
  if (!schemaNamePattern.test(schema)) {
    throw new BatonError('invalid_input', 'a schema name is 1-63 of a-z 0-9 _ starting with a letter or _', {
      schema,
    });
  }
  return schema;
}

/** host:port/database of a URL, without credentials. */
function describeServer(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.host || 'localhost'}${parsed.pathname}`;
  } catch {
    return 'the configured server';
  }
}

function isUniqueViolation(error: unknown): error is DatabaseError {
  return error instanceof DatabaseError && error.code === '23505';
}

function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') return connectionStates.test(code) || socketErrors.has(code);
  return /^Connection terminated|timeout exceeded when trying to connect/.test(error.message);
}

export class PostgresStore implements Store {
  readonly backend = 'postgres';
  readonly privateFiles: readonly string[] = [];
  readonly #pool: Pool;
  readonly #server: string;
  readonly #clock: Clock;
  readonly #config: ClientConfig;
  readonly #listeners = new Set<StreamListener>();
  #listening: Promise<Client> | undefined;
  /** The connection that LISTENs now, once connected; its loss is noticed by identity. */
  #listener: Client | undefined;
  /** A reconnection of the LISTEN connection waiting for its turn, and the wait before the next. */
  #relisten: NodeJS.Timeout | undefined;
  #relistenDelayMs = 0;
  #schema: string | undefined;
  #closed: Promise<void> | undefined;

  /** Use openPostgresStore, which also applies the migrations. */
  private constructor(pool: Pool, config: ClientConfig, server: string, clock: Clock) {
    this.#pool = pool;
    this.#config = config;
    this.#server = server;
    this.#clock = clock;
  }

  /** Connect, create the schema when missing and apply the migrations it lacks. */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const migrations = options.migrations ?? postgresMigrations;
    checkMigrations(migrations);
    const schema = options.schema === undefined ? undefined : checkSchemaName(options.schema);
    const poolSize = options.poolSize ?? 10;
    if (!Number.isSafeInteger(poolSize) || poolSize < 1) {
      throw new BatonError('invalid_input', 'poolSize is a whole number >= 1', { poolSize });
    }
    const config = connectionConfig(options.url, schema);
    const pool = new Pool({ ...config, max: poolSize });
    // An idle client whose server goes away emits here; the pool drops it and the next query reconnects.
    pool.on('error', () => {});
    const store = new PostgresStore(pool, config, describeServer(options.url), options.clock ?? systemClock);
    try {
      await store.#migrate(schema, migrations);
    } catch (error) {
      await store.close();
      throw error;
    }
    return store;
  }

  /**
   * Bring the schema up to the migration set, once per schema: the transaction-scoped
   * advisory lock makes processes opening the same schema at once take turns.
   */
  async #migrate(schema: string | undefined, migrations: readonly Migration[]): Promise<void> {
    await this.#write(async (client) => {
      await client.query(
        `SELECT pg_advisory_xact_lock($1, hashtext(coalesce($2::text, current_schema(), '')))`,
        [migrationLockClass, schema ?? null],
      );
      if (schema !== undefined) {
        const found = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
        if (found.rowCount === 0) await client.query(`CREATE SCHEMA ${escapeIdentifier(schema)}`);
      }
      await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version integer PRIMARY KEY, name text NOT NULL, applied_at text NOT NULL)`);
      const row = await this.#one<{ version: number | null }>(
        client,
        'SELECT max(version) AS version FROM schema_migrations',
      );
      const current = row?.version ?? 0;
      if (current > migrations.length) {
        throw new BatonError(
          'precondition_failed',
          `the database is at schema version ${current}, newer than this Baton knows (${migrations.length}); upgrade Baton`,
          { schema_version: current, known: migrations.length },
        );
      }
      for (const migration of migrations.slice(current)) {
        await client.query(migration.sql);
        await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
          migration.version,
          migration.name,
          this.#now(),
        ]);
      }
    });
  }

  #now(): string {
    return this.#clock.now().toISOString();
  }

  /** A connection failure as the caller sees it: unavailable, naming the server but no credentials. */
  #unavailable(error: Error): BatonError {
    return new BatonError('unavailable', `cannot reach PostgreSQL at ${this.#server}: ${error.message}`, {
      backend: 'postgres',
      server: this.#server,
    });
  }

  /** Map what pg throws to what the Store promises: connection loss and unexpected unique violations. */
  #translate(error: unknown): unknown {
    if (error instanceof BatonError || !(error instanceof Error)) return error;
    if (isConnectionError(error)) return this.#unavailable(error);
    if (error instanceof DatabaseError && error.code === '22021') {
      return new BatonError('invalid_input', `PostgreSQL cannot store this text: ${error.message}`);
    }
    if (isUniqueViolation(error)) {
      return new BatonError(
        'conflict',
        `a concurrent write got there first (${error.constraint ?? 'unique index'})`,
        {
          constraint: error.constraint,
        },
      );
    }
    return error;
  }

  #checkOpen(): void {
    if (this.#closed) throw new BatonError('unavailable', 'this store is closed', { backend: 'postgres' });
  }

  async #query<R extends QueryResultRow>(db: Queryable, text: string, values: unknown[] = []): Promise<R[]> {
    this.#checkOpen();
    try {
      return (await db.query<R>(text, values)).rows;
    } catch (error) {
      throw this.#translate(error);
    }
  }

  async #one<R extends QueryResultRow>(
    db: Queryable,
    text: string,
    values: unknown[] = [],
  ): Promise<R | undefined> {
    return (await this.#query<R>(db, text, values))[0];
  }

  /**
   * Run fn inside one transaction on one pooled connection. onUniqueViolation turns a unique
   * violation into the error the method promises; it runs after the rollback, so it may query.
   */
  async #write<T>(
    fn: (client: PoolClient) => Promise<T>,
    onUniqueViolation?: (error: DatabaseError) => Promise<BatonError>,
  ): Promise<T> {
    try {
      return await this.#transaction(fn);
    } catch (error) {
      if (onUniqueViolation && isUniqueViolation(error)) throw await onUniqueViolation(error);
      throw this.#translate(error);
    }
  }

  async #transaction<T>(fn: (client: PoolClient) => Promise<T>): Promise<T> {
    this.#checkOpen();
    let client: PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (error) {
      throw error instanceof Error ? this.#unavailable(error) : error;
    }
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      // A connection that cannot roll back is discarded rather than returned to the pool.
      await client.query('ROLLBACK').catch((rollback: unknown) => {
        broken = rollback instanceof Error ? rollback : new Error(String(rollback));
      });
      throw error;
    } finally {
      client.release(broken);
    }
  }

  async #project(db: Queryable, project_id: string): Promise<Project> {
    const row = await this.#one<Project>(
      db,
      'SELECT project_id, created_at FROM projects WHERE project_id = $1',
      [project_id],
    );
    if (!row) throw new BatonError('not_found', `project ${project_id} does not exist`, { project_id });
    return { project_id: row.project_id, created_at: row.created_at };
  }

  /** The stream's row; with lock, held FOR NO KEY UPDATE so writers to the stream take turns. */
  async #findStream(db: Queryable, stream: StreamKey, lock = false): Promise<StreamRow | undefined> {
    return this.#one<StreamRow>(
      db,
      `SELECT * FROM streams WHERE project_id = $1 AND kind = $2 AND name = $3${lock ? ' FOR NO KEY UPDATE' : ''}`,
      [stream.project_id, stream.kind, streamName(stream)],
    );
  }

  async #stream(db: Queryable, stream: StreamKey, lock = false): Promise<StreamRow> {
    await this.#project(db, stream.project_id);
    const row = await this.#findStream(db, stream, lock);
    if (!row) {
      throw new BatonError('not_found', `stream ${describeStream(stream)} does not exist`, { ...stream });
    }
    return row;
  }

  /** Create the stream when missing (inside the caller's transaction) and return its row. */
  async #ensureStream(client: PoolClient, stream: StreamKey, lock = false): Promise<StreamRow> {
    await this.#project(client, stream.project_id);
    await this.#query(
      client,
      `INSERT INTO streams (project_id, kind, name, created_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (project_id, kind, name) DO NOTHING`,
      [stream.project_id, stream.kind, streamName(stream), this.#now()],
    );
    return (await this.#findStream(client, stream, lock))!;
  }

  #info(row: StreamRow): StreamInfo {
    return {
      stream: streamKey(row.project_id, row.kind, row.name),
      head: row.head,
      created_at: row.created_at,
    };
  }

  /** Insert rows in order, a bounded batch per statement, each batch one round trip. */
  async #insertEntries(client: PoolClient, stream_id: string, rows: readonly EntryWrite[]): Promise<void> {
    for (let start = 0; start < rows.length; start += ledgerLimits.batchEntries) {
      const batch = rows.slice(start, start + ledgerLimits.batchEntries);
      await this.#query(
        client,
        `INSERT INTO entries
           (stream_id, position, type, source_id, digest, body, recorded_at, retracted_at, retraction_reason, kind)
         SELECT $1, * FROM unnest($2::integer[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
           $8::text[], $9::text[], $10::text[])`,
        [
          stream_id,
          batch.map((row) => row.position),
          batch.map((row) => row.type),
          batch.map((row) => row.source_id),
          batch.map((row) => row.digest),
          batch.map((row) => row.body),
          batch.map((row) => row.recorded_at),
          batch.map((row) => row.retracted_at),
          batch.map((row) => row.retraction_reason),
          batch.map((row) => row.kind),
        ],
      );
    }
  }

  async createProject(project_id: string): Promise<Project> {
    const id = checkProjectId(project_id);
    await this.#insertProject(this.#pool, id);
    return this.#project(this.#pool, id);
  }

  /** Create a project; nothing when it exists. */
  async #insertProject(db: Queryable, project_id: string): Promise<void> {
    await this.#query(
      db,
      'INSERT INTO projects (project_id, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING',
      [project_id, this.#now()],
    );
  }

  async getProject(project_id: string): Promise<Project> {
    return this.#project(this.#pool, checkProjectId(project_id));
  }

  async listProjects(): Promise<Project[]> {
    return this.#query<Project>(
      this.#pool,
      'SELECT project_id, created_at FROM projects ORDER BY project_id',
    );
  }

  async listStreams(project_id: string): Promise<StreamInfo[]> {
    const id = checkProjectId(project_id);
    await this.#project(this.#pool, id);
    const rows = await this.#query<StreamRow>(
      this.#pool,
      'SELECT * FROM streams WHERE project_id = $1 ORDER BY kind, name',
      [id],
    );
    return rows.map((row) => this.#info(row));
  }

  async getStream(stream: StreamKey): Promise<StreamInfo> {
    return this.#info(await this.#stream(this.#pool, checkStream(stream)));
  }

  async append(
    stream: StreamKey,
    entries: readonly EntryInput[],
    options: AppendOptions = {},
  ): Promise<AppendResult[]> {
    const key = checkStream(stream);
    const sealed = sealBatch(entries);
    return this.#write(async (client) => {
      const row = await this.#ensureStream(client, key, true);
      requireStreamHead(describeStream(key), options.expected_head, row.head);
      const ids = [
        ...new Set(sealed.flatMap((entry) => (entry.source_id === null ? [] : [entry.source_id]))),
      ];
      const found =
        ids.length === 0
          ? []
          : await this.#query<{
              source_id: string;
              position: number;
              digest: Digest;
              retracted_at: string | null;
            }>(
              client,
              'SELECT source_id, position, digest, retracted_at FROM entries WHERE stream_id = $1 AND source_id = ANY($2::text[])',
              [row.stream_id, ids],
            );
      const stored = new Map<string, StoredSource>(
        found.map((source) => [
          source.source_id,
          {
            source_id: source.source_id,
            digest: source.digest,
            position: source.position,
            retracted: source.retracted_at !== null,
          },
        ]),
      );
      const plan = planAppend(row.head, sealed, stored, describeStream(key));
      if (plan.writes.length > 0) {
        const now = this.#now();
        await this.#insertEntries(
          client,
          row.stream_id,
          plan.writes.map((entry, index) => ({
            position: row.head + index + 1,
            type: entry.type,
            source_id: entry.source_id,
            digest: entry.digest,
            body: entry.body,
            recorded_at: now,
            retracted_at: null,
            retraction_reason: null,
            kind: entry.kind,
          })),
        );
        await this.#query(client, 'UPDATE streams SET head = $1 WHERE stream_id = $2', [
          row.head + plan.writes.length,
          row.stream_id,
        ]);
        // Delivered to every listening process when this transaction commits, never before.
        await this.#query(client, `SELECT pg_notify('${notifyChannel}', $1)`, [
          JSON.stringify({
            schema: await this.#schemaName(client),
            project_id: key.project_id,
            kind: key.kind,
            name: streamName(key),
            head: row.head + plan.writes.length,
          }),
        ]);
      }
      return [...plan.results];
    });
  }

  async #schemaName(client: PoolClient): Promise<string> {
    this.#schema ??= (await this.#one<{ schema: string }>(
      client,
      'SELECT current_schema() AS schema',
    ))!.schema;
    return this.#schema;
  }

  async subscribe(listener: StreamListener): Promise<() => Promise<void>> {
    this.#checkOpen();
    this.#listeners.add(listener);
    try {
      await (this.#listening ??= this.#listen());
    } catch (error) {
      this.#listeners.delete(listener);
      this.#listening = undefined;
      throw error instanceof Error ? this.#unavailable(error) : error;
    }
    return async () => {
      this.#listeners.delete(listener);
    };
  }

  /**
   * One dedicated connection per store LISTENs; each notification of this schema reaches every
   * listener. It shows in pg_stat_activity as `baton-listen <schema>`.
   */
  async #listen(): Promise<Client> {
    const client = new Client(this.#config);
    client.on('error', () => this.#lost(client));
    client.on('end', () => this.#lost(client));
    try {
      await client.connect();
      const { rows } = await client.query<{ schema: string }>('SELECT current_schema() AS schema');
      const schema = rows[0]!.schema;
      await client.query("SELECT set_config('application_name', $1, false)", [
        `baton-listen ${schema}`.slice(0, 63),
      ]);
      client.on('notification', (message) => {
        if (message.channel !== notifyChannel || !message.payload) return;
        let change: { schema: string; project_id: string; kind: string; name: string; head: number };
        try {
          change = JSON.parse(message.payload) as typeof change;
        } catch {
          return;
        }
        if (change.schema !== schema || (change.kind !== 'scope' && change.kind !== 'session')) return;
        const stream = streamKey(change.project_id, change.kind, change.name);
        for (const listener of this.#listeners) {
          try {
            listener({ stream, head: change.head });
          } catch {
            // A listener's failure is its own.
          }
        }
      });
      await client.query(`LISTEN ${notifyChannel}`);
    } catch (error) {
      client.removeAllListeners('end');
      client.removeAllListeners('error');
      client.on('error', () => {});
      await client.end().catch(() => {});
      throw error;
    }
    if (this.#closed) {
      await client.end().catch(() => {});
      throw new BatonError('unavailable', 'this store is closed', { backend: 'postgres' });
    }
    this.#listener = client;
    return client;
  }

  /**
   * The LISTEN connection broke (the server restarted, or an administrator ended it). While
   * anyone listens, open another: at once, then backing off to one try every 5 s while the
   * server stays away. Appends committed meanwhile are not told; readers catch up from their
   * own positions (the event stream re-reads on its heartbeat).
   */
  #lost(client: Client): void {
    if (this.#listener !== client) return;
    this.#listener = undefined;
    this.#listening = undefined;
    client.removeAllListeners('notification');
    void client.end().catch(() => {});
    this.#scheduleRelisten();
  }

  #scheduleRelisten(): void {
    if (this.#closed || this.#relisten || this.#listeners.size === 0) return;
    const delay = this.#relistenDelayMs;
    this.#relistenDelayMs = Math.min(5_000, Math.max(100, delay * 2));
    this.#relisten = setTimeout(() => {
      this.#relisten = undefined;
      if (this.#closed || this.#listeners.size === 0) return;
      (this.#listening ??= this.#listen()).then(
        () => {
          this.#relistenDelayMs = 0;
        },
        () => {
          this.#listening = undefined;
          this.#scheduleRelisten();
        },
      );
    }, delay);
    this.#relisten.unref();
  }

  async captureSource(scope: ScopeKey, source: SourceInput): Promise<SourceReceipt> {
    const key = checkScope(scope);
    const source_id = checkSourceId(source?.source_id);
    const [result] = await this.append(scopeStream(key), [
      { type: 'source', source_id, content: source.content, metadata: source.metadata ?? {} },
    ]);
    return sourceReceipt(key.scope_id, source_id, result!.digest, result!.position);
  }

  async *readStream(stream: StreamKey, range?: PositionRange): AsyncGenerator<Entry> {
    // Like every method, a bad argument surfaces when the read is used, as SQLite's does.
    yield* this.#readPages(checkStream(stream), range, checkKinds(range?.kinds));
  }

  async *#readPages(
    key: StreamKey,
    range: PositionRange | undefined,
    kinds: readonly string[] | undefined,
  ): AsyncGenerator<Entry> {
    const row = await this.#stream(this.#pool, key);
    const bounds = checkRange(key, row.head, range);
    yield* pagedRead(bounds, async (from, to, limit) => {
      const rows = await this.#query<EntryRow>(
        this.#pool,
        `SELECT ${entryColumns} FROM entries WHERE stream_id = $1 AND position BETWEEN $2 AND $3` +
          (kinds ? ' AND kind = ANY($5::text[])' : '') +
          ' ORDER BY position LIMIT $4',
        kinds ? [row.stream_id, from, to, limit, kinds] : [row.stream_id, from, to, limit],
      );
      return rows.map((entry) => rowToEntry(key, entry));
    });
  }

  /** The stored row of an exact ref's source, with the given columns; undefined when none. */
  async #sourceRow<Row extends QueryResultRow>(
    project_id: string,
    ref: Pick<SourceRef, 'scope_id' | 'source_id'>,
    columns: string,
  ): Promise<Row | undefined> {
    return this.#one<Row>(
      this.#pool,
      `SELECT ${columns} FROM entries JOIN streams USING (stream_id)
       WHERE project_id = $1 AND streams.kind = 'scope' AND name = $2 AND source_id = $3`,
      [project_id, ref.scope_id, ref.source_id],
    );
  }

  async checkSource(project_id: string, ref: SourceRef): Promise<SourceAvailability> {
    const id = checkProjectId(project_id);
    const exact = checkSourceRef(ref);
    await this.#project(this.#pool, id);
    return availability(exact, await this.#sourceRow<IdentityRow>(id, exact, identityColumns));
  }

  async findSource(scope: ScopeKey, source_id: string): Promise<Entry | undefined> {
    const key = checkScope(scope);
    const id = checkSourceId(source_id);
    await this.#project(this.#pool, key.project_id);
    const row = await this.#sourceRow<EntryRow>(
      key.project_id,
      { scope_id: key.scope_id, source_id: id },
      entryColumns,
    );
    return row && rowToEntry(scopeStream(key), row);
  }

  async readSource(project_id: string, ref: SourceRef): Promise<Entry> {
    const id = checkProjectId(project_id);
    const exact = checkSourceRef(ref);
    await this.#project(this.#pool, id);
    const key: StreamKey = { project_id: id, kind: 'scope', scope_id: exact.scope_id };
    return readableEntry(id, key, exact, await this.#sourceRow<EntryRow>(id, exact, entryColumns));
  }

  async retractSource(scope: ScopeKey, source_id: string, reason: string): Promise<Entry> {
    const key = checkScope(scope);
    const id = checkSourceId(source_id);
    const why = checkReason(reason);
    const stream = scopeStream(key);
    return this.#write(async (client) => {
      const row = await this.#stream(client, stream, true);
      const entry = await this.#one<EntryRow>(
        client,
        `SELECT ${entryColumns} FROM entries WHERE stream_id = $1 AND source_id = $2`,
        [row.stream_id, id],
      );
      if (!entry) {
        throw new BatonError('not_found', `source ${id} does not exist in ${describeStream(stream)}`, {
          ...key,
          source_id: id,
        });
      }
      if (entry.retracted_at !== null) return rowToEntry(stream, entry);
      const tombstone = await this.#one<EntryRow>(
        client,
        `UPDATE entries SET body = NULL, retracted_at = $1, retraction_reason = $2
         WHERE stream_id = $3 AND source_id = $4 RETURNING ${entryColumns}`,
        [this.#now(), why, row.stream_id, id],
      );
      return rowToEntry(stream, tombstone!);
    });
  }

  async #insertPrepared(client: PoolClient, project_id: string, prepared: PreparedText): Promise<void> {
    await this.#query(
      client,
      'INSERT INTO prepared_handoffs (project_id, digest, body, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING',
      [project_id, prepared.digest, prepared.text, this.#now()],
    );
  }

  async putPrepared(project_id: string, body: JsonObject): Promise<Digest> {
    const id = checkProjectId(project_id);
    const prepared = sealPrepared(body);
    return this.#write(async (client) => {
      await this.#project(client, id);
      await this.#insertPrepared(client, id, prepared);
      return prepared.digest;
    });
  }

  async getPrepared(project_id: string, digest: Digest): Promise<JsonObject> {
    const id = checkProjectId(project_id);
    const exact = checkDigest(digest);
    await this.#project(this.#pool, id);
    const row = await this.#one<{ body: string }>(
      this.#pool,
      'SELECT body FROM prepared_handoffs WHERE project_id = $1 AND digest = $2',
      [id, exact],
    );
    if (!row) {
      throw new BatonError('not_found', `no prepared handoff ${exact} in ${id}`, {
        project_id: id,
        digest: exact,
      });
    }
    return JSON.parse(row.body) as JsonObject;
  }

  async commitRevision(scope: ScopeKey, expected_head: number, body: JsonObject): Promise<Revision> {
    const key = checkScope(scope);
    const expected = checkExpectedHead(expected_head);
    const prepared = sealPrepared(body);
    try {
      return await this.#transaction(async (client) => {
        // Commits to one scope take turns on its stream row, so a replay sees the commit it repeats.
        const row = await this.#ensureStream(client, scopeStream(key), true);
        const replayed = await this.#revisionByDigest(client, key, prepared.digest);
        if (replayed) return replayed;
        const head = await this.#revisionHead(client, key);
        if (head !== expected) throw revisionConflict(key.scope_id, expected, head);
        await this.#insertPrepared(client, key.project_id, prepared);
        const committed_at = this.#now();
        await client.query(
          'INSERT INTO handoff_revisions (stream_id, revision, prepared_digest, committed_at) VALUES ($1, $2, $3, $4)',
          [row.stream_id, expected + 1, prepared.digest, committed_at],
        );
        return {
          scope_id: key.scope_id,
          revision: expected + 1,
          prepared_digest: prepared.digest,
          committed_at,
        };
      });
    } catch (error) {
      if (!isUniqueViolation(error)) throw this.#translate(error);
      // A racing commit took this revision number, or committed this same body first.
      const replayed = await this.#revisionByDigest(this.#pool, key, prepared.digest);
      if (replayed) return replayed;
      throw revisionConflict(key.scope_id, expected, await this.#revisionHead(this.#pool, key));
    }
  }

  async #revisionByDigest(db: Queryable, scope: ScopeKey, digest: Digest): Promise<Revision | undefined> {
    const row = await this.#one<RevisionRow>(
      db,
      `SELECT revision, prepared_digest, committed_at FROM handoff_revisions JOIN streams USING (stream_id)
       WHERE project_id = $1 AND kind = 'scope' AND name = $2 AND prepared_digest = $3`,
      [scope.project_id, scope.scope_id, digest],
    );
    return row && this.#revision(scope.scope_id, row);
  }

  async #revisionHead(db: Queryable, scope: ScopeKey): Promise<number> {
    const row = await this.#one<{ head: number | null }>(
      db,
      `SELECT max(revision) AS head FROM handoff_revisions JOIN streams USING (stream_id)
       WHERE project_id = $1 AND kind = 'scope' AND name = $2`,
      [scope.project_id, scope.scope_id],
    );
    return row?.head ?? 0;
  }

  async revisionHead(scope: ScopeKey): Promise<number> {
    const key = checkScope(scope);
    await this.#project(this.#pool, key.project_id);
    return this.#revisionHead(this.#pool, key);
  }

  #revision(scope_id: string, row: RevisionRow): Revision {
    return {
      scope_id,
      revision: row.revision,
      prepared_digest: row.prepared_digest as Digest,
      committed_at: row.committed_at,
    };
  }

  async getRevision(scope: ScopeKey, revision: number): Promise<Revision> {
    const key = checkScope(scope);
    const number = checkRevisionNumber(revision);
    await this.#project(this.#pool, key.project_id);
    const row = await this.#one<RevisionRow>(
      this.#pool,
      `SELECT revision, prepared_digest, committed_at FROM handoff_revisions JOIN streams USING (stream_id)
       WHERE project_id = $1 AND kind = 'scope' AND name = $2 AND revision = $3::bigint`,
      [key.project_id, key.scope_id, number],
    );
    if (!row) {
      throw new BatonError('not_found', `${key.scope_id} has no handoff revision ${number}`, {
        ...key,
        revision: number,
      });
    }
    return this.#revision(key.scope_id, row);
  }

  async listRevisions(
    scope: ScopeKey,
    options: { limit?: number; through?: number } = {},
  ): Promise<Revision[]> {
    const key = checkScope(scope);
    const limit = options.limit ?? 20;
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > 1000) {
      throw new BatonError('invalid_input', 'limit is a whole number from 1 to 1000', { limit });
    }
    const through =
      options.through === undefined ? Number.MAX_SAFE_INTEGER : checkRevisionNumber(options.through);
    await this.#project(this.#pool, key.project_id);
    const rows = await this.#query<RevisionRow>(
      this.#pool,
      `SELECT revision, prepared_digest, committed_at FROM handoff_revisions JOIN streams USING (stream_id)
       WHERE project_id = $1 AND kind = 'scope' AND name = $2 AND revision <= $3::bigint
       ORDER BY revision DESC LIMIT $4`,
      [key.project_id, key.scope_id, through, limit],
    );
    return rows.map((row) => this.#revision(key.scope_id, row));
  }

  async importEntries(
    stream: StreamKey,
    entries: readonly PortableEntry[],
    options: ImportOptions = {},
  ): Promise<StreamInfo> {
    const key = checkStream(stream);
    const checked = checkImport(entries);
    return this.#write(async (client) => {
      if (options.createProject) await this.#insertProject(client, key.project_id);
      await this.#project(client, key.project_id);
      // Creating the stream is the existence check: of two imports racing, one creates it.
      const created = await this.#one<StreamRow>(
        client,
        `INSERT INTO streams (project_id, kind, name, head, created_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (project_id, kind, name) DO NOTHING RETURNING *`,
        [key.project_id, key.kind, streamName(key), checked.length, this.#now()],
      );
      if (!created) {
        throw new BatonError(
          'conflict',
          `stream ${describeStream(key)} exists already; import into a new one`,
          {
            ...key,
          },
        );
      }
      await this.#insertEntries(
        client,
        created.stream_id,
        checked.map(({ body, kind, entry }) => ({
          position: entry.position,
          type: entry.type,
          source_id: entry.source_id,
          digest: entry.digest,
          body,
          recorded_at: entry.recorded_at,
          retracted_at: entry.retracted?.at ?? null,
          retraction_reason: entry.retracted?.reason ?? null,
          kind,
        })),
      );
      return this.#info(created);
    });
  }

  async createToken(token: NewToken): Promise<TokenRecord> {
    const checked = checkNewToken(token);
    return this.#write(async (client) => {
      await this.#project(client, checked.project_id);
      const created_at = this.#now();
      await client.query(
        `INSERT INTO tokens (token_id, project_id, token_hash, read_only, label, created_at)
           VALUES ($1, $2, $3, $4, $5, $6)`,
        [
          checked.token_id,
          checked.project_id,
          checked.token_hash,
          checked.read_only,
          checked.label,
          created_at,
        ],
      );
      return { ...checked, created_at, revoked_at: null };
    });
  }

  async findToken(token_hash: string): Promise<TokenRecord | undefined> {
    const row = await this.#one<TokenRow>(
      this.#pool,
      'SELECT * FROM tokens WHERE token_hash = $1 AND revoked_at IS NULL',
      [checkHash(token_hash)],
    );
    return row && rowToToken(row);
  }

  async listTokens(project_id: string): Promise<TokenRecord[]> {
    const id = checkProjectId(project_id);
    await this.#project(this.#pool, id);
    const rows = await this.#query<TokenRow>(
      this.#pool,
      'SELECT * FROM tokens WHERE project_id = $1 ORDER BY created_at, token_id',
      [id],
    );
    return rows.map(rowToToken);
  }

  async revokeToken(project_id: string, token_id: string): Promise<TokenRecord> {
    const id = checkProjectId(project_id);
    return this.#write(async (client) => {
      const row = await this.#one<TokenRow>(
        client,
        `UPDATE tokens SET revoked_at = coalesce(revoked_at, $3) WHERE project_id = $1 AND token_id = $2 RETURNING *`,
        [id, String(token_id), this.#now()],
      );
      if (!row) {
        throw new BatonError('not_found', `no token ${String(token_id)} in project ${id}`, {
          project_id: id,
          token_id,
        });
      }
      await client.query('DELETE FROM sessions WHERE token_id = $1', [row.token_id]);
      return rowToToken(row);
    });
  }

  async createSession(session: NewSession, now: string): Promise<void> {
    const checked = checkNewSession(session);
    const time = checkTime(now);
    await this.#write(async (client) => {
      await client.query('DELETE FROM sessions WHERE expires_at <= $1', [time]);
      await client.query(
        'INSERT INTO sessions (session_hash, token_id, csrf_hash, expires_at) VALUES ($1, $2, $3, $4)',
        [checked.session_hash, checked.token_id, checked.csrf_hash, checked.expires_at],
      );
      await client.query(
        `DELETE FROM sessions WHERE token_id = $1 AND session_hash NOT IN (
           SELECT session_hash FROM sessions WHERE token_id = $1
            ORDER BY expires_at DESC, session_hash DESC LIMIT $2)`,
        [checked.token_id, sessionsPerToken],
      );
    });
  }

  async findSession(session_hash: string, now: string): Promise<SessionRecord | undefined> {
    const row = await this.#one<SessionRow>(
      this.#pool,
      `SELECT sessions.session_hash, sessions.csrf_hash, sessions.expires_at, tokens.*
         FROM sessions JOIN tokens USING (token_id)
        WHERE session_hash = $1 AND expires_at > $2 AND tokens.revoked_at IS NULL`,
      [checkHash(session_hash), now],
    );
    return row && rowToSession(row);
  }

  async deleteSession(session_hash: string): Promise<void> {
    const hash = checkHash(session_hash);
    await this.#write(async (client) => {
      await client.query('DELETE FROM sessions WHERE session_hash = $1', [hash]);
    });
  }

  async close(): Promise<void> {
    this.#closed ??= (async () => {
      const listening = this.#listening;
      this.#listening = undefined;
      this.#listener = undefined;
      clearTimeout(this.#relisten);
      this.#relisten = undefined;
      this.#listeners.clear();
      if (listening) await listening.then((client) => client.end()).catch(() => {});
      await this.#pool.end();
    })();
    return this.#closed;
  }
}
