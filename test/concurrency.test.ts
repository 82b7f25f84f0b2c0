/**
 * Several processes on one Store at once: appends from 8 processes get unique, gap-free
 * positions, batches stay contiguous and every acknowledged receipt is stored as acknowledged;
 * of 50 commits from 5 processes on the same head exactly one wins and every other one is a
 * revision_conflict naming the real head.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { scopeStream, type ScopeKey } from '../src/core/ledger/names.ts';
import type { SourceReceipt } from '../src/core/ledger/source.ts';
import { collect, expectBatonError } from '../src/store/conformance/store.conformance.ts';
import { openStore, type StoreLocation } from '../src/store/open.ts';
import {
  preparedFor,
  startWorker,
  type WorkerArgs,
  type WorkerEvent,
  type WorkerHandle,
} from './helpers/append-worker.ts';
import { dropSchema, freshSchemaName, postgresUrl } from './helpers/postgres.ts';

const scope: ScopeKey = { project_id: 'race', scope_id: 'shared-head' };
const stream = scopeStream(scope);
const appenders = 8;
const committers = 5;
const perCommitter = 10;

/** A fresh, empty database per call, and how to remove it. */
type Fresh = () => Promise<{ location: StoreLocation; dispose: () => Promise<void> }>;

/** Start workers, wait until all of them have opened the store, then release them together. */
async function runTogether(all: readonly WorkerArgs[]): Promise<WorkerHandle[]> {
  const workers = all.map((args) => startWorker({ ...args, wait: true }));
  try {
    await Promise.all(workers.map((worker) => worker.ready));
  } catch (error) {
    for (const worker of workers) worker.child.kill('SIGKILL');
    throw error;
  }
  for (const worker of workers) worker.go();
  for (const [index, worker] of workers.entries()) {
    const exit = await worker.exited;
    const failed = worker.events.find((event) => event.event === 'failed');
    expect(failed, `worker ${index} failed: ${JSON.stringify(failed)}`).toBeUndefined();
    expect({ code: exit.code, signal: exit.signal }, `worker ${index}: ${exit.stderr}`).toEqual({
      code: 0,
      signal: null,
    });
  }
  return workers;
}

function eventsOf<K extends WorkerEvent['event']>(
  worker: WorkerHandle,
  kind: K,
): Extract<WorkerEvent, { event: K }>[] {
  return worker.events.filter((event): event is Extract<WorkerEvent, { event: K }> => event.event === kind);
}

