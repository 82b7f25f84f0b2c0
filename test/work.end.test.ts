/**
 * end_work_session: a session's terminal marker, written once through the app (every surface calls
 * it), refused when it would claim completion over open work, and observed at once by a
 * parent whose items were delegated to the session that ended. On every backend.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AppDeps } from '../src/app/deps.ts';
import { listSessions } from '../src/app/work-list.ts';
import * as work from '../src/app/work.ts';
import { systemClock } from '../src/core/clock.ts';
import type { Actor } from '../src/core/work/model.ts';
import { collect, expectBatonError } from '../src/store/conformance/store.conformance.ts';
import { backends, type OpenedStore } from './helpers/stores.ts';
import { ev } from './helpers/work.ts';

const model: Actor = { type: 'model', id: 'agent' };
const human: Actor = { type: 'human', id: 'ana' };

for (const backend of backends) {
  describe(`ending a session on ${backend.name}`, () => {
    let opened: OpenedStore;
    let deps: AppDeps;
    const head = async (session_id: string) =>
      (await deps.store.getStream(work.sessionStream('acme', session_id))).head;

    beforeEach(async () => {
      opened = await backend.open();
      deps = { store: opened.store, clock: systemClock };
      await deps.store.createProject('acme');
    });
    afterEach(() => opened.dispose());

    /** Parent p with items a (delegated to child session c) and b (the parent's own), both running. */
    async function delegated() {
      await work.startSession(deps, 'acme', { session_id: 'p', work_mode: 'managed' });
      await work.createContract(
        deps,
        'acme',
        {
          session_id: 'p',
          contract_id: 'w',
          objective: 'fix the login redirect and its docs',
          criteria: [{ criterion_id: 'ok', statement: 'ok', kind: { type: 'shell', command: 'true' } }],
          items: [
            { item_id: 'a', title: 'Fix the redirect', criterion_ids: ['ok'] },
            { item_id: 'b', title: 'Document it', criterion_ids: ['ok'] },
          ],
        },
        model,
      );
      for (const item_id of ['a', 'b']) {
        await work.transitionItem(
          deps,
          'acme',
          { session_id: 'p', revision: 1, item_id, to: 'running' },
          model,
        );
      }
      await work.reassignItem(
        deps,
        'acme',
        { session_id: 'p', item_id: 'a', owner: { type: 'worker' }, child_session_id: 'c' },
        human,
      );
      await work.startSession(deps, 'acme', {
        session_id: 'c',
        parent_session_id: 'p',
        contract_id: 'w',
        work_item_id: 'a',
      });
    }

    const item = (snapshot: work.WorkSnapshot, item_id: string) =>
      snapshot.contract!.items.find((candidate) => candidate.item_id === item_id)!;

    it('writes the terminal marker once: the same end again writes nothing, another is refused', async () => {
      await work.startSession(deps, 'acme', { session_id: 's' });
      await work.endSession(deps, 'acme', {
        session_id: 's',
        status: 'aborted',
        reason: 'the user closed the tab',
      });
      const terminals = (await collect(deps.store.readStream(work.sessionStream('acme', 's')))).filter(
        (entry) => entry.type === 'terminal',
      );
      expect(terminals.map((entry) => entry.content)).toEqual([
        { schema: 'baton.terminal/v1', status: 'aborted', reason: 'the user closed the tab' },
      ]);
      const at = await head('s');
      await work.endSession(deps, 'acme', { session_id: 's', status: 'aborted' });
      expect(await head('s')).toBe(at);
      await expectBatonError(
        work.endSession(deps, 'acme', { session_id: 's', status: 'completed' }),
        'conflict',
        {
          rule: 'session_ended',
          status: 'aborted',
          position: at,
        },
      );
      expect(await head('s')).toBe(at);
      // A session without work still shows that it ended, in the list and in its own snapshot.
      const [listed] = (await listSessions(deps, 'acme')).sessions;
      expect(listed!.terminal).toEqual({ status: 'aborted', position: at });
      const read = await work.readWork(deps, 'acme', { session_id: 's' });
      expect([read.projection, read.terminal]).toEqual([null, { status: 'aborted', position: at }]);
    });

    it('refuses to end completed over open work, writes nothing, and ends aborted', async () => {
      await delegated();
      const at = await head('p');
      await expectBatonError(
        work.endSession(deps, 'acme', { session_id: 'p', status: 'completed' }),
        'conflict',
        {
          rule: 'work_incomplete',
          contract_id: 'w',
          status: 'active',
        },
      );
      expect(await head('p')).toBe(at);
      const ended = await work.endSession(deps, 'acme', { session_id: 'p', status: 'aborted' });
      expect(ended.projection?.terminal).toEqual({ status: 'aborted', position: at + 1 });
    });

    it("a child that ends completed puts its parent's item up for verification at once; the parent's own item runs on", async () => {
      await delegated();
      await work.endSession(deps, 'acme', { session_id: 'c', status: 'completed' });
      const parent = await work.readWork(deps, 'acme', { session_id: 'p' });
      expect(item(parent, 'a')).toMatchObject({
        status: 'ready_for_verification',
        evidence: [{ type: 'child_session', session_id: 'c' }],
        evidence_availability: [{ status: 'available' }],
      });
      expect(item(parent, 'b').status).toBe('running');
      // Reconciling the parent later finds nothing more to decide about the child.
      const at = await head('p');
      await work.endSession(deps, 'acme', { session_id: 'c', status: 'completed' });
      expect(await head('p')).toBe(at);
    });

    it("a child that ends failed, aborted or out of turns fails its parent's item", async () => {
      await delegated();
      await work.endSession(deps, 'acme', { session_id: 'c', status: 'max_turns' });
      const parent = await work.readWork(deps, 'acme', { session_id: 'p' });
      expect(item(parent, 'a')).toMatchObject({ status: 'failed' });
      expect(item(parent, 'b').status).toBe('running');
    });

    it('stands when the parent cannot take it in, and says so in a warning', async () => {
      await delegated();
      // The parent's ledger breaks an invariant (a status change of a contract it never had).
      await deps.store.append(work.sessionStream('acme', 'p'), [
        {
          type: 'work_event',
          source_id: 'stray',
          content: ev.status('active', 'completed', 'runtime', 1, 'nowhere'),
          metadata: { kind: 'work_event' },
        },
      ]);
      const ended = await work.endSession(deps, 'acme', { session_id: 'c', status: 'completed' });
      expect(ended.warnings.map((warning) => warning.code)).toEqual(['parent_not_reconciled']);
      expect(ended.warnings[0]!.message).toContain('baton work reconcile p');
      const [listed] = (await listSessions(deps, 'acme')).sessions.filter(
        (session) => session.session_id === 'c',
      );
      expect(listed!.terminal?.status).toBe('completed');
    });

    it('refuses bad input and an unknown session, writing nothing', async () => {
      await work.startSession(deps, 'acme', { session_id: 's' });
      const at = await head('s');
      await expectBatonError(
        work.endSession(deps, 'acme', { session_id: 's', status: 'done' }),
        'invalid_input',
      );
      await expectBatonError(
        work.endSession(deps, 'acme', { session_id: 's', status: 'failed', reason: 'x'.repeat(4001) }),
        'invalid_input',
      );
      await expectBatonError(
        work.endSession(deps, 'acme', { session_id: 'nobody', status: 'failed' }),
        'not_found',
      );
      expect(await head('s')).toBe(at);
    });
  });
}
