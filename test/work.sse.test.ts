/**
 * The live work events (`GET /v1/sessions/{id}/events`) on every backend: typed events whose ids
 * are ledger positions; a reconnect with Last-Event-ID gets exactly the missed events, no gap and
 * no duplicate; the snapshot plus the events after its position re-project to the later
 * snapshot ("SSE reconnect returns the same projected state"); open streams end when the server
 * closes. With PostgreSQL, an event committed through one server reaches a subscriber of another.
 */
/* eslint-disable @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access -- reply bodies are parsed JSON, read only in assertions */
import cookie from '@fastify/cookie';
import Fastify from 'fastify';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createToken, revokeToken } from '../src/app/auth.ts';
import { createContract, type WorkSnapshot } from '../src/app/work.ts';
import { systemClock } from '../src/core/clock.ts';
import type { JsonValue } from '../src/core/json.ts';
import { liveEventName } from '../src/core/work/live.ts';
import { workEventSchema } from '../src/core/work/model.ts';
import { projectWork, type ProjectableEntry } from '../src/core/work/projector.ts';
import { installErrorHandling } from '../src/http/errors.ts';
import { startServer } from '../src/http/server.ts';
import { heartbeatMs as defaultHeartbeatMs } from '../src/http/sse.ts';
import { registerWorkRoutes } from '../src/http/work-routes.ts';
import { openPostgresStore } from '../src/store/postgres/postgres-store.ts';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { openThreadedSqliteStore } from '../src/store/sqlite/threaded-store.ts';
import type { Store } from '../src/store/store.ts';
import { callServer, project_id, seedTokens, startHarness, type HttpHarness } from './helpers/http.ts';
import { dropSchema, freshSchemaName, postgresUrl } from './helpers/postgres.ts';
import { backends } from './helpers/stores.ts';
import { contractBody, frameData, openSse, type SseEvent } from './helpers/work-surface.ts';

const s1 = { project_id, kind: 'session', session_id: 's1' } as const;
const work = '/v1/sessions/s1/work';
const events = '/v1/sessions/s1/events';

/** Positions of the work_event entries of a session, from the ledger itself. */
async function workPositions(store: Store, after = 0): Promise<number[]> {
  const positions: number[] = [];
  for await (const entry of store.readStream(s1, { kinds: ['work_event'] }))
    if (entry.position > after) positions.push(entry.position);
  return positions;
}

/** Received frames as the projector's entries. */
function entries(received: readonly SseEvent[]): ProjectableEntry[] {
  return received.map((event) => {
    const data = frameData(event);
    return {
      position: data.position,
      type: 'work_event',
      recorded_at: data.recorded_at,
      content: data.event as JsonValue,
    };
  });
}

function reprojected(received: readonly SseEvent[]): unknown {
  const result = projectWork(entries(received));
  if (!result.ok) throw result.error;
  return JSON.parse(JSON.stringify({ projection: result.projection, warnings: result.warnings }));
}

function expectFrames(received: readonly SseEvent[]): void {
  for (const event of received) {
    const data = frameData(event);
    expect(event.id).toBe(String(data.position));
    expect(event.event).toBe(liveEventName(workEventSchema.parse(data.event)));
  }
}

