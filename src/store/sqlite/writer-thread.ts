/**
 * The SQLite writer thread's entry point (see threaded-store.ts): an ordinary SqliteStore on the
 * database file, whose write methods the main thread calls by message. The writes that arrive
 * in one turn of this thread's event loop share one group commit, as they do in one process;
 * the main thread's event loop never waits for a COMMIT or its flush. The answers of a group go
 * back in one message, with the stream changes the writes made, for the main thread's listeners.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { BatonError } from '../../core/errors.ts';
import type { StreamListener } from '../store.ts';
import { SqliteStore, type SqliteStoreOptions } from './sqlite-store.ts';
import {
  writeMethods,
  type StreamChange,
  type WriterBatch,
  type WriterError,
  type WriterReply,
  type WriterRequest,
  type WriteMethod,
} from './writer-protocol.ts';

const port = parentPort!;
let store: SqliteStore;
try {
  store = new SqliteStore(workerData as SqliteStoreOptions);
} catch (error) {
  // The database cannot be opened (a newer schema, a path that is not a database): say why.
  port.postMessage({ replies: [{ id: 0, error: describe(error) }] } satisfies WriterBatch);
  port.close();
  process.exit(0);
}

let changes: StreamChange[] = [];
const collect: StreamListener = (change) => changes.push(change);
await store.subscribe(collect);

function describe(error: unknown): WriterError {
  if (error instanceof BatonError) {
    return { baton: true, code: error.code, message: error.message, data: error.data };
  }
  return { baton: false, message: error instanceof Error ? error.message : String(error) };
}

/** The answers not sent yet: a group's answers settle in one run of microtasks and go in one message. */
let outbox: WriterReply[] = [];

function flush(): void {
  const replies = outbox;
  const batch: WriterBatch = changes.length > 0 ? { replies, changes } : { replies };
  outbox = [];
  changes = [];
  try {
    port.postMessage(batch);
    return;
  } catch {
    // An answer holds a value that cannot cross: send each alone, that one as an error, so
    // that no caller waits forever and this thread lives on.
  }
  port.postMessage({ replies: [], ...(batch.changes ? { changes: batch.changes } : {}) });
  for (const reply of replies) {
    try {
      port.postMessage({ replies: [reply] });
    } catch (error) {
      const failure = new Error(`the write's answer could not be sent: ${(error as Error).message}`);
      port.postMessage({ replies: [{ id: reply.id, error: describe(failure) }] });
    }
  }
}

function answer(reply: WriterReply): void {
  if (outbox.length === 0) queueMicrotask(flush);
  outbox.push(reply);
}

async function call(method: WriteMethod, args: readonly unknown[]): Promise<unknown> {
  const writes = store as unknown as Record<WriteMethod, (...args: readonly unknown[]) => Promise<unknown>>;
  return writes[method](...args);
}

function handle(request: WriterRequest): void {
  if (request.method === 'close') {
    void store.close().finally(() => {
      answer({ id: request.id, result: undefined });
      queueMicrotask(() => port.close());
    });
    return;
  }
  if (!writeMethods.includes(request.method)) {
    answer({ id: request.id, error: describe(new Error(`not a write method: ${String(request.method)}`)) });
    return;
  }
  call(request.method, request.args).then(
    (result) => answer({ id: request.id, result }),
    (error: unknown) => answer({ id: request.id, error: describe(error) }),
  );
}

// The main thread sends the writes of one of its turns in one message.
port.on('message', (requests: readonly WriterRequest[]) => {
  for (const request of requests) handle(request);
});
port.postMessage({ replies: [{ id: 0, result: 'ready' }] } satisfies WriterBatch);
