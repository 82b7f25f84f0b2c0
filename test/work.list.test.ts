/**
 * `list_sessions`: a project's managed-work sessions, newest first, each summarized from its
 * own projection, on every backend; a session whose ledger cannot be projected is listed with
 * its error; another project's sessions are never listed; over HTTP with a read-only token and
 * through the typed client.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AppDeps } from '../src/app/deps.ts';
import { listSessions } from '../src/app/work-list.ts';
import * as work from '../src/app/work.ts';
import { createClient } from '../src/client/index.ts';
import { systemClock } from '../src/core/clock.ts';
import { streamName } from '../src/core/ledger/names.ts';
import type { Actor } from '../src/core/work/model.ts';
import { summaryObjectiveLength } from '../src/core/work/summary.ts';
import { startHarness, type HttpHarness } from './helpers/http.ts';
import { backends, withOverrides, type OpenedStore } from './helpers/stores.ts';
import { contract, ev } from './helpers/work.ts';

const model: Actor = { type: 'model', id: 'agent' };

/** Streams record their creation to the millisecond: a pause orders them without a tie. */
const tick = () => new Promise((resolve) => setTimeout(resolve, 3));

for (const backend of backends) {
  describe(`list_sessions on ${backend.name}`, () => {
    let opened: OpenedStore;
    let deps: AppDeps;

    beforeEach(async () => {
      opened = await backend.open();
      deps = { store: opened.store, clock: systemClock };
      await deps.store.createProject('acme');
      await deps.store.createProject('rival');
    });
    afterEach(() => opened.dispose());

    /** The same store, telling which session streams are read: the ones a list projects again. */
    function counting(): { deps: AppDeps; reads: string[] } {
      const reads: string[] = [];
      const store = withOverrides(deps.store, {
        readStream: (stream, range) => {
          reads.push(streamName(stream));
          return deps.store.readStream(stream, range);
        },
      });
      return { deps: { store, clock: systemClock }, reads };
    }

    /** A session whose ledger breaks an invariant: a status change of a contract it never created. */
    async function startBroken(session_id: string) {
      await work.startSession(deps, 'acme', { session_id });
      await deps.store.append(work.sessionStream('acme', session_id), [
        {
          type: 'work_event',
          source_id: 'stray',
          content: ev.status('active', 'completed', 'runtime', 1, 'nowhere'),
          metadata: { kind: 'work_event' },
        },
      ]);
    }

    async function startWithContract(session_id: string, shape: Parameters<typeof contract>[0] = {}) {
      await work.startSession(deps, 'acme', { session_id, work_mode: 'managed' });
      const { revision: _revision, source_entry_id: _source, ...definition } = contract(shape);
      await work.createContract(deps, 'acme', { session_id, ...definition }, model);
    }

    it('answers an empty list for a project without sessions', async () => {
      await work.startSession(deps, 'rival', { session_id: 'theirs' });
      expect(await listSessions(deps, 'acme')).toEqual({ sessions: [], total: 0, limit: 200 });
    });

    it("lists every session newest first, each with its header and its contract's items and criteria at a glance", async () => {
      await work.startSession(deps, 'acme', { session_id: 'quiet' });
      await tick();
      await startWithContract('busy');
      await work.transitionItem(
        deps,
        'acme',
        { session_id: 'busy', revision: 1, item_id: 'inspect', to: 'running' },
        model,
      );
      await tick();
      await work.startSession(deps, 'acme', {
        session_id: 'child',
        parent_session_id: 'busy',
        work_mode: 'managed',
      });
      await work.startSession(deps, 'rival', { session_id: 'theirs' });

      const listed = await listSessions(deps, 'acme');
      expect(listed.total).toBe(3);
      expect(listed.sessions.map((session) => session.session_id)).toEqual(['child', 'busy', 'quiet']);
      const [child, busy, quiet] = listed.sessions;
      expect(child).toMatchObject({
        parent_session_id: 'busy',
        work_mode: 'managed',
        scope_id: null,
        contracts: 0,
        contract: null,
        terminal: null,
        error: null,
      });
      expect(quiet).toMatchObject({ parent_session_id: null, work_mode: 'direct', contract: null });
      expect(busy!.position).toBe((await deps.store.getStream(work.sessionStream('acme', 'busy'))).head);
      expect(busy!.contract).toEqual({
        contract_id: 'work-1',
        revision: 1,
        status: 'active',
        objective: 'migrate the configuration loader',
        items: { total: 2, by_status: { running: 1, proposed: 1 } },
        criteria: { total: 2, passed: 0, by_verdict: {} },
      });
      expect(new Date(busy!.created_at).getTime()).toBeGreaterThan(new Date(quiet!.created_at).getTime());
    });

    it('shows the newest contract once none is live, and cuts a long objective with an ellipsis', async () => {
      const objective = 'x'.repeat(summaryObjectiveLength + 50);
      await startWithContract('done', { objective });
      // No surface cancels a whole contract; a person's cancellation as the ledger records it.
      await deps.store.append(work.sessionStream('acme', 'done'), [
        {
          type: 'work_event',
          source_id: 'cancel-work-1',
          content: ev.status('active', 'cancelled', 'human'),
          metadata: { kind: 'work_event' },
        },
      ]);
      const [done] = (await listSessions(deps, 'acme')).sessions;
      expect(done!.contract).toMatchObject({
        status: 'cancelled',
        objective: `${'x'.repeat(summaryObjectiveLength)}…`,
        items: { total: 2, by_status: { ready: 1, proposed: 1 } },
      });
    });

    it('lists a session whose ledger breaks an invariant with its error, and the others as usual', async () => {
      await startWithContract('good');
      await tick();
      await startBroken('broken');
      const listed = await listSessions(deps, 'acme');
      expect(listed.sessions.map((session) => session.session_id)).toEqual(['broken', 'good']);
      expect(listed.sessions[0]).toMatchObject({
        session_id: 'broken',
        contract: null,
        work_mode: null,
        error: { code: 'precondition_failed' },
      });
      expect(listed.sessions[0]!.position).toBe(2);
      expect(listed.sessions[1]).toMatchObject({ error: null, contract: { contract_id: 'work-1' } });
    });

    it('shows a change made after a list in the next list, projecting again only the session that changed', async () => {
      await startWithContract('first');
      await tick();
      await startWithContract('second');
      const lister = counting();
      const before = await listSessions(lister.deps, 'acme');
      expect(lister.reads.sort()).toEqual(['first', 'second']);

      lister.reads.length = 0;
      expect(await listSessions(lister.deps, 'acme')).toEqual(before);
      expect(lister.reads).toEqual([]);

      // Written through another handle on the same database, as another server would.
      await work.transitionItem(
        deps,
        'acme',
        { session_id: 'first', revision: 1, item_id: 'inspect', to: 'running' },
        model,
      );
      const after = await listSessions(lister.deps, 'acme');
      expect(lister.reads).toEqual(['first']);
      expect(
        after.sessions.map((session) => [session.session_id, session.contract?.items.by_status]),
      ).toEqual([
        ['second', { ready: 1, proposed: 1 }],
        ['first', { running: 1, proposed: 1 }],
      ]);
      expect(after.sessions[1]!.position).toBe(before.sessions[1]!.position + 1);
      expect(after.sessions[0]).toBe(before.sessions[0]);
    });

    it('projects a session whose ledger breaks an invariant again on every list, with its error each time', async () => {
      await startWithContract('good');
      await startBroken('broken');
      const lister = counting();
      const first = await listSessions(lister.deps, 'acme');
      lister.reads.length = 0;
      const second = await listSessions(lister.deps, 'acme');
      expect(lister.reads).toEqual(['broken']);
      expect(second).toEqual(first);
      expect(second.sessions.find((session) => session.session_id === 'broken')).toMatchObject({
        position: 2,
        contract: null,
        error: { code: 'precondition_failed' },
      });
    });
  });
}

describe('list_sessions over HTTP', () => {
  let h: HttpHarness;
  beforeEach(async () => {
    h = await startHarness(backends[0]!);
  });
  afterEach(() => h.dispose());

  it('answers a read-only token, only its own project, and the typed client reads it', async () => {
    await work.startSession(h.deps, 'acme', { session_id: 'mine', work_mode: 'managed' });
    await work.startSession(h.deps, 'rival', { session_id: 'theirs' });
    const reply = await h.call('GET', '/v1/sessions', { token: h.tokens.reader });
    expect(reply.status, reply.text).toBe(200);
    expect((reply.body as { sessions: { session_id: string }[] }).sessions.map((s) => s.session_id)).toEqual([
      'mine',
    ]);
    const client = createClient({ baseUrl: h.url, token: h.tokens.reader });
    expect(await client.listSessions()).toEqual(reply.body);
    const unknown = await h.call('GET', '/v1/sessions', { query: { limit: '5' } });
    expect([unknown.status, (unknown.body as { error: { code: string } }).error.code]).toEqual([
      422,
      'invalid_input',
    ]);
  });
});
