/**
 * The embedded Store: one SQLite file through node:sqlite in WAL mode. Every write runs in a
 * BEGIN IMMEDIATE transaction, so the head it reads is the head it writes after, across
 * processes sharing the file; unique indexes back every rule the code checks.
 *
 * Writes are group-committed: the writes of one event-loop turn share one transaction, each in
 * its own savepoint, and one COMMIT (one fsync at FULL) ends them all. A write's promise settles
 * only after that COMMIT, so nothing is acknowledged before it is durable; a write that fails
 * rolls back to its savepoint and leaves the others in. Reads outside a write go through a
 * second connection, which sees committed data only, never a write still waiting for its COMMIT.
 * See docs/sqlite-durability.md.
 */
import { accessSync, closeSync, constants, existsSync, mkdirSync, openSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import type { Digest } from '../../core/canonical.ts';
import { systemClock, type Clock } from '../../core/clock.ts';
import { BatonError } from '../../core/errors.ts';
import type { JsonObject } from '../../core/json.ts';
import { sealBatch, type Entry, type EntryInput } from '../../core/ledger/entry.ts';
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
import { sqliteMigrations } from './sqlite-migrations.ts';

export type SqliteSynchronous = 'full' | 'normal';

export interface SqliteStoreOptions {
  /** The database file; its folder is created when missing. */
  readonly path: string;
  /** FULL (the default) survives power loss; NORMAL survives a process crash. See docs/sqlite-durability.md. */
  readonly synchronous?: SqliteSynchronous;
  readonly clock?: Clock;
  /** For tests of upgrades only: the migration set to apply. */
  readonly migrations?: readonly Migration[];
  /** Milliseconds to wait for another process's write lock. */
  readonly busyTimeoutMs?: number;
}

interface StreamRow {
  readonly stream_id: number;
  readonly project_id: string;
  readonly kind: StreamKind;
  readonly name: string;
  readonly head: number;
  readonly created_at: string;
}

/** A write of the open group transaction, settled by its COMMIT. */
interface Waiter {
  resolve(): void;
  reject(error: unknown): void;
}

/** A group's size limit: past it, the group commits without waiting for the end of the turn. */
const maxGroupCommit = 512;

/** How many looked-up rows one snapshot remembers at most. */
const maxSnapshotRows = 4096;

/** How many rows that never change once committed (revisions, prepared bodies) are remembered. */
const maxSettledRows = 1024;

interface RevisionRow {
  readonly revision: number;
  readonly prepared_digest: string;
  readonly committed_at: string;
}

/**
 * A stream's head is the largest position of its entries, read through the (stream_id,
 * position) index inside the write transaction: no second row to update on every append.
 */
const streamColumns =
  'stream_id, project_id, kind, name, created_at, ' +
  '(SELECT coalesce(max(position), 0) FROM entries WHERE entries.stream_id = streams.stream_id) AS head';

/** SQLite's own failures as BatonErrors: a constraint is a conflict, a lock held too long is unavailable. */
function translateSqliteError(error: unknown): Error {
  if (!(error instanceof Error)) return new Error(String(error));
  const errcode = (error as { errcode?: unknown }).errcode;
  if (typeof errcode !== 'number') return error;
  const primary = errcode & 0xff;
  if (primary === 19) {
    return new BatonError('conflict', `the write conflicts with a stored record (${error.message})`);
  }
  if (primary === 5 || primary === 6) {
    return new BatonError('unavailable', 'the database stayed locked by another writer; try again', {
      errcode,
    });
  }
  if (primary === 8) {
    return new BatonError(
      'unavailable',
      `the database cannot be written by this process (${error.message}): check the permissions of the file and its folder`,
      { errcode },
    );
  }
  return error;
}

/**
 * Why a database file cannot be used (a folder, a file that is not SQLite, no permission), as
 * an error the caller can act on; Baton's own refusals (a newer schema) pass unchanged.
 */
function cannotOpen(path: string, error: unknown): unknown {
  const { errcode, code } = error as { errcode?: unknown; code?: unknown };
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
    return new BatonError(
      'invalid_input',
      `cannot write the SQLite database ${path} (${(error as Error).message}): check its permissions or choose another --database path`,
      { path, code },
    );
  }
  if (error instanceof BatonError || typeof errcode !== 'number') return error;
  return new BatonError(
    'invalid_input',
    `cannot use ${path} as a SQLite database (${(error as Error).message}): choose another --database path`,
    { path, errcode },
  );
}

