/**
 * The append worker: a child process that captures sources into, or commits revisions on, one
 * scope of a Store and reports every step as one JSON line on stdout, so a parent that kills it
 * knows what was acknowledged and what was in flight. Also the parent's handle for starting one.
 *
 * Run as `node append-worker.ts '<WorkerArgs JSON>'`. Lines it prints (`WorkerEvent`):
 * `ready` once the store is open; `attempt` naming the source_ids of the next append before it
 * starts; `ack` with the receipt of each source that append acknowledged; `committed` or
 * `rejected` for each revision commit; `done` before a clean exit; `failed` for an unexpected
 * error. With `wait`, it reads one line from stdin after `ready` before it starts, so a parent
 * can start several workers together.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { JsonObject } from '../../src/core/json.ts';
import type { EntryInput } from '../../src/core/ledger/entry.ts';
import { scopeStream, type ScopeKey } from '../../src/core/ledger/names.ts';
import type { Revision } from '../../src/core/ledger/revision.ts';
import { sourceReceipt, type SourceReceipt } from '../../src/core/ledger/source.ts';
import { openStore, type StoreLocation } from '../../src/store/open.ts';
import type { SourceInput, Store } from '../../src/store/store.ts';

export interface WorkerArgs {
  readonly location: StoreLocation;
  readonly scope: ScopeKey;
  /** Prefix of every source_id and prepared body this worker writes. */
  readonly worker: string;
  /**
   * append: captures source_ids `${worker}-${start + i}` for i < count (count 0: until killed),
   * every batchEvery-th append as one store.append of batchSize sources.
   * commit: count commitRevision calls on expected_head, all started at once.
   */
  readonly mode: 'append' | 'commit';
  readonly count: number;
  readonly start?: number;
  readonly batchEvery?: number;
  readonly batchSize?: number;
  readonly expected_head?: number;
  readonly wait?: boolean;
}

export interface WorkerError {
  readonly name: string;
  readonly code?: string;
  readonly message: string;
  readonly data?: Readonly<Record<string, unknown>>;
}

export type WorkerEvent =
  | { readonly event: 'ready'; readonly pid: number }
  | { readonly event: 'attempt'; readonly source_ids: readonly string[] }
  | { readonly event: 'ack'; readonly receipt: SourceReceipt }
  | { readonly event: 'committed'; readonly revision: Revision }
  | { readonly event: 'rejected'; readonly error: WorkerError }
  | { readonly event: 'done' }
  | { readonly event: 'failed'; readonly error: WorkerError };

/**
 * The content and metadata a worker captures under a source_id: a pure function of it, so a
 * parent can retry exactly what a killed worker attempted. Bodies run from about 150 bytes to
 * 6 KB, so that many straddle a 4 KiB database page.
 */
export function sourceFor(source_id: string): SourceInput {
  const hash = createHash('sha256').update(source_id).digest();
  const length = hash.readUInt16BE(0) % 6000;
  return {
    source_id,
    content: {
      source_id,
      text: `evidence for ${source_id}`,
      filler: hash.toString('hex').repeat(64).slice(0, length),
    },
    metadata: { kind: 'concurrency-test', bytes: length },
  };
}

/** The prepared handoff body of commit n of a worker. */
export function preparedFor(worker: string, n: number): JsonObject {
  return { schema: 'baton.prepared-handoff/v1', objective: `${worker} commit ${n}` };
}

/**
 * Write one event with a blocking write(2) on fd 1: once it returns the line is in the kernel,
 * and the parent reads it even if this process is killed right after. process.stdout is never
 * touched: it would make fd 1 non-blocking and queue lines in memory once the socket is full,
 * and a SIGKILL would lose them.
 */
function emit(event: WorkerEvent): void {
  writeSync(1, `${JSON.stringify(event)}\n`);
}

function describeError(error: unknown): WorkerError {
  if (error instanceof Error) {
    const { code, data } = error as Error & { code?: unknown; data?: Record<string, unknown> };
    return {
      name: error.name,
      message: error.message,
      ...(typeof code === 'string' ? { code } : {}),
      ...(data ? { data } : {}),
    };
  }
  return { name: 'unknown', message: String(error) };
}

