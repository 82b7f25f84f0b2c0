/**
 * Reconciliation of running items when a session is reopened (docs/managed-work.md,
 * "Reconciliation"), against real stores: a finished child is attached and verified, a failed
 * child fails its item, a live child keeps it running, and work with no child is interrupted:
 * read-only work may be retried, a possible write waits for a person's review.
 */
import { afterEach, describe, expect, it } from 'vitest';
import * as work from '../src/app/work.ts';
import { workConfigSchema } from '../src/core/work/config.ts';
import { systemClock } from '../src/core/clock.ts';
import type { Actor } from '../src/core/work/model.ts';
import { expectBatonError } from '../src/store/conformance/store.conformance.ts';
import type { Store } from '../src/store/store.ts';
import { backends, type OpenedStore } from './helpers/stores.ts';

const model: Actor = { type: 'model', id: 'agent' };
const human: Actor = { type: 'human', id: 'ana' };
const opened: OpenedStore[] = [];
afterEach(async () => {
  for (const store of opened.splice(0)) await store.dispose();
});

const criteria = [
  { criterion_id: 'done', statement: 'noted', kind: { type: 'file_exists', path: 'notes.md' } },
];
const items = [
  { item_id: 'finished', title: 'Delegated and finished', readonly: true },
  { item_id: 'crashed', title: 'Delegated and failed', readonly: true },
  { item_id: 'live', title: 'Delegated, still working', readonly: true },
  { item_id: 'look', title: 'Read the logs', readonly: true },
  { item_id: 'edit', title: 'Edit the loader', path_claims: ['src'] },
  { item_id: 'ask', title: 'A person decides', owner: { type: 'human' } },
].map((item) => ({ ...item, criterion_ids: ['done'] }));

