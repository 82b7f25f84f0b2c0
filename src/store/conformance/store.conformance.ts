/**
 * The one conformance suite every Store backend passes. A backend's test file calls
 * describeStore(name, factory) once; the factory makes a fresh, empty database per test.
 */
import { describe, expect, it } from 'vitest';
import { digestOf, sha256Digest } from '../../core/canonical.ts';
import { BatonError, type ErrorCode } from '../../core/errors.ts';
import { bodyMatches, entryBody, ledgerLimits, type Entry } from '../../core/ledger/entry.ts';
import type { ScopeKey, StreamKey } from '../../core/ledger/names.ts';
import { sessionsPerToken, type Store } from '../store.ts';

export interface StoreHarness {
  /** Open a store on this harness's database (the same database each time). */
  open(): Promise<Store>;
  /** Close what open() returned and drop the database. */
  dispose(): Promise<void>;
}

export type StoreFactory = () => Promise<StoreHarness>;

const project_id = 'acme';
const scope: ScopeKey = { project_id, scope_id: 'auto-refresh' };
const stream: StreamKey = { project_id, kind: 'scope', scope_id: 'auto-refresh' };
const session: StreamKey = { project_id, kind: 'session', session_id: 'run-1' };

export async function expectBatonError(
  promise: Promise<unknown> | (() => unknown),
  code: ErrorCode,
  data?: Record<string, unknown>,
): Promise<BatonError> {
  let caught: unknown;
  try {
    await (typeof promise === 'function' ? promise() : promise);
  } catch (error) {
    caught = error;
  }
  expect(caught, `expected BatonError ${code}`).toBeInstanceOf(BatonError);
  const error = caught as BatonError;
  expect(error.code).toBe(code);
  if (data) expect(error.data).toMatchObject(data);
  return error;
}

export async function collect(entries: AsyncIterable<Entry>): Promise<Entry[]> {
  const all: Entry[] = [];
  for await (const entry of entries) all.push(entry);
  return all;
}

function note(n: number, extra: Record<string, unknown> = {}) {
  return {
    type: 'source',
    source_id: `note-${n}`,
    content: { text: `note ${n}`, ...extra },
    metadata: { kind: 'note' },
  };
}