function waitForGo(): Promise<void> {
  return new Promise((resolve) => {
    process.stdin.once('data', () => resolve());
    process.stdin.once('end', () => resolve());
  });
}

async function appendLoop(store: Store, args: WorkerArgs): Promise<void> {
  const start = args.start ?? 0;
  const batchEvery = args.batchEvery ?? 0;
  const batchSize = args.batchSize ?? 1;
  const stream = scopeStream(args.scope);
  let next = start;
  for (let step = 0; args.count === 0 || next < start + args.count; step += 1) {
    const size = batchEvery > 0 && step % batchEvery === batchEvery - 1 ? batchSize : 1;
    const last = args.count === 0 ? next + size : Math.min(next + size, start + args.count);
    const ids = Array.from({ length: last - next }, (_, n) => `${args.worker}-${next + n}`);
    next = last;
    emit({ event: 'attempt', source_ids: ids });
    if (ids.length === 1) {
      emit({ event: 'ack', receipt: await store.captureSource(args.scope, sourceFor(ids[0]!)) });
      continue;
    }
    const entries: EntryInput[] = ids.map((id) => ({ type: 'source', ...sourceFor(id) }));
    const results = await store.append(stream, entries);
    for (const [index, result] of results.entries()) {
      emit({
        event: 'ack',
        receipt: sourceReceipt(args.scope.scope_id, ids[index]!, result.digest, result.position),
      });
    }
  }
}

async function commitAll(store: Store, args: WorkerArgs): Promise<void> {
  const attempts = await Promise.allSettled(
    Array.from({ length: args.count }, (_, n) =>
      store.commitRevision(args.scope, args.expected_head ?? 0, preparedFor(args.worker, n)),
    ),
  );
  for (const attempt of attempts) {
    if (attempt.status === 'fulfilled') emit({ event: 'committed', revision: attempt.value });
    else emit({ event: 'rejected', error: describeError(attempt.reason) });
  }
}

async function main(json: string): Promise<void> {
  const args = JSON.parse(json) as WorkerArgs;
  const store = await openStore(args.location);
  try {
    emit({ event: 'ready', pid: process.pid });
    if (args.wait) {
      await waitForGo();
      process.stdin.pause();
    }
    if (args.mode === 'append') await appendLoop(store, args);
    else await commitAll(store, args);
    emit({ event: 'done' });
  } finally {
    await store.close();
  }
}

export const workerPath = fileURLToPath(import.meta.url);

if (process.argv[1] === workerPath) {
  main(process.argv[2] ?? '{}').catch((error: unknown) => {
    emit({ event: 'failed', error: describeError(error) });
    process.exitCode = 1;
  });
}

/** A running worker as its parent sees it. */
export interface WorkerHandle {
  readonly child: ChildProcessByStdio<Writable, Readable, Readable>;
  /** Every event printed so far, in order. */
  readonly events: WorkerEvent[];
  /** Resolves at `ready`; rejects when the worker exits before it. */
  readonly ready: Promise<void>;
  /** Resolves once the worker has exited and its output has been read to the end. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
  /** Release a worker started with `wait`. */
  go(): void;
}

export function startWorker(args: WorkerArgs): WorkerHandle {
  const child = spawn(process.execPath, ['--no-warnings', workerPath, JSON.stringify(args)], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const events: WorkerEvent[] = [];
  let stderr = '';
  let pending = '';
  let onReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => (onReady = resolve));
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    const lines = (pending + chunk).split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      const event = JSON.parse(line) as WorkerEvent;
      events.push(event);
      if (event.event === 'ready') onReady();
    }
  });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>(
    (resolve) => child.on('close', (code, signal) => resolve({ code, signal, stderr })),
  );
  const readyOrExit = Promise.race([
    ready,
    exited.then(({ code, signal, stderr: text }) => {
      const failed = events.find((event) => event.event === 'failed');
      throw new Error(
        `worker ${args.worker} exited (${code ?? signal}) before it was ready: ${JSON.stringify(failed)} ${text}`,
      );
    }),
  ]);
  readyOrExit.catch(() => {});
  return {
    child,
    events,
    ready: readyOrExit,
    exited,
    go: () => child.stdin.end('go\n'),
  };
}
