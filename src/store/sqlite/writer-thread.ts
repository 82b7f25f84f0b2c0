/**
 * The SQLite writer thread's entry point (see threaded-store.ts): an ordinary SqliteStore on the
 * database file, whose write methods the main thread calls by message. The writes that arrive
 * in one turn of this thread's event loop share one group commit, as they do in one process;
 * the main thread's event loop never waits for a COMMIT or its flush. Each answer carries the
 * stream changes the writes made, for the main thread's listeners.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { BatonError } from '../../core/errors.ts';
import type { StreamListener } from '../store.ts';
import { SqliteStore, type SqliteStoreOptions } from './sqlite-store.ts';
import {
  writeMethods,
  type StreamChange,
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
  port.postMessage({ id: 0, error: describe(error) } satisfies WriterReply);
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

function answer(reply: WriterReply): void {
  const told = changes;
  changes = [];
  port.postMessage(told.length > 0 ? { ...reply, changes: told } : reply);
}

async function call(method: WriteMethod, args: readonly unknown[]): Promise<unknown> {
  const writes = store as unknown as Record<WriteMethod, (...args: readonly unknown[]) => Promise<unknown>>;
  return writes[method](...args);
}

port.on('message', (request: WriterRequest) => {
  if (request.method === 'close') {
    void store.close().finally(() => {
      answer({ id: request.id, result: undefined });
      port.close();
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
});
port.postMessage({ id: 0, result: 'ready' } satisfies WriterReply);