for (const backend of backends) {
  describe(`work events over SSE on ${backend.name}`, () => {
    let h: HttpHarness | undefined;
    const auth = () => ({ authorization: `Bearer ${h!.tokens.writer}` });
    const post = (path: string, body: unknown = {}) => h!.call('POST', path, { body });
    const snapshot = async () => (await h!.call('GET', work)).body as WorkSnapshot;

    beforeEach(async () => {
      h = await startHarness(backend);
      expect((await post('/v1/sessions', { session_id: 's1' })).status).toBe(200);
    });
    afterEach(async () => {
      await h?.dispose();
      h = undefined;
    });

    it('sends typed events with ledger ids, resumes after Last-Event-ID with no gap or duplicate, and re-projects to the snapshot', async () => {
      const first = await openSse(h!.url, events, auth());
      expect(first.status).toBe(200);
      expect(first.headers['content-type']).toBe('text/event-stream; charset=utf-8');
      expect(first.headers['cache-control']).toContain('no-cache');
      expect(first.headers['baton-api']).toBe('v1');

      expect((await post(`${work}/contracts`, contractBody)).status).toBe(200);
      const created = await first.take(2);
      expect(created.map((event) => [event.id, event.event])).toEqual([
        ['2', 'WorkContractCreated'],
        ['3', 'WorkNeedsInput'],
      ]);
      expect(frameData(created[0]!)).toMatchObject({
        position: 2,
        recorded_at: expect.any(String),
        event: {
          kind: { type: 'contract_created', contract: { contract_id: 'c1' } },
          actor: { type: 'human' },
        },
      });
      await post(`${work}/confirm`, {
        revision: 1,
        resolutions: [{ assumption_id: 'db', resolution: 'staging' }],
      });
      const confirmed = await first.take(3);
      expect(confirmed.map((event) => event.event)).toEqual([
        'WorkAssumptionResolved',
        'WorkContractStatusChanged',
        'WorkItemChanged',
      ]);
      const before = [...created, ...confirmed];
      expectFrames(before);

      // Gone: a non-work entry and more changes land meanwhile; the snapshot names where to resume.
      first.close();
      await first.ended;
      await h!.deps.store.append(s1, [
        {
          type: 'user_message',
          content: { schema: 'baton.user-message/v1', text: 'keep going' },
          metadata: { kind: 'user_message' },
        },
      ]);
      const snap = await snapshot();
      expect(snap.position).toBe(7);
      expect(reprojected(before)).toEqual({ projection: snap.projection, warnings: snap.warnings });
      await post(`${work}/items/code/evidence`, {
        revision: 1,
        evidence: { type: 'ledger_entry', session_id: 's1', entry_id: 'e1' },
      });
      await post(`${work}/items/code/reassign`, { owner: { type: 'worker' }, child_session_id: 'kid' });
      await post(`${work}/items/code/cancel`, { reason: 'wrong approach' });
      await post(`${work}/items/code/retry`);

      const second = await openSse(h!.url, events, { ...auth(), 'last-event-id': String(snap.position) });
      const missed = await second.take(4);
      expect(missed.map((event) => Number(event.id))).toEqual(
        await workPositions(h!.deps.store, snap.position),
      );
      expect(missed.map((event) => event.event)).toEqual([
        'WorkEvidenceAttached',
        'WorkItemChanged',
        'WorkItemChanged',
        'WorkItemChanged',
      ]);
      // Then live.
      await post(`${work}/items/docs/cancel`);
      const live = await second.take(1);
      expect(live[0]!.event).toBe('WorkItemChanged');
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(second.pending()).toEqual([]);

      const received = [...before, ...missed, ...live];
      expectFrames(received);
      expect(received.map((event) => Number(event.id))).toEqual(await workPositions(h!.deps.store));
      const later = await snapshot();
      expect(reprojected(received)).toEqual({ projection: later.projection, warnings: later.warnings });
      second.close();
    });

    it('follows rapid changes: every event exactly once, in ledger order', async () => {
      const stream = await openSse(h!.url, events, auth());
      await post(`${work}/contracts`, {
        ...contractBody,
        assumptions: [],
      });
      const changes = 20;
      for (let index = 0; index < changes; index += 1) {
        await post(`${work}/items/code/reassign`, {
          owner: { type: index % 2 === 0 ? 'worker' : 'human' },
        });
      }
      const positions = await workPositions(h!.deps.store);
      const received = await stream.take(positions.length);
      expect(received.map((event) => Number(event.id))).toEqual(positions);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(stream.pending()).toEqual([]);
      const later = await snapshot();
      expect(reprojected(received)).toEqual({ projection: later.projection, warnings: later.warnings });
      stream.close();
    });

    it('resumes from ?after=N (Last-Event-ID wins), refuses bad positions, unknown sessions and missing credentials', async () => {
      await post(`${work}/contracts`, contractBody);
      const fromQuery = await openSse(h!.url, `${events}?after=2`, auth());
      expect((await fromQuery.take(1)).map((event) => event.id)).toEqual(['3']);
      fromQuery.close();
      const headerWins = await openSse(h!.url, `${events}?after=0`, { ...auth(), 'last-event-id': '2' });
      expect((await headerWins.take(1)).map((event) => event.id)).toEqual(['3']);
      headerWins.close();

      const refusals: [string, Record<string, string>, number, string][] = [
        [`${events}?after=abc`, auth(), 422, 'invalid_input'],
        [events, { ...auth(), 'last-event-id': '-1' }, 422, 'invalid_input'],
        [events, { ...auth(), 'last-event-id': '99' }, 422, 'invalid_input'],
        ['/v1/sessions/nobody/events', auth(), 404, 'not_found'],
        [events, { authorization: `Bearer ${h!.tokens.rival}` }, 404, 'not_found'],
        [events, {}, 401, 'unauthorized'],
      ];
      for (const [path, headers, status, code] of refusals) {
        const reply = await openSse(h!.url, path, headers);
        expect({ status: reply.status, code: JSON.parse(reply.body).error.code }, path).toEqual({
          status,
          code,
        });
      }

      // A read-only token and a web session (its cookie with its CSRF token) may follow.
      const reader = await openSse(h!.url, events, { authorization: `Bearer ${h!.tokens.reader}` });
      expect((await reader.take(2)).map((event) => event.id)).toEqual(['2', '3']);
      reader.close();
      const login = await h!.call('POST', '/v1/session');
      const session = login.headers.get('set-cookie')!.split(';')[0]!;
      const cookieOnly = await openSse(h!.url, events, { cookie: session });
      expect([cookieOnly.status, JSON.parse(cookieOnly.body).error.code]).toEqual([403, 'forbidden']);
      const viaCookie = await openSse(h!.url, events, { cookie: session, 'x-csrf-token': login.body.csrf });
      expect((await viaCookie.take(2)).map((event) => event.event)).toEqual([
        'WorkContractCreated',
        'WorkNeedsInput',
      ]);
      viaCookie.close();
    });

    it('ends open streams when the server closes, without waiting for them', async () => {
      const streams = [await openSse(h!.url, events, auth()), await openSse(h!.url, events, auth())];
      await post(`${work}/contracts`, contractBody);
      for (const stream of streams) expect(await stream.take(2)).toHaveLength(2);
      const started = Date.now();
      await h!.dispose();
      h = undefined;
      await Promise.all(streams.map((stream) => stream.ended));
      expect(Date.now() - started).toBeLessThan(5_000);
    });
  });
}

