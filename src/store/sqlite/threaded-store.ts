/**
 * The embedded Store for a long-running server: SQLite with its writes on a thread of their
 * own. A server's event loop otherwise waits inside every group COMMIT, for the flush at FULL
 * and for sealing and inserting each entry; here those run on the writer thread, another core,
 * while the main loop goes on parsing, authenticating, reading and answering. Reads stay on
 * the main thread's own connection (its snapshot per turn and remembered lookups, as in
 * SqliteStore). See docs/sqlite-writer-thread.md.
 *
 * Guarantees are those of SqliteStore: a write is answered only after its group's COMMIT, so
 * nothing is acknowledged before it is durable; once a write is answered, every later read of
 * this process sees it (the reading snapshot ends when the answer arrives); listeners are told
 * of each append before its caller resumes.
 */
import { Worker, type WorkerOptions } from 'node:worker_threads';
import type { Digest } from '../../core/canonical.ts';
import { systemClock } from '../../core/clock.ts';
import { BatonError } from '../../core/errors.ts';
import type { JsonObject } from '../../core/json.ts';
import type { Entry, EntryInput } from '../../core/ledger/entry.ts';
import type { ScopeKey, StreamKey } from '../../core/ledger/names.ts';
import type { Revision } from '../../core/ledger/revision.ts';
import type { AppendResult, SourceReceipt, SourceRef } from '../../core/ledger/source.ts';
import type {
  AppendOptions,
  ImportOptions,
  NewSession,
  NewToken,
  PortableEntry,
  PositionRange,
  Project,
  SessionRecord,
  SourceAvailability,
  SourceInput,
  Store,
  StreamInfo,
  StreamListener,
  TokenRecord,
} from '../store.ts';
import { SqliteStore, type SqliteStoreOptions } from './sqlite-store.ts';
import type { WriterBatch, WriterError, WriterRequest, WriteMethod } from './writer-protocol.ts';

interface Waiter {
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

function rebuild(error: WriterError): Error {
  return error.baton ? new BatonError(error.code, error.message, error.data) : new Error(error.message);
}

const fromSources = import.meta.url.endsWith('.ts');

/** The writer thread's module, next to this one: TypeScript from the sources, JavaScript when built. */
const writerModule = new URL(`./writer-thread.${fromSources ? 'ts' : 'js'}`, import.meta.url);

/**
 * Start the writer thread with this process's Node options. A thread inherits them by default,
 * V8 and process-wide flags included (`--max-old-space-size`, `--title`), which an explicit list
 * may not name (ERR_WORKER_INVALID_EXEC_ARGV). A list is given only when the default would not
 * load the thread's file: `--input-type` applies to a main script only, and the sources need type
 * stripping where Node does not strip by default. If that list names a flag a thread refuses, the
 * thread starts with the flags it needs and no others.
 */
function startWriter(options: WorkerOptions): Worker {
  const inherited = process.execArgv;
  const strips = (process.features as { typescript?: unknown }).typescript;
  const needsStripping = fromSources && !strips && !inherited.includes('--experimental-strip-types');
  const mainOnly = (arg: string) => arg.startsWith('--input-type');
  if (!needsStripping && !inherited.some(mainOnly)) return new Worker(writerModule, options);
  const needed = needsStripping ? ['--experimental-strip-types'] : [];
  try {
    return new Worker(writerModule, {
      ...options,
      execArgv: [...inherited.filter((arg) => !mainOnly(arg)), ...needed],
    });
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'ERR_WORKER_INVALID_EXEC_ARGV') throw error;
    return new Worker(writerModule, { ...options, execArgv: needed });
  }
}

/**
 * Start the writer thread (it opens the database and applies migrations), then open this
 * thread's reading connection. Fails as SqliteStore does when the database cannot be opened.
 */