export function describeStore(name: string, factory: StoreFactory): void {
  describe(`Store conformance: ${name}`, () => {
    async function withStore(fn: (store: Store, harness: StoreHarness) => Promise<void>): Promise<void> {
      const harness = await factory();
      try {
        const store = await harness.open();
        await store.createProject(project_id);
        await fn(store, harness);
      } finally {
        await harness.dispose();
      }
    }

    describe('projects', () => {
      it('creates a project once and finds it again', () =>
        withStore(async (store) => {
          const again = await store.createProject(project_id);
          expect(again.project_id).toBe(project_id);
          expect(await store.getProject(project_id)).toEqual(again);
          expect((await store.listProjects()).map((p) => p.project_id)).toEqual([project_id]);
        }));

      it('rejects a bad project id and reports a missing one', () =>
        withStore(async (store) => {
          await expectBatonError(() => store.createProject('Not A Slug'), 'invalid_input');
          await expectBatonError(store.getProject('nobody'), 'not_found', { project_id: 'nobody' });
          await expectBatonError(store.append({ ...stream, project_id: 'nobody' }, [note(1)]), 'not_found');
          expect((await store.listProjects()).length).toBe(1);
        }));
    });

    describe('append', () => {
      it('appends only while the head is still the expected one, and writes nothing otherwise', () =>
        withStore(async (store) => {
          await store.append(session, [{ type: 'user_message', content: 'one' }], { expected_head: 0 });
          await expectBatonError(
            store.append(session, [{ type: 'user_message', content: 'late' }], { expected_head: 0 }),
            'revision_conflict',
            { expected_head: 0, actual_head: 1 },
          );
          await store.append(session, [{ type: 'user_message', content: 'two' }], { expected_head: 1 });
          await expectBatonError(
            store.append(session, [{ type: 'user_message', content: 'x' }], { expected_head: -1 }),
            'invalid_input',
          );
          expect((await store.getStream(session)).head).toBe(2);
          const fresh: StreamKey = { project_id, kind: 'session', session_id: 'never' };
          await expectBatonError(
            store.append(fresh, [{ type: 'user_message', content: 'x' }], { expected_head: 3 }),
            'revision_conflict',
            { actual_head: 0 },
          );
          await expectBatonError(store.getStream(fresh), 'not_found');
        }));

      it('tells subscribers the new head after an append commits', () =>
        withStore(async (store) => {
          const seen: { name: string; head: number }[] = [];
          const arrived = new Promise<void>((resolve) => {
            void store
              .subscribe(({ stream: changed, head }) => {
                if (changed.kind !== 'session') return;
                seen.push({ name: changed.session_id, head });
                if (head === 3) resolve();
              })
              .then(async (unsubscribe) => {
                await store.append(session, [{ type: 'user_message', content: 'a' }]);
                await store.append(session, [
                  { type: 'user_message', content: 'b' },
                  { type: 'user_message', content: 'c' },
                ]);
                await arrived;
                await unsubscribe();
              });
          });
          await arrived;
          expect(seen).toEqual([
            { name: 'run-1', head: 1 },
            { name: 'run-1', head: 3 },
          ]);
        }));

      it('gives gap-free positions per stream and a rising global sequence', () =>
        withStore(async (store) => {
          const first = await store.append(stream, [note(1), note(2)]);
          const other = await store.append(session, [{ type: 'user_message', content: 'hi' }]);
          const third = await store.append(stream, [note(3)]);
          expect([...first, ...third].map((r) => r.position)).toEqual([1, 2, 3]);
          expect(other.map((r) => r.position)).toEqual([1]);
          const entries = await collect(store.readStream(stream));
          expect(entries.map((e) => e.position)).toEqual([1, 2, 3]);
          const seqs = entries.map((e) => e.global_seq);
          expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
          expect(new Set(seqs).size).toBe(3);
          expect((await store.getStream(stream)).head).toBe(3);
          expect((await store.getStream(session)).head).toBe(1);
          // list_sessions reuses a summary while its stream's listed head is unchanged.
          const listed = (await store.listStreams(project_id)).map(({ stream, head }) => ({ stream, head }));
          expect(listed).toEqual([
            { stream, head: 3 },
            { stream: session, head: 1 },
          ]);
          await store.append(session, [{ type: 'user_message', content: 'again' }]);
          expect((await store.listStreams(project_id)).map(({ head }) => head)).toEqual([3, 2]);
        }));

      it('stores the canonical body under its digest', () =>
        withStore(async (store) => {
          const [result] = await store.append(stream, [note(1)]);
          const [entry] = await collect(store.readStream(stream));
          expect(entry!.digest).toBe(result!.digest);
          expect(entry!.digest).toBe(digestOf({ content: { text: 'note 1' }, metadata: { kind: 'note' } }));
          expect(bodyMatches(entryBody(entry!.content, entry!.metadata!), entry!.digest)).toBe(true);
          expect(entry!.content).toEqual({ text: 'note 1' });
          expect(entry!.type).toBe('source');
          expect(entry!.source_id).toBe('note-1');
          expect(entry!.retracted).toBeNull();
        }));

      it('keeps every key of the content, "__proto__" included', () =>
        withStore(async (store) => {
          const content = JSON.parse('{"__proto__":{"a":1},"b":2}') as Record<string, unknown>;
          const metadata = JSON.parse('{"__proto__":"m"}') as Record<string, string>;
          const [result] = await store.append(stream, [{ type: 'source', content: content, metadata }]);
          expect(result!.digest).toBe(digestOf({ content, metadata }));
          const [entry] = await collect(store.readStream(stream));
          expect(Object.keys(entry!.content as object)).toEqual(['__proto__', 'b']);
          expect(Object.keys(entry!.metadata!)).toEqual(['__proto__']);
        }));

      it('writes nothing of a batch when one entry is invalid', () =>
        withStore(async (store) => {
          await store.append(stream, [note(1)]);
          const bad = [note(2), { type: 'Bad Type', content: 1 }];
          const error = await expectBatonError(store.append(stream, bad), 'invalid_input', { index: 1 });
          expect(error.message).toContain('entry 1');
          await expectBatonError(
            store.append(stream, [{ type: 'source', content: undefined }] as never),
            'invalid_input',
          );
          await expectBatonError(store.append(stream, []), 'invalid_input');
          await expectBatonError(
            store.append(stream, [{ type: 'x', content: { n: Number.NaN } }] as never),
            'invalid_input',
          );
          expect((await store.getStream(stream)).head).toBe(1);
        }));

      it('refuses entries over the size limit, and batches over the count limit', () =>
        withStore(async (store) => {
          const big = 'x'.repeat(ledgerLimits.entryBytes);
          await expectBatonError(
            store.append(stream, [{ type: 'source', content: big }]),
            'payload_too_large',
            {
              limit: ledgerLimits.entryBytes,
            },
          );
          const many = Array.from({ length: ledgerLimits.batchEntries + 1 }, (_, n) => note(n));
          await expectBatonError(store.append(stream, many), 'payload_too_large');
          await expectBatonError(store.getStream(stream), 'not_found');
        }));

      it('makes a failed append leave no stream behind', () =>
        withStore(async (store) => {
          await store.append(stream, [note(1)]);
          await expectBatonError(store.append(session, [note(1), note(1, { changed: true })]), 'conflict');
          await expectBatonError(store.getStream(session), 'not_found');
          expect((await store.listStreams(project_id)).map((s) => s.stream)).toEqual([stream]);
        }));
    });

    describe('source capture', () => {
      it('returns the original receipt for the same content, byte for byte', () =>
        withStore(async (store) => {
          const source = {
            source_id: 'contract-1',
            content: { objective: 'ship' },
            metadata: { kind: 'work-contract' },
          };
          const receipt = await store.captureSource(scope, source);
          expect(receipt).toEqual({
            source_ref: { scope_id: scope.scope_id, source_id: 'contract-1', digest: receipt.digest },
            position: 1,
            digest: digestOf({ content: { objective: 'ship' }, metadata: { kind: 'work-contract' } }),
          });
          await store.captureSource(scope, { source_id: 'other', content: 'x' });
          const again = await store.captureSource(scope, {
            source_id: 'contract-1',
            metadata: { kind: 'work-contract' },
            content: { objective: 'ship' },
          });
          expect(JSON.stringify(again)).toBe(JSON.stringify(receipt));
          expect((await store.getStream(stream)).head).toBe(2);
        }));

      it('refuses different content under the same source_id, naming the stored digest', () =>
        withStore(async (store) => {
          const receipt = await store.captureSource(scope, { source_id: 's', content: 'one' });
          await expectBatonError(store.captureSource(scope, { source_id: 's', content: 'two' }), 'conflict', {
            source_id: 's',
            existing_digest: receipt.digest,
            attempted_digest: digestOf({ content: 'two', metadata: {} }),
          });
          expect((await store.getStream(stream)).head).toBe(1);
        }));

      it('treats a repeated source_id inside one batch as one entry', () =>
        withStore(async (store) => {
          const results = await store.append(stream, [note(1), note(2), note(1)]);
          expect(results.map((r) => [r.position, r.created])).toEqual([
            [1, true],
            [2, true],
            [1, false],
          ]);
          await expectBatonError(store.append(stream, [note(3), note(3, { other: 1 })]), 'conflict');
          expect((await store.getStream(stream)).head).toBe(2);
        }));

      it('keeps sources of different scopes apart', () =>
        withStore(async (store) => {
          await store.captureSource(scope, { source_id: 's', content: 'one' });
          const other = await store.captureSource(
            { project_id, scope_id: 'other' },
            { source_id: 's', content: 'two' },
          );
          expect(other.position).toBe(1);
        }));

      it('rejects a capture without a valid source_id', () =>
        withStore(async (store) => {
          await expectBatonError(
            store.captureSource(scope, { source_id: '', content: 'x' }),
            'invalid_input',
          );
          await expectBatonError(
            store.captureSource(scope, { source_id: ' lead', content: 'x' }),
            'invalid_input',
          );
          await expectBatonError(store.getStream(stream), 'not_found');
        }));
    });

    describe('reads', () => {
      it('reads a range page by page in position order', () =>
        withStore(async (store) => {
          for (let batch = 0; batch < 3; batch += 1) {
            await store.append(
              stream,
              Array.from({ length: 400 }, (_, n) => note(batch * 400 + n)),
            );
          }
          const all = await collect(store.readStream(stream));
          expect(all.length).toBe(1200);
          expect(all.every((entry, index) => entry.position === index + 1)).toBe(true);
          const middle = await collect(store.readStream(stream, { from: 510, to: 1030 }));
          expect(middle.map((e) => e.position)).toEqual(Array.from({ length: 521 }, (_, n) => n + 510));
          expect(await collect(store.readStream(stream, { from: 1201 }))).toEqual([]);
          // Past the head with no end: nothing is there yet (it was invalid_input about "to").
          expect(await collect(store.readStream(stream, { from: 1500 }))).toEqual([]);
        }));

      it('reads only the kinds asked for, in position order, including after an import', () =>
        withStore(async (store) => {
          const entries = Array.from({ length: 1100 }, (_, n) => ({
            type: 'source',
            source_id: `s-${n}`,
            content: n,
            metadata: { kind: n % 100 === 0 ? 'task-outcome' : n % 250 === 0 ? 'work-contract' : 'note' },
          }));
          await store.append(stream, entries.slice(0, 600));
          await store.append(stream, entries.slice(600));
          const work = await collect(store.readStream(stream, { kinds: ['task-outcome', 'work-contract'] }));
          expect(work.map((e) => e.content)).toEqual([
            0, 100, 200, 250, 300, 400, 500, 600, 700, 750, 800, 900, 1000,
          ]);
          const later = await collect(store.readStream(stream, { from: 700, kinds: ['work-contract'] }));
          expect(later.map((e) => e.position)).toEqual([751]);
          await expectBatonError(() => collect(store.readStream(stream, { kinds: [] })), 'invalid_input');
          const exported = (await collect(store.readStream(stream))).map(
            ({ stream: _s, global_seq: _g, ...p }) => p,
          );
          const copy: StreamKey = { project_id, kind: 'scope', scope_id: 'copy' };
          await store.importEntries(copy, exported);
          expect((await collect(store.readStream(copy, { kinds: ['task-outcome'] }))).length).toBe(11);
        }));

      it('reports streams and positions that do not exist', () =>
        withStore(async (store) => {
          await expectBatonError(() => collect(store.readStream(stream)), 'not_found');
          await store.append(stream, [note(1)]);
          await expectBatonError(() => collect(store.readStream(stream, { to: 2 })), 'not_found', {
            head: 1,
          });
          await expectBatonError(() => collect(store.readStream(stream, { from: 0 })), 'invalid_input');
          // A start past the head is checked like any other: it is a position, not a number of any shape.
          for (const from of [2.5, Number.MAX_SAFE_INTEGER + 2, Number.POSITIVE_INFINITY, Number.NaN]) {
            await expectBatonError(() => collect(store.readStream(stream, { from })), 'invalid_input');
          }
          await expectBatonError(
            () => collect(store.readStream({ ...stream, project_id: 'nobody' })),
            'not_found',
          );
        }));

      it('reads one source by exact ref and says why a ref is unreadable', () =>
        withStore(async (store) => {
          const receipt = await store.captureSource(scope, { source_id: 's', content: 'one' });
          const entry = await store.readSource(project_id, receipt.source_ref);
          expect(entry.content).toBe('one');
          expect(entry.position).toBe(1);
          // A check reads the identity only: it answers without the content.
          expect(await store.checkSource(project_id, receipt.source_ref)).toEqual({ status: 'available' });
          const wrong = { ...receipt.source_ref, digest: sha256Digest('other') };
          expect(await store.checkSource(project_id, wrong)).toEqual({
            status: 'unavailable',
            reason: 'digest_mismatch',
          });
          const missing = { ...receipt.source_ref, source_id: 'nope' };
          expect(await store.checkSource(project_id, missing)).toEqual({
            status: 'unavailable',
            reason: 'missing',
          });
          const elsewhere = { ...receipt.source_ref, scope_id: 'elsewhere' };
          expect(await store.checkSource(project_id, elsewhere)).toEqual({
            status: 'unavailable',
            reason: 'missing',
          });
          await expectBatonError(store.readSource(project_id, missing), 'not_found', { reason: 'missing' });
          await expectBatonError(
            store.readSource(project_id, { ...wrong, digest: 'md5:1' } as never),
            'invalid_input',
          );
        }));
    });

    describe('retraction', () => {
      it('finds a source by its source_id alone, content and all, or its tombstone', () =>
        withStore(async (store) => {
          expect(await store.findSource(scope, 'kept')).toBeUndefined();
          const receipt = await store.captureSource(scope, {
            source_id: 'kept',
            content: { note: 'here' },
            metadata: { kind: 'note' },
          });
          expect(await store.findSource(scope, 'kept')).toMatchObject({
            position: receipt.position,
            source_id: 'kept',
            digest: receipt.digest,
            content: { note: 'here' },
            metadata: { kind: 'note' },
            retracted: null,
          });
          expect(await store.findSource(scope, 'other')).toBeUndefined();
          expect(await store.findSource({ ...scope, scope_id: 'elsewhere' }, 'kept')).toBeUndefined();
          await store.retractSource(scope, 'kept', 'gone');
          expect(await store.findSource(scope, 'kept')).toMatchObject({
            digest: receipt.digest,
            content: null,
            retracted: { reason: 'gone' },
          });
          await expectBatonError(store.findSource(scope, ''), 'invalid_input');
          await expectBatonError(store.findSource({ ...scope, project_id: 'nobody' }, 'kept'), 'not_found');
        }));

      it('purges content, keeps identity and position, and survives a reopen', () =>
        withStore(async (store, harness) => {
          const receipt = await store.captureSource(scope, {
            source_id: 'leak',
            content: { token: 'sk-live-123' },
          });
          await store.captureSource(scope, { source_id: 'after', content: 'later' });
          const tombstone = await store.retractSource(scope, 'leak', 'contains a live token');
          expect(tombstone).toMatchObject({
            position: 1,
            source_id: 'leak',
            digest: receipt.digest,
            content: null,
            metadata: null,
            retracted: { reason: 'contains a live token' },
          });
          expect(await store.checkSource(project_id, receipt.source_ref)).toEqual({
            status: 'unavailable',
            reason: 'retracted',
          });
          await expectBatonError(store.readSource(project_id, receipt.source_ref), 'not_found', {
            reason: 'retracted',
          });
          await expectBatonError(
            store.captureSource(scope, { source_id: 'leak', content: { token: 'sk-live-123' } }),
            'conflict',
            { retracted: true },
          );
          const again = await store.retractSource(scope, 'leak', 'second time');
          expect(again.retracted?.reason).toBe('contains a live token');
          await store.close();
          const reopened = await harness.open();
          const entries = await collect(reopened.readStream(stream));
          expect(entries.map((e) => [e.position, e.source_id, e.content])).toEqual([
            [1, 'leak', null],
            [2, 'after', 'later'],
          ]);
          expect(JSON.stringify(entries)).not.toContain('sk-live-123');
          await reopened.close();
        }));

      it('refuses a reason with a lone surrogate, and retracts nothing', () =>
        withStore(async (store) => {
          const receipt = await store.captureSource(scope, { source_id: 'kept', content: 'still here' });
          await expectBatonError(store.retractSource(scope, 'kept', 'bad \ud800 reason'), 'invalid_input');
          expect(await store.checkSource(project_id, receipt.source_ref)).toEqual({ status: 'available' });
        }));

      it('reports a retraction of something that does not exist', () =>
        withStore(async (store) => {
          await expectBatonError(store.retractSource(scope, 'nope', 'why'), 'not_found');
          await store.captureSource(scope, { source_id: 's', content: 'x' });
          await expectBatonError(store.retractSource(scope, 'nope', 'why'), 'not_found', {
            source_id: 'nope',
          });
          await expectBatonError(store.retractSource(scope, 's', '  '), 'invalid_input');
          await expectBatonError(store.retractSource(scope, 's', 'a\u0000b'), 'invalid_input');
        }));
    });

    describe('handoff revisions', () => {
      const body = (n: number) => ({ schema: 'baton.prepared-handoff/v1', objective: `step ${n}` });

      it('publishes revisions 1..N with compare-and-swap on the head', () =>
        withStore(async (store) => {
          expect(await store.revisionHead(scope)).toBe(0);
          const first = await store.commitRevision(scope, 0, body(1));
          expect(first).toMatchObject({
            scope_id: scope.scope_id,
            revision: 1,
            prepared_digest: digestOf(body(1)),
          });
          const second = await store.commitRevision(scope, 1, body(2));
          expect(second.revision).toBe(2);
          await expectBatonError(store.commitRevision(scope, 1, body(3)), 'revision_conflict', {
            scope_id: scope.scope_id,
            expected_head: 1,
            actual_head: 2,
          });
          expect(await store.revisionHead(scope)).toBe(2);
          expect(await store.getRevision(scope, 1)).toEqual(first);
          expect(await store.getPrepared(project_id, first.prepared_digest)).toEqual(body(1));
          await expectBatonError(store.getRevision(scope, 3), 'not_found');
          await expectBatonError(store.commitRevision(scope, -1, body(3)), 'invalid_input');
        }));

      it('returns the revision already produced when the same body is committed again', () =>
        withStore(async (store) => {
          const first = await store.commitRevision(scope, 0, body(1));
          await store.commitRevision(scope, 1, body(2));
          expect(await store.commitRevision(scope, 0, body(1))).toEqual(first);
          expect(await store.commitRevision(scope, 2, body(1))).toEqual(first);
          expect(await store.revisionHead(scope)).toBe(2);
          const other = await store.commitRevision({ project_id, scope_id: 'other' }, 0, body(1));
          expect(other.revision).toBe(1);
          const replays = await Promise.all(
            Array.from({ length: 20 }, () => store.commitRevision(scope, 2, body(3))),
          );
          expect(new Set(replays.map((r) => r.revision))).toEqual(new Set([3]));
          expect(await store.revisionHead(scope)).toBe(3);
        }));

      it('lists revisions newest first through a frozen selection', () =>
        withStore(async (store) => {
          for (let n = 0; n < 25; n += 1) await store.commitRevision(scope, n, body(n + 1));
          const latest = await store.listRevisions(scope);
          expect(latest.map((r) => r.revision)).toEqual(Array.from({ length: 20 }, (_, n) => 25 - n));
          const frozen = await store.listRevisions(scope, { through: 7, limit: 3 });
          expect(frozen.map((r) => r.revision)).toEqual([7, 6, 5]);
          expect(await store.listRevisions({ project_id, scope_id: 'none-yet' })).toEqual([]);
        }));

      it('lets exactly one of 50 concurrent commits on one head win', () =>
        withStore(async (store) => {
          await store.commitRevision(scope, 0, body(0));
          const attempts = await Promise.allSettled(
            Array.from({ length: 50 }, (_, n) => store.commitRevision(scope, 1, body(100 + n))),
          );
          const won = attempts.filter((a) => a.status === 'fulfilled');
          expect(won.length).toBe(1);
          for (const attempt of attempts) {
            if (attempt.status === 'rejected') {
              expect(attempt.reason).toBeInstanceOf(BatonError);
              expect((attempt.reason as BatonError).code).toBe('revision_conflict');
              expect((attempt.reason as BatonError).data).toMatchObject({ actual_head: 2, expected_head: 1 });
            }
          }
          expect(await store.revisionHead(scope)).toBe(2);
        }));

      it('stores prepared handoffs by digest, once', () =>
        withStore(async (store) => {
          const digest = await store.putPrepared(project_id, { b: 1, a: [1, 2] });
          expect(await store.putPrepared(project_id, { a: [1, 2], b: 1 })).toBe(digest);
          expect(digest).toBe(digestOf({ a: [1, 2], b: 1 }));
          expect(await store.getPrepared(project_id, digest)).toEqual({ a: [1, 2], b: 1 });
          const odd = JSON.parse('{"__proto__":{"x":1}}') as Record<string, never>;
          const oddDigest = await store.putPrepared(project_id, odd);
          expect(oddDigest).toBe(digestOf(odd));
          expect(Object.keys(await store.getPrepared(project_id, oddDigest))).toEqual(['__proto__']);
          await expectBatonError(store.getPrepared(project_id, sha256Digest('nothing')), 'not_found');
          await expectBatonError(store.putPrepared('nobody', { a: 1 }), 'not_found');
          // Bad input is refused before anything is looked up, on every backend alike.
          await expectBatonError(store.putPrepared('nobody', [1] as never), 'invalid_input');
          await expectBatonError(store.commitRevision(scope, 7, 'text' as never), 'invalid_input');
        }));
    });

    describe('import', () => {
      it('recreates a stream with positions, digests, times and tombstones', () =>
        withStore(async (store) => {
          await store.append(stream, [note(1), note(2), { type: 'future-kind', content: { x: 1 } }]);
          await store.retractSource(scope, 'note-2', 'secret');
          const exported = (await collect(store.readStream(stream))).map(
            ({ stream: _s, global_seq: _g, ...portable }) => portable,
          );
          const target: StreamKey = { project_id, kind: 'scope', scope_id: 'copy' };
          const info = await store.importEntries(target, exported);
          expect(info.head).toBe(3);
          const copied = (await collect(store.readStream(target))).map(
            ({ stream: _s, global_seq: _g, ...portable }) => portable,
          );
          expect(copied).toEqual(exported);
          await expectBatonError(store.importEntries(target, exported), 'conflict');
          const next = await store.append(target, [note(9)]);
          expect(next[0]!.position).toBe(4);
        }));

      it('refuses an import whose entry does not match its digest, writing nothing', () =>
        withStore(async (store) => {
          await store.append(stream, [note(1), note(2)]);
          const exported = (await collect(store.readStream(stream))).map(
            ({ stream: _s, global_seq: _g, ...portable }) => portable,
          );
          const target: StreamKey = { project_id, kind: 'scope', scope_id: 'copy' };
          const forged = [exported[0]!, { ...exported[1]!, content: { text: 'forged' } }];
          await expectBatonError(store.importEntries(target, forged), 'invalid_input', { position: 2 });
          await expectBatonError(store.importEntries(target, [exported[1]!]), 'invalid_input');
          await expectBatonError(store.getStream(target), 'not_found');
        }));

      it('creates the project of an import with it, and only if the import is written', () =>
        withStore(async (store) => {
          await store.append(stream, [note(1)]);
          const exported = (await collect(store.readStream(stream))).map(
            ({ stream: _s, global_seq: _g, ...portable }) => portable,
          );
          const elsewhere: StreamKey = { project_id: 'elsewhere', kind: 'scope', scope_id: 'copy' };
          await expectBatonError(store.importEntries(elsewhere, exported), 'not_found');
          const forged = [{ ...exported[0]!, content: { text: 'forged' } }];
          await expectBatonError(
            store.importEntries(elsewhere, forged, { createProject: true }),
            'invalid_input',
          );
          await expectBatonError(store.getProject('elsewhere'), 'not_found');
          // A stream that exists already: the whole transaction goes, the project with it.
          const taken: StreamKey = { ...stream, project_id: 'taken' };
          await expectBatonError(store.importEntries(stream, exported, { createProject: true }), 'conflict');
          expect((await store.listProjects()).map((project) => project.project_id)).toEqual([project_id]);
          const info = await store.importEntries(taken, exported, { createProject: true });
          expect(info.head).toBe(1);
          expect(await store.getProject('taken')).toMatchObject({ project_id: 'taken' });
          // An existing project is kept as it is.
          await store.importEntries(elsewhere, exported, { createProject: true });
          expect((await store.listProjects()).map((project) => project.project_id)).toEqual([
            project_id,
            'elsewhere',
            'taken',
          ]);
        }));
    });

    describe('tokens and sessions', () => {
      const hash = (n: number) => n.toString(16).padStart(64, '0');
      const token = (n: number, read_only = false) => ({
        token_id: `t-${n}`,
        project_id,
        token_hash: hash(n),
        read_only,
        label: `token ${n}`,
      });

      it('finds live tokens by hash, lists and revokes them, and ends their sessions', () =>
        withStore(async (store) => {
          const created = await store.createToken(token(1));
          await store.createToken(token(2, true));
          expect(created).toMatchObject({ token_id: 't-1', read_only: false, revoked_at: null });
          expect(await store.findToken(hash(2))).toMatchObject({
            token_id: 't-2',
            read_only: true,
            project_id,
          });
          expect(await store.findToken(hash(3))).toBeUndefined();
          expect((await store.listTokens(project_id)).map((t) => t.token_id)).toEqual(['t-1', 't-2']);
          await store.createSession(
            {
              session_hash: hash(100),
              token_id: 't-1',
              csrf_hash: hash(101),
              expires_at: '2999-01-01T00:00:00.000Z',
            },
            '2026-12-02T00:00:00.000Z',
          );
          const session = await store.findSession(hash(100), '2026-12-02T00:00:00.000Z');
          expect(session).toMatchObject({ token_id: 't-1', csrf_hash: hash(101), token: { project_id } });
          expect(await store.findSession(hash(100), '3000-01-01T00:00:00.000Z')).toBeUndefined();
          const revoked = await store.revokeToken(project_id, 't-1');
          expect(revoked.revoked_at).not.toBeNull();
          expect(await store.findToken(hash(1))).toBeUndefined();
          expect(await store.findSession(hash(100), '2026-12-02T00:00:00.000Z')).toBeUndefined();
          await expectBatonError(store.revokeToken(project_id, 'nope'), 'not_found');
          await expectBatonError(store.createToken({ ...token(4), project_id: 'nobody' }), 'not_found');
          await expectBatonError(store.createToken({ ...token(5), token_hash: 'short' }), 'invalid_input');
          await expectBatonError(store.createToken(token(2)), 'conflict');
          await store.createSession(
            {
              session_hash: hash(200),
              token_id: 't-2',
              csrf_hash: hash(201),
              expires_at: '2999-01-01T00:00:00.000Z',
            },
            '2026-12-02T00:00:00.000Z',
          );
          await store.deleteSession(hash(200));
          expect(await store.findSession(hash(200), '2026-12-02T00:00:00.000Z')).toBeUndefined();
        }));

      it('keeps only the newest sessions of a token, and drops expired ones as new ones start', () =>
        withStore(async (store) => {
          await store.createToken(token(1));
          await store.createToken(token(2));
          const now = '2026-12-02T00:00:00.000Z';
          const at = (minute: number) => new Date(Date.parse(now) + minute * 60_000).toISOString();
          const start = (n: number, token_id: string, expires_at: string, when = now) =>
            store.createSession(
              { session_hash: hash(1000 + n), token_id, csrf_hash: hash(2000 + n), expires_at },
              when,
            );
          // Token 2's session expires after a minute; it outlives token 1's logins until then.
          await start(0, 't-2', at(1));
          for (let n = 1; n <= sessionsPerToken + 1; n += 1) await start(n, 't-1', at(60 + n));
          expect(await store.findSession(hash(1001), now)).toBeUndefined();
          for (let n = 2; n <= sessionsPerToken + 1; n += 1)
            expect(await store.findSession(hash(1000 + n), now), `session ${n}`).toBeDefined();
          expect(await store.findSession(hash(1000), now)).toBeDefined();
          // A login after it expired removes it for good: it is not found even at an earlier time.
          await start(100, 't-1', at(200), at(2));
          expect(await store.findSession(hash(1000), now)).toBeUndefined();
          await expectBatonError(
            store.createSession(
              { session_hash: hash(3000), token_id: 't-1', csrf_hash: hash(3001), expires_at: at(1) },
              'not a time',
            ),
            'invalid_input',
          );
        }));
    });

    describe('durability', () => {
      it('keeps everything across close and reopen', () =>
        withStore(async (store, harness) => {
          const receipt = await store.captureSource(scope, { source_id: 's', content: { a: 1 } });
          await store.commitRevision(scope, 0, { schema: 'baton.prepared-handoff/v1' });
          await store.close();
          const reopened = await harness.open();
          expect(await reopened.captureSource(scope, { source_id: 's', content: { a: 1 } })).toEqual(receipt);
          expect(await reopened.revisionHead(scope)).toBe(1);
          await reopened.close();
        }));
    });
  });
}