/**
 * Only the work routes, with a short heartbeat, on a store seeded with tokens; a session s1
 * exists, and a stream of its events is open.
 */
async function heartbeatServer(store: Store, heartbeatMs: number) {
  const { deps, tokens } = await seedTokens(store);
  const app = Fastify({ logger: false });
  installErrorHandling(app);
  await app.register(cookie);
  registerWorkRoutes(app, deps, { heartbeatMs });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  try {
    await callServer(url, tokens.writer, 'POST', '/v1/sessions', { body: { session_id: 's1' } });
    const stream = await openSse(url, events, { authorization: `Bearer ${tokens.writer}` });
    return { app, deps, stream };
  } catch (error) {
    await app.close();
    throw error;
  }
}

describe('work event heartbeat', () => {
  it('sends a heartbeat comment while nothing happens', async () => {
    const opened = await backends[0]!.open();
    const { app, stream } = await heartbeatServer(opened.store, 50);
    try {
      // Waited for, not slept for: a loaded machine delays the 50 ms ticks. Two heartbeats
      // within one default interval still prove that the configured one is used.
      const heartbeats = () => stream.comments.filter((comment) => comment === 'heartbeat').length;
      await stream.until(() => heartbeats() >= 2, defaultHeartbeatMs);
      expect(stream.comments[0]).toBe('connected');
      expect(heartbeats()).toBeGreaterThanOrEqual(2);
      expect(stream.pending()).toEqual([]);
      stream.close();
    } finally {
      await app.close();
      await opened.dispose();
    }
  });
});

