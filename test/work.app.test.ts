/**
 * The managed work operations against real stores: each change is validated before anything
 * is written, concurrent changes on one head are decided one after the other, a stale answer
 * never touches a newer revision, and sessions carry their lineage.
 */
import { afterEach, describe, expect, it } from 'vitest';
import * as work from '../src/app/work.ts';
import { systemClock } from '../src/core/clock.ts';
import { BatonError } from '../src/core/errors.ts';
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

const definition = {
  objective: 'migrate the configuration loader',
  criteria: [
    { criterion_id: 'inspected', statement: 'mapped', kind: { type: 'file_exists', path: 'notes.md' } },
    { criterion_id: 'tests', statement: 'tests pass', kind: { type: 'shell', command: 'npm test' } },
  ],
  items: [
    { item_id: 'inspect', title: 'Inspect', criterion_ids: ['inspected'] },
    { item_id: 'implement', title: 'Implement', dependencies: ['inspect'], criterion_ids: ['tests'] },
  ],
};

for (const backend of backends) {
  describe(`managed work operations on ${backend.name}`, () => {
    async function setup(): Promise<{ store: Store; deps: { store: Store; clock: typeof systemClock } }> {
      const handle = await backend.open();
      opened.push(handle);
      await handle.store.createProject('acme');
      const deps = { store: handle.store, clock: systemClock };
      await work.startSession(deps, 'acme', { session_id: 's-1', work_mode: 'managed' });
      return { store: handle.store, deps };
    }

    /** A session whose contract work-1 (the definition above, proposed by the model) is active. */
    async function withContract(): ReturnType<typeof setup> {
      const started = await setup();
      await work.createContract(
        started.deps,
        'acme',
        { session_id: 's-1', contract_id: 'work-1', ...definition },
        model,
      );
      return started;
    }

    it('creates an active contract whose first item is ready, and refuses a model completion', async () => {
      const { deps } = await setup();
      const created = await work.createContract(
        deps,
        'acme',
        { session_id: 's-1', contract_id: 'work-1', ...definition },
        model,
      );
      expect(created.contract?.status).toBe('active');
      expect(created.contract?.items.map((item) => item.status)).toEqual(['ready', 'proposed']);
      expect(created.position).toBe(4);
      await work.transitionItem(
        deps,
        'acme',
        { session_id: 's-1', revision: 1, item_id: 'inspect', to: 'running' },
        model,
      );
      await expectBatonError(
        work.transitionItem(
          deps,
          'acme',
          { session_id: 's-1', revision: 1, item_id: 'inspect', to: 'succeeded' },
          model,
        ),
        'conflict',
        { rule: 'invalid_transition', actor: 'model', from: 'running', to: 'succeeded' },
      );
      const after = await work.readWork(deps, 'acme', { session_id: 's-1' });
      expect(after.position).toBe(5);
    });

    it('bad input and refused changes write nothing', async () => {
      const { store, deps } = await setup();
      const stream = work.sessionStream('acme', 's-1');
      const head = (await store.getStream(stream)).head;
      await expectBatonError(
        work.createContract(deps, 'acme', { session_id: 's-1', ...definition, objective: '' }, model),
        'invalid_input',
        // The schema says it, so the published document does too.
        { issues: [{ path: 'objective', message: 'the objective is empty' }] },
      );
      await expectBatonError(
        work.createContract(deps, 'acme', { session_id: 's-1', items: 'nope' }, model),
        'invalid_input',
      );
      await expectBatonError(work.readWork(deps, 'acme', { session_id: 'nobody' }), 'not_found');
      await expectBatonError(
        work.confirmWork(deps, 'acme', { session_id: 's-1', revision: 1 }, human),
        'not_found',
      );
      expect((await store.getStream(stream)).head).toBe(head);
    });

    it('decides concurrent changes on one head one after the other: exactly one start wins', async () => {
      const { store, deps } = await withContract();
      const attempts = await Promise.allSettled(
        Array.from({ length: 6 }, () =>
          work.transitionItem(
            deps,
            'acme',
            { session_id: 's-1', revision: 1, item_id: 'inspect', to: 'running' },
            model,
          ),
        ),
      );
      expect(attempts.filter((attempt) => attempt.status === 'fulfilled')).toHaveLength(1);
      for (const attempt of attempts) {
        if (attempt.status === 'rejected') {
          expect(attempt.reason).toBeInstanceOf(BatonError);
          expect((attempt.reason as BatonError).data.rule).toMatch(/invalid_transition|status_mismatch/);
        }
      }
      const events = [];
      for await (const entry of store.readStream(work.sessionStream('acme', 's-1'), {
        kinds: ['work_event'],
      }))
        events.push(entry);
      expect(events).toHaveLength(4);
    });

    it('lands 30 concurrent changes that do not conflict, each once, by deciding again on the moved head', async () => {
      const { store, deps } = await withContract();
      const writers = 30;
      const attempts = await Promise.allSettled(
        Array.from({ length: writers }, (_, index) =>
          work.attachEvidence(
            deps,
            'acme',
            {
              session_id: 's-1',
              revision: 1,
              item_id: 'inspect',
              evidence: { type: 'child_session', session_id: `child-${index}` },
              operation_id: `op-${index}`,
            },
            model,
          ),
        ),
      );
      expect(attempts.filter((attempt) => attempt.status === 'rejected')).toEqual([]);
      const attached = [];
      for await (const entry of store.readStream(work.sessionStream('acme', 's-1'), {
        kinds: ['work_event'],
      }))
        if ((entry.content as { kind: { type: string } }).kind.type === 'evidence_attached')
          attached.push(entry);
      expect(attached).toHaveLength(writers);
    });

    it('an operation id names one change: the same change again appends nothing, another change under it is refused and writes nothing', async () => {
      const { store, deps } = await withContract();
      const stream = work.sessionStream('acme', 's-1');
      const start = {
        session_id: 's-1',
        revision: 1,
        item_id: 'inspect',
        to: 'running',
        operation_id: 'op-1',
      };
      const first = await work.transitionItem(deps, 'acme', start, model);
      expect((await work.transitionItem(deps, 'acme', start, model)).position).toBe(first.position);
      await expectBatonError(
        work.transitionItem(deps, 'acme', { ...start, to: 'blocked' }, model),
        'conflict',
        {
          rule: 'operation_reused',
          operation_id: 'op-1',
          recorded: { contract_id: 'work-1', item_id: 'inspect', type: 'item_status_changed', to: 'running' },
        },
      );
      await expectBatonError(
        work.attachEvidence(
          deps,
          'acme',
          {
            session_id: 's-1',
            revision: 1,
            item_id: 'inspect',
            evidence: { type: 'child_session', session_id: 'child-1' },
            operation_id: 'op-1',
          },
          model,
        ),
        'conflict',
        { rule: 'operation_reused', operation_id: 'op-1' },
      );
      expect((await store.getStream(stream)).head).toBe(first.position);
      const evidence = {
        session_id: 's-1',
        revision: 1,
        item_id: 'inspect',
        evidence: { type: 'child_session', session_id: 'child-1' },
        operation_id: 'op-2',
      };
      const attached = await work.attachEvidence(deps, 'acme', evidence, model);
      expect((await work.attachEvidence(deps, 'acme', evidence, model)).position).toBe(attached.position);
      await expectBatonError(
        work.attachEvidence(
          deps,
          'acme',
          { ...evidence, evidence: { type: 'child_session', session_id: 'child-2' } },
          model,
        ),
        'conflict',
        { rule: 'operation_reused', operation_id: 'op-2' },
      );
      expect((await store.getStream(stream)).head).toBe(attached.position);
    });

    it('a ready item is ready only while its dependencies are done: a revision that adds an unfinished one makes it proposed again', async () => {
      const { deps } = await withContract();
      const parallel = {
        ...definition,
        items: definition.items.map((item) => ({ ...item, dependencies: [] })),
      };
      const flat = await work.reviseContract(
        deps,
        'acme',
        { session_id: 's-1', previous_revision: 1, ...parallel, reason: 'independent' },
        model,
      );
      expect(flat.contract?.items.map((item) => item.status)).toEqual(['ready', 'ready']);
      const chained = await work.reviseContract(
        deps,
        'acme',
        { session_id: 's-1', previous_revision: 2, ...definition, reason: 'implement waits again' },
        model,
      );
      expect(chained.contract?.items.map((item) => item.status)).toEqual(['ready', 'proposed']);
      expect(chained.control_block).toContain('- implement: proposed');
      // Once its dependency is done, readiness follows as before.
      await work.cancelItem(deps, 'acme', { session_id: 's-1', item_id: 'inspect' }, human);
      const snapshot = await work.readWork(deps, 'acme', { session_id: 's-1' });
      expect(snapshot.contract?.items.map((item) => item.status)).toEqual(['cancelled', 'proposed']);
    });

    it('an answer holds across a revision only while its assumption asks the same: a changed one needs a new answer', async () => {
      const { deps } = await setup();
      const asking = (text: string) => ({
        ...definition,
        assumptions: [{ assumption_id: 'target', text, requires_confirmation: true }],
      });
      await work.createContract(
        deps,
        'acme',
        { session_id: 's-1', contract_id: 'work-1', ...asking('deploy to staging') },
        model,
      );
      await work.confirmWork(
        deps,
        'acme',
        { session_id: 's-1', revision: 1, resolutions: [{ assumption_id: 'target', resolution: 'yes' }] },
        human,
      );
      const same = await work.reviseContract(
        deps,
        'acme',
        { session_id: 's-1', previous_revision: 1, ...asking('deploy to staging'), reason: 'same' },
        model,
      );
      // A revision asks again; the answer to an unchanged question still holds, so confirming resumes it.
      expect(same.contract).toMatchObject({ status: 'awaiting_input', revision: 2 });
      expect(same.contract?.contract.assumptions[0]?.resolution).toBe('yes');
      const resumed = await work.confirmWork(deps, 'acme', { session_id: 's-1', revision: 2 }, human);
      expect(resumed.contract).toMatchObject({ status: 'active', revision: 2 });
      const changed = await work.reviseContract(
        deps,
        'acme',
        { session_id: 's-1', previous_revision: 2, ...asking('deploy to production'), reason: 'scope' },
        model,
      );
      expect(changed.contract).toMatchObject({ status: 'awaiting_input', revision: 3 });
      expect(changed.contract?.contract.assumptions[0]?.resolution).toBeNull();
      await expectBatonError(
        work.confirmWork(deps, 'acme', { session_id: 's-1', revision: 3 }, human),
        'conflict',
        { rule: 'needs_input', assumption_ids: ['target'] },
      );
    });

    it('waits for input, refuses a stale answer after a revision, and resumes with a current one', async () => {
      const { deps } = await setup();
      const asking = {
        ...definition,
        assumptions: [{ assumption_id: 'branch', text: 'work on main', requires_confirmation: true }],
      };
      const created = await work.createContract(
        deps,
        'acme',
        { session_id: 's-1', contract_id: 'work-1', ...asking },
        model,
      );
      expect(created.contract?.status).toBe('awaiting_input');
      expect(created.control_block).toContain('Awaiting input on: branch');
      await work.reviseContract(
        deps,
        'acme',
        { session_id: 's-1', previous_revision: 1, ...asking, reason: 'clarified' },
        model,
      );
      await expectBatonError(
        work.confirmWork(
          deps,
          'acme',
          {
            session_id: 's-1',
            revision: 1,
            resolutions: [{ assumption_id: 'branch', resolution: 'release' }],
          },
          human,
        ),
        'revision_conflict',
        { rule: 'stale_revision', expected: 2, actual: 1 },
      );
      const resumed = await work.confirmWork(
        deps,
        'acme',
        { session_id: 's-1', revision: 2, resolutions: [{ assumption_id: 'branch', resolution: 'release' }] },
        human,
      );
      expect(resumed.contract).toMatchObject({ status: 'active', revision: 2 });
      expect(resumed.contract?.contract.assumptions[0]?.resolution).toBe('release');
      expect(resumed.contract?.items[0]?.status).toBe('ready');
    });

    it('retries, cancels and reassigns items as a person', async () => {
      const { deps } = await withContract();
      await expectBatonError(
        work.retryItem(deps, 'acme', { session_id: 's-1', item_id: 'inspect' }, human),
        'conflict',
        {
          rule: 'invalid_transition',
        },
      );
      const cancelled = await work.cancelItem(
        deps,
        'acme',
        { session_id: 's-1', item_id: 'inspect', reason: 'not needed' },
        human,
      );
      expect(cancelled.contract?.items[0]).toMatchObject({ status: 'cancelled' });
      const retried = await work.retryItem(deps, 'acme', { session_id: 's-1', item_id: 'inspect' }, human);
      expect(retried.contract?.items[0]).toMatchObject({ status: 'ready', attempt: 2 });
      const reassigned = await work.reassignItem(
        deps,
        'acme',
        { session_id: 's-1', item_id: 'inspect', owner: { type: 'worker' }, child_session_id: 'child-1' },
        human,
      );
      expect(reassigned.contract?.items[0]).toMatchObject({
        owner: { type: 'worker' },
        child_session_id: 'child-1',
      });
      await expectBatonError(
        work.reassignItem(
          deps,
          'acme',
          { session_id: 's-1', item_id: 'inspect', owner: { type: 'tool', name: 'deploy' } },
          human,
        ),
        'invalid_input',
        { rule: 'unsupported_tool', id: 'inspect' },
      );
    });

    it('a retry puts an item whose dependency is not done back to proposed, a new attempt the runtime readies once the dependency is done', async () => {
      const { deps } = await withContract();
      const person: Actor = { type: 'human', id: 'p' };
      const at = { session_id: 's-1', item_id: 'implement' };
      const status = (snapshot: work.WorkSnapshot, id: string) =>
        snapshot.contract?.items.find((candidate) => candidate.item_id === id);
      await work.cancelItem(deps, 'acme', { ...at, reason: 'by mistake' }, person);
      const retried = await work.retryItem(deps, 'acme', at, person);
      expect(status(retried, 'inspect')).toMatchObject({ status: 'ready' });
      // A new attempt: the cancelled one's finish is not shown beside it.
      expect(status(retried, 'implement')).toMatchObject({
        status: 'proposed',
        attempt: 2,
        finished_at: null,
      });
      const done = await work.transitionItem(
        deps,
        'acme',
        { session_id: 's-1', revision: 1, item_id: 'inspect', to: 'skipped' },
        person,
      );
      expect(status(done, 'implement')).toMatchObject({ status: 'ready', attempt: 2 });
      // With its dependency done a retry goes to ready, as it always did.
      await work.cancelItem(deps, 'acme', at, person);
      const again = await work.retryItem(deps, 'acme', at, person);
      expect(status(again, 'implement')).toMatchObject({ status: 'ready', attempt: 3 });
    });

    it("a child session's capabilities are its parent's, narrowed: inherited when not given, refused when wider", async () => {
      const { deps } = await setup();
      await work.startSession(deps, 'acme', {
        session_id: 'reader',
        capabilities: { write: false, tools: ['grep'], owners: ['parent_agent', 'worker'] },
      });
      // Not given: the parent's, so a read-only parent's child is read-only too.
      const inherited = await work.startSession(deps, 'acme', {
        session_id: 'c-1',
        parent_session_id: 'reader',
      });
      expect(inherited.capabilities).toMatchObject({
        write: false,
        tools: ['grep'],
        owners: ['parent_agent', 'worker'],
      });
      await expectBatonError(
        work.createContract(deps, 'acme', { session_id: 'c-1', ...definition }, model),
        'invalid_input',
        { rule: 'capability_escalation' },
      );
      // A field left out is the parent's too.
      const partial = await work.startSession(deps, 'acme', {
        session_id: 'c-4',
        parent_session_id: 'reader',
        capabilities: { tools: [] },
      });
      expect(partial.capabilities).toMatchObject({
        write: false,
        tools: [],
        owners: ['parent_agent', 'worker'],
      });
      // Narrower is fine; anything the parent does not hold is an escalation, and nothing is written.
      await work.startSession(deps, 'acme', {
        session_id: 'c-2',
        parent_session_id: 'reader',
        capabilities: { write: false, tools: [], owners: ['worker'] },
      });
      const wider: work.StartSessionInput['capabilities'][] = [
        { write: true, tools: ['grep'], owners: ['worker'] },
        { write: false, tools: ['grep', 'shell'], owners: ['worker'] },
        { write: false, tools: ['grep'], owners: ['worker', 'human'] },
        { write: false, tools: ['grep'], owners: ['worker'], capabilities: ['deploy'] },
        { write: false, tools: ['grep'], owners: ['worker'], flows: ['release'] },
      ];
      for (const capabilities of wider) {
        await expectBatonError(
          work.startSession(deps, 'acme', { session_id: 'c-3', parent_session_id: 'reader', capabilities }),
          'invalid_input',
          { rule: 'capability_escalation' },
        );
        await expectBatonError(work.readWork(deps, 'acme', { session_id: 'c-3' }), 'not_found');
      }
    });

    it('child sessions record their parent, contract and work item (lineage)', async () => {
      const { deps } = await withContract();
      const header = await work.startSession(deps, 'acme', {
        session_id: 'child-1',
        parent_session_id: 's-1',
        contract_id: 'work-1',
        work_item_id: 'inspect',
        capabilities: { write: false },
      });
      expect(header).toMatchObject({
        parent_session_id: 's-1',
        contract_id: 'work-1',
        work_item_id: 'inspect',
      });
      await work.startSession(deps, 'acme', {
        session_id: 'child-1',
        parent_session_id: 's-1',
        contract_id: 'work-1',
        work_item_id: 'inspect',
        capabilities: { write: false },
      });
      await expectBatonError(
        work.startSession(deps, 'acme', { session_id: 'child-1', parent_session_id: 's-1' }),
        'conflict',
      );
      await expectBatonError(
        work.startSession(deps, 'acme', { session_id: 'orphan', parent_session_id: 'nobody' }),
        'not_found',
      );
      // The lineage names what the parent holds, or the child could not be traced from its item.
      const before = (await deps.store.getStream({ project_id: 'acme', kind: 'session', session_id: 's-1' }))
        .head;
      for (const [lineage, path] of [
        [{ contract_id: 'no-such-contract' }, 'contract_id'],
        [{ contract_id: 'work-1', work_item_id: 'no-such-item' }, 'work_item_id'],
        [{ work_item_id: 'no-such-item' }, 'work_item_id'],
      ] as const) {
        await expectBatonError(
          work.startSession(deps, 'acme', { session_id: 'stray', parent_session_id: 's-1', ...lineage }),
          'not_found',
          { rule: 'unknown_lineage', issues: [{ path, message: expect.any(String) as string }] },
        );
      }
      await expectBatonError(
        deps.store.getStream({ project_id: 'acme', kind: 'session', session_id: 'stray' }),
        'not_found',
      );
      expect(
        (await deps.store.getStream({ project_id: 'acme', kind: 'session', session_id: 's-1' })).head,
      ).toBe(before);
      // The item in the parent's live contract, when the child names no contract.
      await work.startSession(deps, 'acme', {
        session_id: 'child-2',
        parent_session_id: 's-1',
        work_item_id: 'inspect',
        capabilities: { write: false },
      });
      // A read-only child cannot take on a writing item.
      await expectBatonError(
        work.createContract(deps, 'acme', { session_id: 'child-1', ...definition }, model),
        'invalid_input',
        { rule: 'capability_escalation', id: 'inspect' },
      );
    });
  });
}