export async function openThreadedSqliteStore(options: SqliteStoreOptions): Promise<ThreadedSqliteStore> {
  if (options.path === ':memory:') {
    throw new BatonError(
      'invalid_input',
      'a writer thread needs a database file: :memory: lives in one connection',
    );
  }
  if (options.clock !== undefined && options.clock !== systemClock) {
    throw new BatonError(
      'invalid_input',
      'a writer thread stamps entries with the system clock; drop the clock option',
    );
  }
  const { clock: _clock, ...cloneable } = options;
  const worker = startWriter({ workerData: cloneable, name: 'baton-sqlite-writer' });
  let listening: {
    message: (batch: WriterBatch) => void;
    error: (error: Error) => void;
    exit: (code: number) => void;
  };
  const started = await new Promise<WriterBatch>((resolve, reject) => {
    listening = {
      message: resolve,
      error: reject,
      exit: (code) => reject(new Error(`the SQLite writer thread exited (${code}) before it started`)),
    };
    worker.on('message', listening.message).on('error', listening.error).on('exit', listening.exit);
  }).finally(() => {
    // Only these: the Worker's own listeners start and stop the delivery of messages.
    worker.off('message', listening.message).off('error', listening.error).off('exit', listening.exit);
  });
  const ready = started.replies[0];
  if (ready && 'error' in ready) {
    await worker.terminate();
    throw rebuild(ready.error);
  }
  let reader: SqliteStore;
  try {
    reader = new SqliteStore(options);
  } catch (error) {
    await worker.terminate();
    throw error;
  }
  return new ThreadedSqliteStore(reader, worker);
}

export class ThreadedSqliteStore implements Store {
  readonly backend = 'sqlite';
  readonly privateFiles: readonly string[];
  readonly #reader: SqliteStore;
  readonly #worker: Worker;
  readonly #waiting = new Map<number, Waiter>();
  readonly #listeners = new Set<StreamListener>();
  #next = 1;
  /** Set once the writer thread is gone: every later write fails with it. */
  #stopped: BatonError | undefined;
  #closing: Promise<void> | undefined;