describe('a quiet work event stream whose token is revoked', () => {
  it('ends at its next heartbeat', async () => {
    const opened = await backends[0]!.open();
    const { app, deps, stream } = await heartbeatServer(opened.store, 50);
    try {
      const writer = (await deps.store.listTokens(project_id)).find((token) => token.label === 'writer')!;
      await revokeToken(deps, project_id, writer.token_id);
      const ended = await Promise.race([
        stream.ended.then(() => 'ended'),
        new Promise((done) => setTimeout(done, 3_000, 'open')),
      ]);
      expect(ended).toBe('ended');
    } finally {
      await app.close();
      await opened.dispose();
    }
  });
});

describe('open work event streams per token', () => {
  it('refuses one stream more than the limit 429 too_many_requests, counts a web session as its token, and frees the slot when a stream ends', async () => {
    const h = await startHarness(backends[0]!, { maxStreamsPerToken: 2 });
    try {
      expect((await h.call('POST', '/v1/sessions', { body: { session_id: 's1' } })).status).toBe(200);
      const writer = { authorization: `Bearer ${h.tokens.writer}` };
      const held = [await openSse(h.url, events, writer), await openSse(h.url, events, writer)];
      expect(held.map((stream) => stream.status)).toEqual([200, 200]);

      const refused = await openSse(h.url, events, writer);
      expect(refused.status).toBe(429);
      expect(JSON.parse(refused.body)).toEqual({
        error: {
          code: 'too_many_requests',
          message: expect.stringContaining('close one'),
          details: { limit: 2 },
        },
      });
      // A web session opened with the same token is the same holder.
      const login = await h.call('POST', '/v1/session');
      const viaCookie = await openSse(h.url, events, {
        cookie: login.headers.get('set-cookie')!.split(';')[0]!,
        'x-csrf-token': login.body.csrf,
      });
      expect(viaCookie.status).toBe(429);
      // Another token has its own allowance.
      const reader = await openSse(h.url, events, { authorization: `Bearer ${h.tokens.reader}` });
      expect(reader.status).toBe(200);

      // A client that goes away gives its slot back.
      held[0]!.close();
      await held[0]!.ended;
      let again = await openSse(h.url, events, writer);
      for (let tries = 0; again.status === 429 && tries < 50; tries += 1) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        again = await openSse(h.url, events, writer);
      }
      expect(again.status).toBe(200);
      await h.call('POST', `${work}/contracts`, { body: contractBody });
      expect((await again.take(2)).map((event) => event.event)).toEqual([
        'WorkContractCreated',
        'WorkNeedsInput',
      ]);
      for (const stream of [held[1]!, reader, again]) stream.close();
    } finally {
      await h.dispose();
    }
  });

  it('refuses a limit that is not a positive whole number when the server starts', async () => {
    const opened = await backends[0]!.open();
    try {
      const deps = { store: opened.store, clock: systemClock };
      for (const maxStreamsPerToken of [0, -1, 1.5, Number.NaN]) {
        await expect(startServer({ deps, port: 0, logger: false, maxStreamsPerToken })).rejects.toThrow(
          /maxStreamsPerToken/,
        );
      }
    } finally {
      await opened.dispose();
    }
  });
});