/**
 * Create the database folder; a `.baton` folder also gets a .gitignore, so a work tree stays
 * clean. A folder created here is its owner's alone (0700): the database holds every project's
 * records, which no other user of the machine reads.
 */
function prepareFolder(folder: string): void {
  try {
    mkdirSync(folder, { recursive: true, mode: 0o700 });
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    throw new BatonError(
      'invalid_input',
      `the database's folder ${folder} cannot be created (${message}): choose another --database path`,
      { folder, ...(typeof code === 'string' ? { code } : {}) },
    );
  }
  const ignore = join(folder, '.gitignore');
  if (basename(folder) === '.baton' && !existsSync(ignore)) writeFileSync(ignore, '*\n');
}

/**
 * Create a database file that does not exist yet as its owner's alone (0600), whatever the
 * umask: SQLite gives its -wal and -shm files the mode of the database file. An empty file is
 * an empty database. An existing file keeps the mode it has.
 */
function createPrivateFile(path: string): void {
  try {
    closeSync(openSync(path, 'wx', 0o600));
  } catch (error) {
    // Already there (another process created it meanwhile): opened as it is.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/** Open a store; a database that cannot be used rejects the promise, as every Store's open does. */
export async function openSqliteStore(options: SqliteStoreOptions): Promise<SqliteStore> {
  return new SqliteStore(options);
}

/** Apply the pragmas Baton runs SQLite with; the benchmark's raw baseline uses the same ones. */
export function applyPragmas(db: DatabaseSync, synchronous: SqliteSynchronous, busyTimeoutMs = 30_000): void {
  db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
  db.exec('PRAGMA journal_mode = WAL');
  db.exec(`PRAGMA synchronous = ${synchronous.toUpperCase()}`);
  db.exec('PRAGMA foreign_keys = ON');
}

/** A SQLite database's file and the files SQLite keeps beside it. */
function sqliteFiles(path: string): string[] {
  return ['', '-wal', '-shm', '-journal'].map((suffix) => `${path}${suffix}`);
}

export class SqliteStore implements Store {
  readonly backend = 'sqlite';
  readonly privateFiles: readonly string[];
  /** The writing connection: every write, and every read inside one. */
  readonly #db: DatabaseSync;
  /** Reads outside a write: committed data only. The same connection for `:memory:`. */
  readonly #reader: DatabaseSync;
  readonly #clock: Clock;
  readonly #statements = new Map<string, StatementSync>();
  readonly #readStatements = new Map<string, StatementSync>();
  readonly #listeners = new Set<StreamListener>();
  /** Committed stream ids seen so far, by project, kind and name. */
  readonly #streamIds = new Map<string, number>();
  /** Committed projects seen so far: every call checks its project exists. */
  readonly #projects = new Map<string, Project>();
  /** True while a write's function runs, so that its reads see its own transaction. */
  #writing = false;
  /** The writes of the open transaction, waiting for its COMMIT; undefined when none is open. */
  #batch: Waiter[] | undefined;
  /** True while the reader holds the read transaction this event-loop turn's reads share. */
  #snapshot = false;
  /** The rows looked up in the current snapshot, by statement and key; it never changes. */
  readonly #snapshotRows = new Map<string, unknown>();
  /** Committed rows that never change again, by statement and key, across snapshots. */
  readonly #settledRows = new Map<string, unknown>();

  constructor(options: SqliteStoreOptions) {
    this.privateFiles = options.path === ':memory:' ? [] : sqliteFiles(resolve(options.path));
    if (options.path !== ':memory:') prepareFolder(dirname(options.path));
    try {
      if (options.path !== ':memory:') {
        if (existsSync(options.path)) accessSync(options.path, constants.W_OK);
        else createPrivateFile(options.path);
      }
      this.#db = new DatabaseSync(options.path);
    } catch (error) {
      throw cannotOpen(options.path, error);
    }
    this.#reader = this.#db;
    this.#clock = options.clock ?? systemClock;
    try {
      applyPragmas(this.#db, options.synchronous ?? 'full', options.busyTimeoutMs);
      this.#migrate(options.migrations ?? sqliteMigrations);
      if (options.path !== ':memory:') {
        this.#reader = new DatabaseSync(options.path);
        this.#reader.exec(`PRAGMA busy_timeout = ${options.busyTimeoutMs ?? 30_000}`);
        this.#reader.exec('PRAGMA query_only = ON');
      }
    } catch (error) {
      this.#db.close();
      throw cannotOpen(options.path, error);
    }
  }

  #migrate(migrations: readonly Migration[]): void {
    checkMigrations(migrations);
    this.#transaction(() => {
      this.#db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT`);
      const row = this.#db.prepare('SELECT max(version) AS version FROM schema_migrations').get() as {
        version: number | null;
      };
      const current = row.version ?? 0;
      if (current > migrations.length) {
        throw new BatonError(
          'precondition_failed',
          `the database is at schema version ${current}, newer than this Baton knows (${migrations.length}); upgrade Baton`,
          { schema_version: current, known: migrations.length },
        );
      }
      for (const migration of migrations.slice(current)) {
        this.#db.exec(migration.sql);
        this.#db
          .prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)')
          .run(migration.version, migration.name, this.#now());
      }
    });
  }

  #now(): string {
    return this.#clock.now().toISOString();
  }

  /** A prepared statement on the writer inside a write, on the reader outside one. */
  #sql(text: string): StatementSync {
    if (!this.#writing) this.#openSnapshot();
    const [db, statements] = this.#writing
      ? [this.#db, this.#statements]
      : [this.#reader, this.#readStatements];
    let statement = statements.get(text);
    if (!statement) {
      statement = db.prepare(text);
      statements.set(text, statement);
    }
    return statement;
  }

  /**
   * The reads of one event-loop turn share one read transaction on the reader, so SQLite takes
   * its WAL read lock (file-lock system calls) once per turn, not once per statement. It ends at
   * the end of the turn, and before each COMMIT of this store: a write's caller, resumed after
   * its COMMIT, reads its own write. Another process's commit shows from the next turn on.
   */
  #openSnapshot(): void {
    if (this.#snapshot || this.#reader === this.#db) return;
    if (!this.#reader.isTransaction) this.#reader.exec('BEGIN');
    this.#snapshot = true;
    setImmediate(() => this.#endSnapshot());
  }

  /**
   * Let the next read see every commit made so far, by this process's writer thread or any other
   * connection: ends this turn's snapshot early.
   */
  refresh(): void {
    this.#endSnapshot();
  }

  /** End the turn's read transaction; it wrote nothing, so ending it never loses anything. */
  #endSnapshot(): void {
    if (!this.#snapshot) return;
    this.#snapshot = false;
    this.#snapshotRows.clear();
    try {
      if (this.#reader.isTransaction) this.#reader.exec('COMMIT');
    } catch {
      // Nothing to keep: end it any way it ends, so that the next turn reads afresh.
      try {
        if (this.#reader.isTransaction) this.#reader.exec('ROLLBACK');
      } catch {
        // The next snapshot reuses the transaction left open, rather than fail every read.
      }
    }
  }

  /**
   * One row by key (undefined when none): on the writer inside a write; outside one, read once
   * per snapshot. A snapshot never changes, so the same lookup again in the same turn (sixteen
   * requests authenticating with one token and citing the same sources) gives the same row,
   * frozen, because every caller shares it.
   */
  #lookup(text: string, ...key: (string | number)[]): unknown {
    const statement = this.#sql(text);
    if (this.#writing || !this.#snapshot) return statement.get(...key);
    const remembered = `${text}\u0000${JSON.stringify(key)}`;
    if (this.#snapshotRows.has(remembered)) return this.#snapshotRows.get(remembered);
    const row = statement.get(...key);
    if (this.#snapshotRows.size < maxSnapshotRows)
      this.#snapshotRows.set(remembered, row && Object.freeze(row));
    return row;
  }

  /**
   * A row that never changes once committed (a handoff revision, a prepared body: neither is
   * ever updated or deleted), remembered across snapshots once read outside a write. A missing
   * row is read again each time: it may be committed later. Not for :memory:, whose one
   * connection also shows writes still waiting for their COMMIT.
   */
  #lookupSettled(text: string, ...key: (string | number)[]): unknown {
    if (this.#writing || this.#reader === this.#db) return this.#lookup(text, ...key);
    const remembered = `${text}\u0000${JSON.stringify(key)}`;
    const known = this.#settledRows.get(remembered);
    if (known !== undefined) return known;
    const row = this.#lookup(text, ...key);
    if (row !== undefined) {
      if (this.#settledRows.size >= maxSettledRows) this.#settledRows.clear();
      this.#settledRows.set(remembered, Object.freeze(row));
    }
    return row;
  }

  /** Run fn in a transaction of its own, committed before it returns: for opening the database. */
  #transaction<T>(fn: () => T): T {
    this.#writing = true;
    try {
      this.#db.exec('BEGIN IMMEDIATE');
      const result = fn();
      this.#db.exec('COMMIT');
      return result;
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec('ROLLBACK');
      throw translateSqliteError(error);
    } finally {
      this.#writing = false;
    }
  }

  /**
   * Run fn in the open group transaction (opening one, committed at the end of this event-loop
   * turn), inside a savepoint; the promise settles once the transaction committed. A failing
   * fn rolls back its own savepoint only, and rejects once the group committed.
   */
  #write<T>(fn: () => T): Promise<T> {
    let batch = this.#batch;
    if (!batch) {
      try {
        this.#db.exec('BEGIN IMMEDIATE');
      } catch (error) {
        return Promise.reject(translateSqliteError(error));
      }
      const opened: Waiter[] = [];
      this.#batch = batch = opened;
      setImmediate(() => this.#commit(opened));
    }
    // The group's first write needs no savepoint: if it fails, the whole transaction goes.
    const alone = batch.length === 0;
    let result: T;
    this.#writing = true;
    try {
      if (!alone) this.#db.exec('SAVEPOINT baton_write');
      result = fn();
      if (!alone) this.#db.exec('RELEASE baton_write');
    } catch (error) {
      const failure = translateSqliteError(error);
      this.#undo(batch, alone, error);
      if (this.#batch !== batch) return Promise.reject(failure);
      // Fail once the group committed, so that a retry reads the state that made this write fail.
      return new Promise<T>((_resolve, reject) => {
        batch.push({ resolve: () => reject(failure), reject: () => reject(failure) });
      });
    } finally {
      this.#writing = false;
    }
    return new Promise<T>((resolve, reject) => {
      batch.push({ resolve: () => resolve(result), reject });
      if (batch.length >= maxGroupCommit) this.#commit(batch);
    });
  }

  /**
   * Undo a failed write: its savepoint, or the whole transaction when it was the group's first.
   * If SQLite rolled back the transaction itself, the group's writes are lost: fail them all.
   */
  #undo(batch: Waiter[], alone: boolean, error: unknown): void {
    try {
      if (this.#db.isTransaction && !alone) {
        this.#db.exec('ROLLBACK TO baton_write');
        this.#db.exec('RELEASE baton_write');
        return;
      }
    } catch {
      // Fall through to ending the transaction.
    }
    // The transaction ends here (or SQLite ended it after an I/O error or a full disk), and
    // with it every write of the group.
    this.#rollback();
    if (this.#batch === batch) this.#batch = undefined;
    const lost = translateSqliteError(error);
    for (const waiter of batch) waiter.reject(lost);
  }

  /** Commit the group: every write in it is acknowledged, or every one fails. */
  #commit(batch: Waiter[]): void {
    if (this.#batch !== batch) return;
    this.#batch = undefined;
    this.#endSnapshot();
    try {
      this.#db.exec('COMMIT');
    } catch (error) {
      this.#rollback();
      const failure = translateSqliteError(error);
      for (const waiter of batch) waiter.reject(failure);
      return;
    }
    for (const waiter of batch) waiter.resolve();
  }

  /** End an open transaction without its writes; runs from setImmediate too, so it never throws. */
  #rollback(): void {
    try {
      if (this.#db.isTransaction) this.#db.exec('ROLLBACK');
    } catch {
      // The connection already ended it; nothing of the group is kept either way.
    }
  }

  #project(project_id: string): Project {
    const known = this.#projects.get(project_id);
    if (known) return known;
    const row = this.#sql('SELECT project_id, created_at FROM projects WHERE project_id = ?').get(
      project_id,
    ) as Project | undefined;
    if (!row) throw new BatonError('not_found', `project ${project_id} does not exist`, { project_id });
    const project = { project_id: row.project_id, created_at: row.created_at };
    // Projects are never deleted, so a committed one can be remembered; one read inside a
    // write is not committed yet.
    if (!this.#writing) this.#projects.set(project_id, project);
    return project;
  }

  /**
   * The id of a committed stream, without its head: streams are never deleted, so an id read
   * outside a write is remembered.
   */
  #streamId(stream: StreamKey): number | undefined {
    const name = streamName(stream);
    const key = `${stream.project_id}\u0000${stream.kind}\u0000${name}`;
    const known = this.#streamIds.get(key);
    if (known !== undefined) return known;
    const row = this.#sql('SELECT stream_id FROM streams WHERE project_id = ? AND kind = ? AND name = ?').get(
      stream.project_id,
      stream.kind,
      name,
    ) as { stream_id: number } | undefined;
    if (row && !this.#writing) this.#streamIds.set(key, row.stream_id);
    return row?.stream_id;
  }

  #findStream(stream: StreamKey): StreamRow | undefined {
    return this.#sql(
      `SELECT ${streamColumns} FROM streams WHERE project_id = ? AND kind = ? AND name = ?`,
    ).get(stream.project_id, stream.kind, streamName(stream)) as StreamRow | undefined;
  }

  #stream(stream: StreamKey): StreamRow {
    this.#project(stream.project_id);
    const row = this.#findStream(stream);
    if (!row)
      throw new BatonError('not_found', `stream ${describeStream(stream)} does not exist`, { ...stream });
    return row;
  }

  #ensureStream(stream: StreamKey): StreamRow {
    const found = this.#findStream(stream);
    if (found) return found;
    this.#project(stream.project_id);
    this.#sql(
      `INSERT INTO streams (project_id, kind, name, created_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (project_id, kind, name) DO NOTHING`,
    ).run(stream.project_id, stream.kind, streamName(stream), this.#now());
    return this.#findStream(stream)!;
  }

  #info(row: StreamRow): StreamInfo {
    return {
      stream: streamKey(row.project_id, row.kind, row.name),
      head: row.head,
      created_at: row.created_at,
    };
  }

  async createProject(project_id: string): Promise<Project> {
    const id = checkProjectId(project_id);
    return this.#write(() => {
      this.#insertProject(id);
      return this.#project(id);
    });
  }

  /** Create a project inside a write; nothing when it exists. */
  #insertProject(project_id: string): void {
    this.#sql('INSERT INTO projects (project_id, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING').run(
      project_id,
      this.#now(),
    );
  }

  async getProject(project_id: string): Promise<Project> {
    return this.#project(checkProjectId(project_id));
  }

  async listProjects(): Promise<Project[]> {
    return this.#sql(
      'SELECT project_id, created_at FROM projects ORDER BY project_id',
    ).all() as unknown as Project[];
  }

  async listStreams(project_id: string): Promise<StreamInfo[]> {
    const id = checkProjectId(project_id);
    this.#project(id);
    const rows = this.#sql(
      `SELECT ${streamColumns} FROM streams WHERE project_id = ? ORDER BY kind, name`,
    ).all(id) as unknown as StreamRow[];
    return rows.map((row) => this.#info(row));
  }

  async getStream(stream: StreamKey): Promise<StreamInfo> {
    return this.#info(this.#stream(checkStream(stream)));
  }

  async append(
    stream: StreamKey,
    entries: readonly EntryInput[],
    options: AppendOptions = {},
  ): Promise<AppendResult[]> {
    const key = checkStream(stream);
    const sealed = sealBatch(entries);
    let head = 0;
    const results = await this.#write(() => {
      const row = this.#ensureStream(key);
      requireStreamHead(describeStream(key), options.expected_head, row.head);
      const stored = new Map<string, StoredSource>();
      for (const entry of sealed) {
        if (entry.source_id === null || stored.has(entry.source_id)) continue;
        const found = this.#sql(
          'SELECT position, digest, retracted_at FROM entries WHERE stream_id = ? AND source_id = ?',
        ).get(row.stream_id, entry.source_id) as
          { position: number; digest: Digest; retracted_at: string | null } | undefined;
        if (found) {
          stored.set(entry.source_id, {
            source_id: entry.source_id,
            digest: found.digest,
            position: found.position,
            retracted: found.retracted_at !== null,
          });
        }
      }
      const plan = planAppend(row.head, sealed, stored, describeStream(key));
      if (plan.writes.length > 0) {
        const insert = this.#sql(
          `INSERT INTO entries (stream_id, position, type, source_id, digest, body, recorded_at, kind)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        );
        const now = this.#now();
        plan.writes.forEach((entry, index) => {
          insert.run(
            row.stream_id,
            row.head + index + 1,
            entry.type,
            entry.source_id,
            entry.digest,
            entry.body,
            now,
            entry.kind,
          );
        });
      }
      head = row.head + plan.writes.length;
      return [...plan.results];
    });
    if (head > 0 && results.some((result) => result.created)) this.#tell(key, head);
    return results;
  }

  #tell(stream: StreamKey, head: number): void {
    for (const listener of this.#listeners) {
      try {
        listener({ stream, head });
      } catch {
        // A listener's failure is its own; the append has committed.
      }
    }
  }

  async subscribe(listener: StreamListener): Promise<() => Promise<void>> {
    this.#listeners.add(listener);
    return async () => {
      this.#listeners.delete(listener);
    };
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
    const key = checkStream(stream);
    const kinds = checkKinds(range?.kinds);
    const row = this.#stream(key);
    const bounds = checkRange(key, row.head, range);
    // With kinds, the (stream_id, kind, position) index is named: left to itself the planner walks
    // every position of the stream for the ORDER BY, which is what the kind index avoids.
    const page = this.#sql(
      kinds
        ? `SELECT ${entryColumns} FROM entries INDEXED BY entries_kind WHERE stream_id = ? AND position BETWEEN ? AND ?` +
            ` AND kind IN (${kinds.map(() => '?').join(', ')}) ORDER BY position LIMIT ?`
        : `SELECT ${entryColumns} FROM entries WHERE stream_id = ? AND position BETWEEN ? AND ? ORDER BY position LIMIT ?`,
    );
    const only = kinds ?? [];
    yield* pagedRead(bounds, async (from, to, limit) =>
      (page.all(row.stream_id, from, to, ...only, limit) as unknown as EntryRow[]).map((entry) =>
        rowToEntry(key, entry),
      ),
    );
  }

  /** An exact ref checked, its project required, and its source's row with the given columns. */
  #sourceRow<Row>(
    project_id: string,
    ref: SourceRef,
    columns: string,
  ): { id: string; exact: SourceRef; key: StreamKey; row: Row | undefined } {
    const id = checkProjectId(project_id);
    const exact = checkSourceRef(ref);
    this.#project(id);
    const key: StreamKey = { project_id: id, kind: 'scope', scope_id: exact.scope_id };
    return { id, exact, key, row: this.#rowOf<Row>(key, exact.source_id, columns) };
  }

  /** The row of a source_id in a stream; undefined when the stream or the source does not exist. */
  #rowOf<Row>(stream: StreamKey, source_id: string, columns: string): Row | undefined {
    const stream_id = this.#streamId(stream);
    if (stream_id === undefined) return undefined;
    return this.#lookup(
      `SELECT ${columns} FROM entries WHERE stream_id = ? AND source_id = ?`,
      stream_id,
      source_id,
    ) as Row | undefined;
  }

  async checkSource(project_id: string, ref: SourceRef): Promise<SourceAvailability> {
    const { exact, row } = this.#sourceRow<IdentityRow>(project_id, ref, identityColumns);
    return availability(exact, row);
  }

  async findSource(scope: ScopeKey, source_id: string): Promise<Entry | undefined> {
    const key = checkScope(scope);
    const id = checkSourceId(source_id);
    this.#project(key.project_id);
    const stream = scopeStream(key);
    const row = this.#rowOf<EntryRow>(stream, id, entryColumns);
    return row && rowToEntry(stream, row);
  }

  async readSource(project_id: string, ref: SourceRef): Promise<Entry> {
    const { id, exact, key, row } = this.#sourceRow<EntryRow>(project_id, ref, entryColumns);
    return readableEntry(id, key, exact, row);
  }

  async retractSource(scope: ScopeKey, source_id: string, reason: string): Promise<Entry> {
    const key = checkScope(scope);
    const id = checkSourceId(source_id);
    const why = checkReason(reason);
    const stream = scopeStream(key);
    return this.#write(() => {
      const row = this.#stream(stream);
      const select = this.#sql(`SELECT ${entryColumns} FROM entries WHERE stream_id = ? AND source_id = ?`);
      const entry = select.get(row.stream_id, id) as EntryRow | undefined;
      if (!entry) {
        throw new BatonError('not_found', `source ${id} does not exist in ${describeStream(stream)}`, {
          ...key,
          source_id: id,
        });
      }
      if (entry.retracted_at === null) {
        this.#sql(
          'UPDATE entries SET body = NULL, retracted_at = ?, retraction_reason = ? WHERE stream_id = ? AND source_id = ?',
        ).run(this.#now(), why, row.stream_id, id);
      }
      return rowToEntry(stream, select.get(row.stream_id, id) as unknown as EntryRow);
    });
  }

  #insertPrepared(project_id: string, prepared: PreparedText): void {
    this.#sql(
      'INSERT INTO prepared_handoffs (project_id, digest, body, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
    ).run(project_id, prepared.digest, prepared.text, this.#now());
  }

  async putPrepared(project_id: string, body: JsonObject): Promise<Digest> {
    const id = checkProjectId(project_id);
    const prepared = sealPrepared(body);
    return this.#write(() => {
      this.#project(id);
      this.#insertPrepared(id, prepared);
      return prepared.digest;
    });
  }

  async getPrepared(project_id: string, digest: Digest): Promise<JsonObject> {
    const id = checkProjectId(project_id);
    const exact = checkDigest(digest);
    this.#project(id);
    const row = this.#lookupSettled(
      'SELECT body FROM prepared_handoffs WHERE project_id = ? AND digest = ?',
      id,
      exact,
    ) as { body: string } | undefined;
    if (!row)
      throw new BatonError('not_found', `no prepared handoff ${exact} in ${id}`, {
        project_id: id,
        digest: exact,
      });
    return JSON.parse(row.body) as JsonObject;
  }

  async commitRevision(scope: ScopeKey, expected_head: number, body: JsonObject): Promise<Revision> {
    const key = checkScope(scope);
    const expected = checkExpectedHead(expected_head);
    const prepared = sealPrepared(body);
    const prepared_digest = prepared.digest;
    return this.#write(() => {
      const row = this.#ensureStream(scopeStream(key));
      const replayed = this.#sql(
        'SELECT * FROM handoff_revisions WHERE stream_id = ? AND prepared_digest = ?',
      ).get(row.stream_id, prepared_digest) as RevisionRow | undefined;
      if (replayed) return this.#revision(key.scope_id, replayed);
      const head = this.#revisionHead(row.stream_id);
      if (head !== expected) throw revisionConflict(key.scope_id, expected, head);
      this.#insertPrepared(key.project_id, prepared);
      const committed_at = this.#now();
      this.#sql(
        'INSERT INTO handoff_revisions (stream_id, revision, prepared_digest, committed_at) VALUES (?, ?, ?, ?)',
      ).run(row.stream_id, expected + 1, prepared_digest, committed_at);
      return { scope_id: key.scope_id, revision: expected + 1, prepared_digest, committed_at };
    });
  }

  #revisionHead(stream_id: number): number {
    const row = this.#lookup(
      'SELECT max(revision) AS head FROM handoff_revisions WHERE stream_id = ?',
      stream_id,
    ) as {
      head: number | null;
    };
    return row.head ?? 0;
  }

  async revisionHead(scope: ScopeKey): Promise<number> {
    const key = checkScope(scope);
    this.#project(key.project_id);
    const stream_id = this.#streamId(scopeStream(key));
    return stream_id === undefined ? 0 : this.#revisionHead(stream_id);
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
    this.#project(key.project_id);
    const stream_id = this.#streamId(scopeStream(key));
    const row =
      stream_id === undefined
        ? undefined
        : (this.#lookupSettled(
            'SELECT * FROM handoff_revisions WHERE stream_id = ? AND revision = ?',
            stream_id,
            number,
          ) as RevisionRow | undefined);
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
    this.#project(key.project_id);
    const stream_id = this.#streamId(scopeStream(key));
    if (stream_id === undefined) return [];
    const rows = this.#sql(
      'SELECT * FROM handoff_revisions WHERE stream_id = ? AND revision <= ? ORDER BY revision DESC LIMIT ?',
    ).all(stream_id, through, limit) as unknown as RevisionRow[];
    return rows.map((row) => this.#revision(key.scope_id, row));
  }

  async importEntries(
    stream: StreamKey,
    entries: readonly PortableEntry[],
    options: ImportOptions = {},
  ): Promise<StreamInfo> {
    const key = checkStream(stream);
    const checked = checkImport(entries);
    return this.#write(() => {
      if (options.createProject) this.#insertProject(key.project_id);
      this.#project(key.project_id);
      if (this.#findStream(key)) {
        throw new BatonError(
          'conflict',
          `stream ${describeStream(key)} exists already; import into a new one`,
          {
            ...key,
          },
        );
      }
      const row = this.#ensureStream(key);
      const insert = this.#sql(
        `INSERT INTO entries
           (stream_id, position, type, source_id, digest, body, recorded_at, retracted_at, retraction_reason, kind)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      for (const { body, kind, entry } of checked) {
        insert.run(
          row.stream_id,
          entry.position,
          entry.type,
          entry.source_id,
          entry.digest,
          body,
          entry.recorded_at,
          entry.retracted?.at ?? null,
          entry.retracted?.reason ?? null,
          kind,
        );
      }
      return this.#info(this.#findStream(key)!);
    });
  }

  async createToken(token: NewToken): Promise<TokenRecord> {
    const checked = checkNewToken(token);
    return this.#write(() => {
      this.#project(checked.project_id);
      const created_at = this.#now();
      this.#sql(
        `INSERT INTO tokens (token_id, project_id, token_hash, read_only, label, created_at)
           VALUES (?, ?, ?, ?, ?, ?)`,
      ).run(
        checked.token_id,
        checked.project_id,
        checked.token_hash,
        checked.read_only ? 1 : 0,
        checked.label,
        created_at,
      );
      return { ...checked, created_at, revoked_at: null };
    });
  }

  async findToken(token_hash: string): Promise<TokenRecord | undefined> {
    const row = this.#lookup(
      'SELECT * FROM tokens WHERE token_hash = ? AND revoked_at IS NULL',
      checkHash(token_hash),
    ) as TokenRow | undefined;
    return row && rowToToken(row);
  }

  async listTokens(project_id: string): Promise<TokenRecord[]> {
    const id = checkProjectId(project_id);
    this.#project(id);
    const rows = this.#sql('SELECT * FROM tokens WHERE project_id = ? ORDER BY created_at, token_id').all(
      id,
    ) as unknown as TokenRow[];
    return rows.map(rowToToken);
  }

  async revokeToken(project_id: string, token_id: string): Promise<TokenRecord> {
    const id = checkProjectId(project_id);
    return this.#write(() => {
      const select = this.#sql('SELECT * FROM tokens WHERE project_id = ? AND token_id = ?');
      if (!select.get(id, token_id)) {
        throw new BatonError('not_found', `no token ${String(token_id)} in project ${id}`, {
          project_id: id,
          token_id,
        });
      }
      this.#sql('UPDATE tokens SET revoked_at = coalesce(revoked_at, ?) WHERE token_id = ?').run(
        this.#now(),
        token_id,
      );
      this.#sql('DELETE FROM sessions WHERE token_id = ?').run(token_id);
      return rowToToken(select.get(id, token_id) as unknown as TokenRow);
    });
  }

  async createSession(session: NewSession, now: string): Promise<void> {
    const checked = checkNewSession(session);
    const time = checkTime(now);
    await this.#write(() => {
      this.#sql('DELETE FROM sessions WHERE expires_at <= ?').run(time);
      this.#sql(
        'INSERT INTO sessions (session_hash, token_id, csrf_hash, expires_at) VALUES (?, ?, ?, ?)',
      ).run(checked.session_hash, checked.token_id, checked.csrf_hash, checked.expires_at);
      this.#sql(
        `DELETE FROM sessions WHERE token_id = ?1 AND session_hash NOT IN (
           SELECT session_hash FROM sessions WHERE token_id = ?1
            ORDER BY expires_at DESC, session_hash DESC LIMIT ?2)`,
      ).run(checked.token_id, sessionsPerToken);
    });
  }

  async findSession(session_hash: string, now: string): Promise<SessionRecord | undefined> {
    const row = this.#sql(
      `SELECT sessions.session_hash, sessions.csrf_hash, sessions.expires_at, tokens.*
         FROM sessions JOIN tokens USING (token_id)
        WHERE session_hash = ? AND expires_at > ? AND tokens.revoked_at IS NULL`,
    ).get(checkHash(session_hash), now) as SessionRow | undefined;
    return row && rowToSession(row);
  }

  async deleteSession(session_hash: string): Promise<void> {
    const hash = checkHash(session_hash);
    await this.#write(() => {
      this.#sql('DELETE FROM sessions WHERE session_hash = ?').run(hash);
    });
  }

  async close(): Promise<void> {
    if (this.#batch) this.#commit(this.#batch);
    this.#endSnapshot();
    if (this.#reader !== this.#db && this.#reader.isOpen) this.#reader.close();
    if (this.#db.isOpen) this.#db.close();
  }
}