/** perAppender: sources each of the appending processes captures. */
function describeConcurrency(name: string, fresh: Fresh, perAppender: number): void {
  describe(`concurrent writers: ${name}`, () => {
    async function withDatabase(fn: (location: StoreLocation) => Promise<void>): Promise<void> {
      const { location, dispose } = await fresh();
      try {
        await fn(location);
      } finally {
        await dispose();
      }
    }

    it(`gives ${appenders} processes appending to one stream unique, gap-free positions`, () =>
      withDatabase(async (location) => {
        const store = await openStore(location);
        try {
          await store.createProject(scope.project_id);
          const workers = await runTogether(
            Array.from({ length: appenders }, (_, n) => ({
              location,
              scope,
              worker: `w${n}`,
              mode: 'append' as const,
              count: perAppender,
              batchEvery: 8,
              batchSize: 5,
            })),
          );
          const total = appenders * perAppender;
          const receipts = workers.flatMap((worker) => eventsOf(worker, 'ack').map((ack) => ack.receipt));
          expect(receipts.length).toBe(total);

          const entries = await collect(store.readStream(stream));
          expect(entries.map((entry) => entry.position)).toEqual(
            Array.from({ length: total }, (_, n) => n + 1),
          );
          expect((await store.getStream(stream)).head).toBe(total);
          expect(new Set(entries.map((entry) => entry.source_id)).size).toBe(total);
          expect(new Set(entries.map((entry) => entry.global_seq)).size).toBe(total);
          for (const receipt of receipts) {
            const entry = entries[receipt.position - 1];
            expect({ source_id: entry?.source_id, digest: entry?.digest }).toEqual({
              source_id: receipt.source_ref.source_id,
              digest: receipt.digest,
            });
          }

          // Each batch took consecutive positions: nothing of another writer landed inside it.
          let batches = 0;
          for (const worker of workers) {
            const byId = new Map<string, SourceReceipt>(
              eventsOf(worker, 'ack').map((ack) => [ack.receipt.source_ref.source_id, ack.receipt]),
            );
            for (const attempt of eventsOf(worker, 'attempt')) {
              if (attempt.source_ids.length < 2) continue;
              batches += 1;
              const positions = attempt.source_ids.map((id) => byId.get(id)?.position ?? -1);
              expect(positions).toEqual(positions.map((_, n) => positions[0]! + n));
            }
          }
          expect(batches).toBeGreaterThan(0);

          // How much the writers interleaved depends on scheduling, so it is reported, not asserted.
          const writers = entries.map((entry) => entry.source_id?.split('-')[0]);
          const switches = writers.filter((writer, n) => n > 0 && writer !== writers[n - 1]).length;
          console.info(
            `${name}: ${total} entries from ${appenders} processes; the writer changes ${switches} times`,
          );
        } finally {
          await store.close();
        }
      }));

    it(`lets exactly one of ${committers * perCommitter} commits from ${committers} processes on one head win`, () =>
      withDatabase(async (location) => {
        const store = await openStore(location);
        try {
          await store.createProject(scope.project_id);
          await store.commitRevision(scope, 0, preparedFor('setup', 0));
          const workers = await runTogether(
            Array.from({ length: committers }, (_, n) => ({
              location,
              scope,
              worker: `c${n}`,
              mode: 'commit' as const,
              count: perCommitter,
              expected_head: 1,
            })),
          );
          const won = workers.flatMap((worker) => eventsOf(worker, 'committed').map((e) => e.revision));
          const lost = workers.flatMap((worker) => eventsOf(worker, 'rejected').map((e) => e.error));
          expect(won.length + lost.length).toBe(committers * perCommitter);

          const head = await store.revisionHead(scope);
          expect(head).toBe(2);
          expect(won.length).toBe(1);
          expect(won[0]!.revision).toBe(2);
          expect(await store.getRevision(scope, 2)).toEqual(won[0]);
          expect(lost.length).toBe(committers * perCommitter - 1);
          for (const error of lost) {
            expect(error).toEqual({
              name: 'BatonError',
              code: 'revision_conflict',
              message: expect.any(String) as string,
              data: { scope_id: scope.scope_id, expected_head: 1, actual_head: head },
            });
          }
          await expectBatonError(
            store.commitRevision(scope, 1, preparedFor('late', 0)),
            'revision_conflict',
            {
              scope_id: scope.scope_id,
              expected_head: 1,
              actual_head: 2,
            },
          );
          expect((await store.listRevisions(scope)).map((revision) => revision.revision)).toEqual([2, 1]);
        } finally {
          await store.close();
        }
      }));
  });
}

describeConcurrency(
  'sqlite',
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-concurrency-'));
    return {
      location: { backend: 'sqlite', path: join(dir, 'race.db'), synchronous: 'full' },
      dispose: async () => rmSync(dir, { recursive: true, force: true }),
    };
  },
  200,
);

if (postgresUrl) {
  const url = postgresUrl;
  describeConcurrency(
    'postgres',
    async () => {
      const schema = freshSchemaName();
      return { location: { backend: 'postgres', url, schema }, dispose: () => dropSchema(schema) };
    },
    75,
  );
} else {
  describe('concurrent writers: postgres', () => {
    it.skip('needs BATON_TEST_POSTGRES_URL (skipped: no PostgreSQL configured)', () => {});
  });
}