describe('work events written by another process', () => {
  it('reach an open stream on its next heartbeat, though no notification crosses processes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-sse-other-'));
    const path = join(dir, 'baton.db');
    const served = await openThreadedSqliteStore({ path });
    // Another connection to the same file, as `baton work …` run locally while a server runs:
    // its commits tell only its own listeners.
    const other = await openSqliteStore({ path });
    const { app, deps, stream } = await heartbeatServer(served, 100);
    try {
      const local = { type: 'human', id: 'local' } as const;
      await createContract(
        { ...deps, store: other },
        project_id,
        { ...contractBody, session_id: 's1' },
        local,
      );
      const received = await stream.take(2, 3_000);
      expect(received.map((event) => event.event)).toEqual(['WorkContractCreated', 'WorkNeedsInput']);
      expect(received.map((event) => Number(event.id))).toEqual(await workPositions(other));
      stream.close();
    } finally {
      await app.close();
      await other.close();
      await served.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!postgresUrl)(
  'work events across two servers on one PostgreSQL (skipped without BATON_TEST_POSTGRES_URL)',
  () => {
    const schema = freshSchemaName();
    const stores: Store[] = [];
    const servers: { url: string; close(): Promise<void> }[] = [];
    let token: string;

    beforeAll(async () => {
      stores.push(await openPostgresStore({ url: postgresUrl!, schema }));
      stores.push(await openPostgresStore({ url: postgresUrl!, schema }));
      const seeded = await seedTokens(stores[0]!);
      token = seeded.tokens.writer;
      for (const store of stores)
        servers.push(await startServer({ deps: { ...seeded.deps, store }, port: 0, logger: false }));
    });
    afterAll(async () => {
      for (const server of servers) await server.close();
      for (const store of stores) await store.close();
      await dropSchema(schema);
    });

    it('delivers an event committed through server A to a subscriber of server B', async () => {
      const [a, b] = servers as [(typeof servers)[0], (typeof servers)[0]];
      const call = (url: string, path: string, body: unknown) =>
        callServer(url, token, 'POST', path, { body });
      expect((await call(a.url, '/v1/sessions', { session_id: 's1' })).status).toBe(200);
      const onB = await openSse(b.url, events, { authorization: `Bearer ${token}` });
      expect((await call(a.url, `${work}/contracts`, contractBody)).status).toBe(200);
      const created = await onB.take(2);
      expect(created.map((event) => event.event)).toEqual(['WorkContractCreated', 'WorkNeedsInput']);
      expect((await call(a.url, `${work}/items/code/cancel`, {})).status).toBe(200);
      const cancelled = await onB.take(1);
      expect(frameData(cancelled[0]!).event).toMatchObject({
        kind: { type: 'item_status_changed', to: 'cancelled' },
      });
      expect([...created, ...cancelled].map((event) => Number(event.id))).toEqual(
        await workPositions(stores[1]!),
      );
      const later = (await callServer(b.url, token, 'GET', work)).body as WorkSnapshot;
      expect(reprojected([...created, ...cancelled])).toEqual({
        projection: later.projection,
        warnings: later.warnings,
      });
      onB.close();
    });
  },
);

describe('a work event stream whose credential ends', () => {
  it('ends when its token is revoked, or its web session logs out, and sends nothing written after', async () => {
    const h = await startHarness(backends[0]!);
    try {
      expect((await h.call('POST', '/v1/sessions', { body: { session_id: 's1' } })).status).toBe(200);
      const doomed = await createToken(h.deps, { project_id, label: 'doomed' });
      const byToken = await openSse(h.url, events, { authorization: `Bearer ${doomed.token}` });
      const login = await h.call('POST', '/v1/session');
      const session = {
        cookie: login.headers.get('set-cookie')!.split(';')[0]!,
        'x-csrf-token': login.body.csrf,
      };
      const byCookie = await openSse(h.url, events, session);
      expect([byToken.status, byCookie.status]).toEqual([200, 200]);

      await revokeToken(h.deps, project_id, doomed.token_id);
      const logout = await h.call('DELETE', '/v1/session', { token: null, headers: session });
      expect(logout.status).toBe(204);
      await h.call('POST', `${work}/contracts`, { body: contractBody });

      const ends = (stream: { ended: Promise<void> }) =>
        Promise.race([
          stream.ended.then(() => 'ended'),
          new Promise((done) => setTimeout(done, 3_000, 'open')),
        ]);
      expect(await ends(byToken)).toBe('ended');
      expect(await ends(byCookie)).toBe('ended');
      expect(byToken.pending()).toEqual([]);
      expect(byCookie.pending()).toEqual([]);
    } finally {
      await h.dispose();
    }
  });
});