  constructor(reader: SqliteStore, worker: Worker) {
    this.#reader = reader;
    this.privateFiles = reader.privateFiles;
    this.#worker = worker;
    worker.on('message', (batch: WriterBatch) => this.#receive(batch));
    worker.on('error', (error: Error) => this.#stop(`it failed: ${error.message}`));
    worker.on('exit', (code) => this.#stop(`it exited (${code})`));
    // An idle store does not keep the process alive; a write in flight does.
    worker.unref();
  }

  #stop(why: string): void {
    this.#stopped ??= new BatonError('unavailable', `the SQLite writer thread stopped: ${why}`);
    for (const waiter of this.#waiting.values()) waiter.reject(this.#stopped);
    this.#waiting.clear();
  }

  /** Send a request at once: the thread groups what reaches it in one turn of its own loop. */
  #send(request: WriterRequest): Promise<unknown> {
    if (this.#stopped) return Promise.reject(this.#stopped);
    return new Promise((resolve, reject) => {
      try {
        this.#worker.postMessage([request]);
      } catch (error) {
        // Only values JSON could carry cross: anything else (a function, a symbol) is refused here.
        reject(
          new BatonError(
            'invalid_input',
            `${request.method} got a value that cannot be stored: ${(error as Error).message}`,
          ),
        );
        return;
      }
      this.#waiting.set(request.id, { resolve, reject });
      if (this.#waiting.size === 1) this.#worker.ref();
    });
  }

  #write<T>(method: WriteMethod, ...args: unknown[]): Promise<T> {
    return this.#send({ id: this.#next++, method, args }) as Promise<T>;
  }

  #settle(id: number, settle: (waiter: Waiter) => void): void {
    const waiter = this.#waiting.get(id);
    if (!waiter) return;
    this.#waiting.delete(id);
    if (this.#waiting.size === 0) this.#worker.unref();
    settle(waiter);
  }

  #receive(batch: WriterBatch): void {
    // The writes committed: the reads that follow see them, not this turn's older snapshot.
    this.#reader.refresh();
    for (const change of batch.changes ?? []) {
      for (const listener of this.#listeners) {
        try {
          listener(change);
        } catch {
          // A listener's failure is its own; the append has committed.
        }
      }
    }
    for (const reply of batch.replies) {
      this.#settle(reply.id, (waiter) =>
        'error' in reply ? waiter.reject(rebuild(reply.error)) : waiter.resolve(reply.result),
      );
    }
  }

  createProject(project_id: string): Promise<Project> {
    return this.#write('createProject', project_id);
  }
  getProject(project_id: string): Promise<Project> {
    return this.#reader.getProject(project_id);
  }
  listProjects(): Promise<Project[]> {
    return this.#reader.listProjects();
  }
  listStreams(project_id: string): Promise<StreamInfo[]> {
    return this.#reader.listStreams(project_id);
  }
  getStream(stream: StreamKey): Promise<StreamInfo> {
    return this.#reader.getStream(stream);
  }
  append(
    stream: StreamKey,
    entries: readonly EntryInput[],
    options?: AppendOptions,
  ): Promise<AppendResult[]> {
    return this.#write('append', stream, entries, options);
  }
  async subscribe(listener: StreamListener): Promise<() => Promise<void>> {
    this.#listeners.add(listener);
    return async () => {
      this.#listeners.delete(listener);
    };
  }
  captureSource(scope: ScopeKey, source: SourceInput): Promise<SourceReceipt> {
    return this.#write('captureSource', scope, source);
  }
  readStream(stream: StreamKey, range?: PositionRange): AsyncIterable<Entry> {
    return this.#reader.readStream(stream, range);
  }
  findSource(scope: ScopeKey, source_id: string): Promise<Entry | undefined> {
    return this.#reader.findSource(scope, source_id);
  }
  readSource(project_id: string, ref: SourceRef): Promise<Entry> {
    return this.#reader.readSource(project_id, ref);
  }
  checkSource(project_id: string, ref: SourceRef): Promise<SourceAvailability> {
    return this.#reader.checkSource(project_id, ref);
  }
  retractSource(scope: ScopeKey, source_id: string, reason: string): Promise<Entry> {
    return this.#write('retractSource', scope, source_id, reason);
  }
  putPrepared(project_id: string, body: JsonObject): Promise<Digest> {
    return this.#write('putPrepared', project_id, body);
  }
  getPrepared(project_id: string, digest: Digest): Promise<JsonObject> {
    return this.#reader.getPrepared(project_id, digest);
  }
  commitRevision(scope: ScopeKey, expected_head: number, body: JsonObject): Promise<Revision> {
    return this.#write('commitRevision', scope, expected_head, body);
  }
  revisionHead(scope: ScopeKey): Promise<number> {
    return this.#reader.revisionHead(scope);
  }
  getRevision(scope: ScopeKey, revision: number): Promise<Revision> {
    return this.#reader.getRevision(scope, revision);
  }
  listRevisions(scope: ScopeKey, options?: { limit?: number; through?: number }): Promise<Revision[]> {
    return this.#reader.listRevisions(scope, options);
  }
  importEntries(
    stream: StreamKey,
    entries: readonly PortableEntry[],
    options?: ImportOptions,
  ): Promise<StreamInfo> {
    return this.#write('importEntries', stream, entries, options);
  }
  createToken(token: NewToken): Promise<TokenRecord> {
    return this.#write('createToken', token);
  }
  findToken(token_hash: string): Promise<TokenRecord | undefined> {
    return this.#reader.findToken(token_hash);
  }
  listTokens(project_id: string): Promise<TokenRecord[]> {
    return this.#reader.listTokens(project_id);
  }
  revokeToken(project_id: string, token_id: string): Promise<TokenRecord> {
    return this.#write('revokeToken', project_id, token_id);
  }
  createSession(session: NewSession, now: string): Promise<void> {
    return this.#write('createSession', session, now);
  }
  findSession(session_hash: string, now: string): Promise<SessionRecord | undefined> {
    return this.#reader.findSession(session_hash, now);
  }
  deleteSession(session_hash: string): Promise<void> {
    return this.#write('deleteSession', session_hash);
  }

  /** Commit what is pending on the writer thread, end it, then close the reading connection. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      if (!this.#stopped) {
        const exited = new Promise<void>((resolve) => this.#worker.once('exit', () => resolve()));
        await this.#send({ id: this.#next++, method: 'close' }).catch(() => undefined);
        // Held until the thread has ended, so that the process waits for it.
        this.#worker.ref();
        await exited;
      }
      await this.#reader.close();
    })();
    return this.#closing;
  }
}