for (const backend of backends) {
  describe(`reconciling running work on ${backend.name}`, () => {
    type Deps = { store: Store; clock: typeof systemClock };

    async function terminal(deps: Deps, session_id: string, status: string): Promise<void> {
      await deps.store.append(work.sessionStream('acme', session_id), [
        {
          type: 'terminal',
          content: { schema: 'baton.terminal/v1', status, reason: '' },
          metadata: { kind: 'terminal' },
        },
      ]);
    }

    /** Session s-1 with every item running; three delegated to child sessions. */
    async function running(): Promise<Deps> {
      const handle = await backend.open();
      opened.push(handle);
      await handle.store.createProject('acme');
      // Five items run at once: more than the default max_parallel of four.
      const deps = {
        store: handle.store,
        clock: systemClock,
        work: workConfigSchema.parse({ max_parallel: 8 }),
      };
      await work.startSession(deps, 'acme', { session_id: 's-1', work_mode: 'managed' });
      await work.createContract(
        deps,
        'acme',
        { session_id: 's-1', contract_id: 'w', objective: 'o', criteria, items },
        model,
      );
      for (const { item_id } of items) {
        await work.transitionItem(
          deps,
          'acme',
          { session_id: 's-1', revision: 1, item_id, to: 'running' },
          model,
        );
      }
      for (const item_id of ['finished', 'crashed', 'live']) {
        await work.startSession(deps, 'acme', {
          session_id: `child-${item_id}`,
          parent_session_id: 's-1',
          contract_id: 'w',
          work_item_id: item_id,
        });
        await work.reassignItem(
          deps,
          'acme',
          { session_id: 's-1', item_id, owner: { type: 'worker' }, child_session_id: `child-${item_id}` },
          human,
        );
      }
      await terminal(deps, 'child-finished', 'completed');
      await terminal(deps, 'child-crashed', 'max_turns');
      return deps;
    }

    const item = (snapshot: work.WorkSnapshot, item_id: string) =>
      snapshot.contract!.items.find((candidate) => candidate.item_id === item_id)!;

    it('attaches a finished child for verification, fails on a failed child, keeps a live child running, and interrupts the rest', async () => {
      const deps = await running();
      const reconciled = await work.reconcileWork(deps, 'acme', { session_id: 's-1' });
      expect(item(reconciled, 'finished')).toMatchObject({
        status: 'ready_for_verification',
        evidence: [{ type: 'child_session', session_id: 'child-finished' }],
        evidence_availability: [{ status: 'available' }],
      });
      expect(item(reconciled, 'crashed').status).toBe('failed');
      expect(item(reconciled, 'live').status).toBe('running');
      expect(item(reconciled, 'look').status).toBe('interrupted');
      expect(item(reconciled, 'edit').status).toBe('interrupted');
      expect(item(reconciled, 'ask').status).toBe('running');
      const reasons = new Map<string, string>();
      for await (const entry of deps.store.readStream(work.sessionStream('acme', 's-1'), {
        kinds: ['work_event'],
      })) {
        const kind = (
          entry.content as { kind: { type: string; item_id?: string; to?: string; reason?: string } }
        ).kind;
        if (kind.type === 'item_status_changed' && kind.to !== 'running')
          reasons.set(kind.item_id!, kind.reason!);
      }
      expect(reasons.get('look')).toMatch(/retry eligible/);
      expect(reasons.get('edit')).toMatch(/possible write: review before retry/);
      expect(reasons.get('crashed')).toMatch(/max_turns/);
      const warnings = reconciled.warnings.map((warning) => warning.message).join('\n');
      expect(warnings).toMatch(/"edit".*review/);

      // A second reconcile decides the same and appends nothing.
      const again = await work.reconcileWork(deps, 'acme', { session_id: 's-1' });
      expect(again.position).toBe(reconciled.position);
    });

    it('read-only interrupted work may be retried by the agent; an uncertain write only by a person', async () => {
      const deps = await running();
      await work.reconcileWork(deps, 'acme', { session_id: 's-1' });
      const retried = await work.transitionItem(
        deps,
        'acme',
        { session_id: 's-1', revision: 1, item_id: 'look', to: 'ready' },
        model,
      );
      expect(item(retried, 'look')).toMatchObject({ status: 'ready', attempt: 2 });
      await expectBatonError(
        work.transitionItem(
          deps,
          'acme',
          { session_id: 's-1', revision: 1, item_id: 'edit', to: 'ready' },
          model,
        ),
        'conflict',
        { rule: 'review_required' },
      );
      await expectBatonError(
        work.retryItem(deps, 'acme', { session_id: 's-1', item_id: 'edit' }, model),
        'conflict',
        { rule: 'review_required' },
      );
      const reviewed = await work.retryItem(
        deps,
        'acme',
        { session_id: 's-1', item_id: 'edit', reason: 'reviewed' },
        human,
      );
      expect(item(reviewed, 'edit')).toMatchObject({ status: 'ready', attempt: 2 });
    });

    it('a child ledger without a terminal marker is not a finished child; a child that never started is none', async () => {
      const deps = await running();
      await work.reassignItem(
        deps,
        'acme',
        { session_id: 's-1', item_id: 'look', owner: { type: 'worker' }, child_session_id: 'never-started' },
        human,
      );
      const reconciled = await work.reconcileWork(deps, 'acme', { session_id: 's-1' });
      expect(item(reconciled, 'live').status).toBe('running');
      expect(item(reconciled, 'look').status).toBe('interrupted');
      await terminal(deps, 'child-live', 'completed');
      const later = await work.reconcileWork(deps, 'acme', { session_id: 's-1' });
      expect(item(later, 'live').status).toBe('ready_for_verification');
    });

    it("a session that is not the item's child is no child: its terminal marker decides nothing", async () => {
      const deps = await running();
      // A session of its own, and a child of another session, both ended.
      await work.startSession(deps, 'acme', { session_id: 'stranger' });
      await work.startSession(deps, 'acme', { session_id: 'other' });
      await work.startSession(deps, 'acme', { session_id: 'others-child', parent_session_id: 'other' });
      await terminal(deps, 'stranger', 'failed');
      await terminal(deps, 'others-child', 'completed');
      for (const [item_id, child_session_id] of [
        ['edit', 'stranger'],
        ['look', 'others-child'],
      ] as const) {
        await work.reassignItem(
          deps,
          'acme',
          { session_id: 's-1', item_id, owner: { type: 'worker' }, child_session_id },
          human,
        );
      }
      const reconciled = await work.reconcileWork(deps, 'acme', { session_id: 's-1' });
      expect(item(reconciled, 'edit')).toMatchObject({ status: 'interrupted', evidence: [] });
      expect(item(reconciled, 'look')).toMatchObject({ status: 'interrupted', evidence: [] });
      expect(item(reconciled, 'finished').status).toBe('ready_for_verification');
    });

    it('reopening the session reconciles it', async () => {
      const deps = await running();
      await work.startSession(deps, 'acme', { session_id: 's-1', work_mode: 'managed' });
      const reopened = await work.readWork(deps, 'acme', { session_id: 's-1' });
      expect(item(reopened, 'finished').status).toBe('ready_for_verification');
      expect(item(reopened, 'edit').status).toBe('interrupted');
    });
  });
}
