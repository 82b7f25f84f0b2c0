/**
 * Attached evidence is resolved against the project's ledger as it is attached, on every
 * backend: each reference type available and unavailable with its stable reason, recorded in
 * the `evidence_attached` event itself (so a re-projection after a restart says the same), one
 * reference attached again decided anew without a second piece of evidence, an identical attach
 * again (a retry after a lost answer) writing nothing, while a new attempt, a new decision or a
 * new operation id writes one more event, and a ledger written before the decision existed still
 * projecting, its evidence `unchecked`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import * as work from '../src/app/work.ts';
import { systemClock } from '../src/core/clock.ts';
import type { JsonValue } from '../src/core/json.ts';
import type { Actor, EvidenceAvailability, EvidenceRef } from '../src/core/work/model.ts';
import { projectWork } from '../src/core/work/projector.ts';
import type { Store } from '../src/store/store.ts';
import { backends, type OpenedStore } from './helpers/stores.ts';
import { contract, ev, ledger } from './helpers/work.ts';

const model: Actor = { type: 'model', id: 'agent' };
const opened: OpenedStore[] = [];
afterEach(async () => {
  for (const store of opened.splice(0)) await store.dispose();
});

const definition = {
  objective: 'migrate the configuration loader',
  criteria: [
    { criterion_id: 'tests', statement: 'tests pass', kind: { type: 'shell', command: 'npm test' } },
  ],
  items: [{ item_id: 'inspect', title: 'Inspect', criterion_ids: ['tests'] }],
};

const entry = (type: string, content: Record<string, JsonValue>) => ({
  type,
  content: { schema: `baton.${type.replace('_', '-')}/v1`, ...content },
  metadata: { kind: type },
});

const available: EvidenceAvailability = { status: 'available' };
const unavailable = (reason: string): EvidenceAvailability => ({ status: 'unavailable', reason });

/** Each reference type, available and not: s-1 holds the contract at 2..4, then 5..9 below. */
const cases: [EvidenceRef, EvidenceAvailability][] = [
  [{ type: 'ledger_entry', session_id: 's-1', entry_id: '8' }, available],
  [{ type: 'ledger_entry', session_id: 'kid', entry_id: '1' }, available],
  [{ type: 'ledger_entry', session_id: 's-1', entry_id: 'e-1' }, unavailable('missing_entry')],
  [{ type: 'ledger_entry', session_id: 's-1', entry_id: '08' }, unavailable('missing_entry')],
  [{ type: 'ledger_entry', session_id: 's-1', entry_id: '999' }, unavailable('missing_entry')],
  [{ type: 'ledger_entry', session_id: 'nobody', entry_id: '1' }, unavailable('missing_session')],
  [{ type: 'receipt', session_id: 's-1', entry_id: '6' }, available],
  [{ type: 'receipt', session_id: 's-1', entry_id: '5' }, unavailable('not_a_receipt')],
  [{ type: 'receipt', session_id: 'nobody', entry_id: '6' }, unavailable('missing_session')],
  [{ type: 'receipt', session_id: 'imported', entry_id: '1' }, unavailable('retracted')],
  [{ type: 'tool_result', session_id: 's-1', tool_use_id: 'call-1' }, available],
  [{ type: 'tool_result', session_id: 's-1', tool_use_id: 'transcript-7' }, unavailable('missing_entry')],
  [{ type: 'tool_result', session_id: 'kid', tool_use_id: 'call-1' }, unavailable('missing_entry')],
  [{ type: 'tool_result', session_id: 'nobody', tool_use_id: 'call-1' }, unavailable('missing_session')],
  [{ type: 'checkpoint_diff', session_id: 's-1', from_seq: 0, to_seq: 7 }, available],
  [{ type: 'checkpoint_diff', session_id: 's-1', from_seq: 7, to_seq: 9 }, available],
  [{ type: 'checkpoint_diff', session_id: 's-1', from_seq: 9, to_seq: 7 }, unavailable('invalid_range')],
  [{ type: 'checkpoint_diff', session_id: 's-1', from_seq: 0, to_seq: 8 }, unavailable('not_a_checkpoint')],
  [{ type: 'checkpoint_diff', session_id: 's-1', from_seq: 7, to_seq: 99 }, unavailable('missing_entry')],
  [{ type: 'checkpoint_diff', session_id: 'nobody', from_seq: 0, to_seq: 0 }, unavailable('missing_session')],
  [{ type: 'child_session', session_id: 'kid' }, available],
  [{ type: 'child_session', session_id: 'other' }, unavailable('not_a_child')],
  [{ type: 'child_session', session_id: 's-1' }, unavailable('not_a_child')],
  [{ type: 'child_session', session_id: 'nobody' }, unavailable('missing_session')],
  [{ type: 'child_session', session_id: '..' }, unavailable('missing_session')],
  // A flow node resolves by the executor's receipt in the attaching session.
  [{ type: 'flow_node', flow: 'release', run_id: 'r1', node_id: 'n1' }, available],
  [{ type: 'flow_node', flow: 'release', run_id: 'r1', node_id: 'n2' }, unavailable('missing_entry')],
  [{ type: 'flow_node', flow: 'release', run_id: 'r2', node_id: 'n1' }, unavailable('missing_entry')],
  [{ type: 'external_operation', integration: 'github', operation_id: 'o1' }, unavailable('outside_ledger')],
];

for (const backend of backends) {
  describe(`attached evidence resolved on ${backend.name}`, () => {
    async function setup(): Promise<{ store: Store; deps: { store: Store; clock: typeof systemClock } }> {
      const handle = await backend.open();
      opened.push(handle);
      const { store } = handle;
      await store.createProject('acme');
      const deps = { store, clock: systemClock };
      await work.startSession(deps, 'acme', { session_id: 's-1', work_mode: 'managed' });
      const created = await work.createContract(
        deps,
        'acme',
        { session_id: 's-1', contract_id: 'work-1', ...definition },
        model,
      );
      expect(created.position).toBe(4);
      await store.append(work.sessionStream('acme', 's-1'), [
        entry('tool_result', { tool_use_id: 'call-1', tool: 'bash', output: 'ok' }),
        entry('receipt', { receipt_id: 'r-1', purpose: 'flow_completed', details: { flow: 'release' } }),
        entry('checkpoint', { checkpoint: 'ck-1' }),
        entry('user_message', { text: 'keep going' }),
        entry('checkpoint', { checkpoint: 'ck-2' }),
        entry('receipt', {
          receipt_id: 'r1.n1',
          purpose: 'flow_node',
          details: { flow: 'release', run_id: 'r1', node_id: 'n1', status: 'passed' },
        }),
      ]);
      await work.startSession(deps, 'acme', { session_id: 'kid', parent_session_id: 's-1' });
      await work.startSession(deps, 'acme', { session_id: 'other' });
      // No session entry is ever retracted here; an imported ledger may hold a tombstone.
      await store.importEntries(work.sessionStream('acme', 'imported'), [
        {
          position: 1,
          type: 'receipt',
          source_id: null,
          digest: `sha256:${'0'.repeat(64)}`,
          recorded_at: '2026-12-01T00:00:00.000Z',
          content: null,
          metadata: null,
          retracted: { at: '2026-12-02T00:00:00.000Z', reason: 'purged' },
        },
      ]);
      return { store, deps };
    }

    const attach = (deps: { store: Store; clock: typeof systemClock }, evidence: EvidenceRef) =>
      work.attachEvidence(
        deps,
        'acme',
        { session_id: 's-1', revision: 1, item_id: 'inspect', evidence },
        model,
      );

    /** How many entries s-1 holds, and how many of them attach evidence. */
    async function written(store: Store): Promise<{ head: number; attached: number }> {
      const stream = work.sessionStream('acme', 's-1');
      let attached = 0;
      for await (const stored of store.readStream(stream, { kinds: ['work_event'] })) {
        if ((stored.content as { kind: { type: string } }).kind.type === 'evidence_attached') attached += 1;
      }
      return { head: (await store.getStream(stream)).head, attached };
    }

    it('marks each reference type available or unavailable with its reason, in the event itself', async () => {
      const { store, deps } = await setup();
      for (const [evidence] of cases) await attach(deps, evidence);
      const item = (await work.readWork(deps, 'acme', { session_id: 's-1' })).contract!.items[0]!;
      expect(item.evidence_count).toBe(cases.length);
      expect(item.evidence.map((ref, at) => [ref, item.evidence_availability[at]])).toEqual(cases);
      // Recorded in the ledger, not worked out on reading: a restart re-projects the same.
      const recorded: unknown[] = [];
      for await (const stored of store.readStream(work.sessionStream('acme', 's-1'), {
        kinds: ['work_event'],
      })) {
        const kind = (stored.content as { kind: { type: string; availability?: unknown } }).kind;
        if (kind.type === 'evidence_attached') recorded.push(kind.availability);
      }
      expect(recorded).toEqual(cases.map(([, availability]) => availability));
    });

    it('decides the same reference again when it is attached again, still one piece of evidence', async () => {
      const { store, deps } = await setup();
      const late: EvidenceRef = { type: 'child_session', session_id: 'late' };
      const before = await attach(deps, late);
      expect(before.contract!.items[0]).toMatchObject({
        evidence: [late],
        evidence_availability: [unavailable('missing_session')],
        evidence_count: 1,
      });
      await work.startSession(deps, 'acme', { session_id: 'late', parent_session_id: 's-1' });
      const attached = (await written(store)).attached;
      const after = await attach(deps, late);
      expect((await written(store)).attached).toBe(attached + 1);
      expect(after.contract!.items[0]).toMatchObject({
        evidence: [late],
        evidence_availability: [available],
        evidence_count: 1,
      });
    });

    it('writes nothing for an identical attach again, whoever retries it, and answers the same snapshot', async () => {
      const { store, deps } = await setup();
      const human: Actor = { type: 'human', id: 'ana' };
      for (const [evidence, availability] of [cases[10]!, cases[11]!]) {
        const first = await attach(deps, evidence);
        const before = await written(store);
        const again = await attach(deps, evidence);
        expect(again).toEqual(first);
        const byHuman = await work.attachEvidence(
          deps,
          'acme',
          { session_id: 's-1', contract_id: 'work-1', revision: 1, item_id: 'inspect', evidence },
          human,
        );
        expect(byHuman).toEqual(first);
        expect(await written(store)).toEqual(before);
        expect(byHuman.contract!.items[0]!.evidence_availability.at(-1)).toEqual(availability);
      }
      const item = (await work.readWork(deps, 'acme', { session_id: 's-1' })).contract!.items[0]!;
      expect(item.evidence_count).toBe(2);
      expect((await written(store)).attached).toBe(2);
    });

    it('writes an identical attach again only to record an operation id not yet recorded', async () => {
      const { store, deps } = await setup();
      const evidence: EvidenceRef = { type: 'tool_result', session_id: 's-1', tool_use_id: 'call-1' };
      const request = { session_id: 's-1', revision: 1, item_id: 'inspect', evidence };
      const first = await work.attachEvidence(deps, 'acme', { ...request, operation_id: 'op-1' }, model);
      const before = await written(store);
      // A retry without the id, or with it, is the same attach.
      expect(await attach(deps, evidence)).toEqual(first);
      expect(await work.attachEvidence(deps, 'acme', { ...request, operation_id: 'op-1' }, model)).toEqual(
        first,
      );
      expect(await written(store)).toEqual(before);
      // A new id is recorded, so that it names this change from now on; still one piece of evidence.
      const named = await work.attachEvidence(deps, 'acme', { ...request, operation_id: 'op-2' }, model);
      expect(await written(store)).toEqual({ head: before.head + 1, attached: before.attached + 1 });
      expect(named.contract!.items[0]!.evidence_count).toBe(1);
      expect(await work.attachEvidence(deps, 'acme', { ...request, operation_id: 'op-2' }, model)).toEqual(
        named,
      );
      expect(await written(store)).toEqual({ head: before.head + 1, attached: before.attached + 1 });
    });

    it('writes the same reference once more for a new attempt of the item, then nothing again', async () => {
      const { store, deps } = await setup();
      const human: Actor = { type: 'human', id: 'ana' };
      const evidence: EvidenceRef = { type: 'tool_result', session_id: 's-1', tool_use_id: 'call-1' };
      await attach(deps, evidence);
      const item = { session_id: 's-1', item_id: 'inspect' };
      await work.transitionItem(deps, 'acme', { ...item, revision: 1, to: 'running' }, model);
      await work.cancelItem(deps, 'acme', item, human);
      const retried = await work.retryItem(deps, 'acme', { ...item, reason: 'again' }, human);
      expect(retried.contract!.items[0]).toMatchObject({
        attempt: 2,
        evidence: [evidence],
        evidence_count: 1,
      });
      const before = await written(store);
      const second = await attach(deps, evidence);
      expect(await written(store)).toEqual({ head: before.head + 1, attached: before.attached + 1 });
      expect(second.contract!.items[0]).toMatchObject({
        attempt: 2,
        evidence: [evidence],
        evidence_count: 1,
      });
      expect(await attach(deps, evidence)).toEqual(second);
      expect(await written(store)).toEqual({ head: before.head + 1, attached: before.attached + 1 });
    });

    it('keeps an attach identical across a revision, even when retried against the revision it was made at', async () => {
      const { store, deps } = await setup();
      const evidence: EvidenceRef = { type: 'tool_result', session_id: 's-1', tool_use_id: 'call-1' };
      await attach(deps, evidence);
      const revised = await work.reviseContract(
        deps,
        'acme',
        { session_id: 's-1', previous_revision: 1, ...definition, reason: 'reworded' },
        model,
      );
      expect(revised.contract!.revision).toBe(2);
      const before = await written(store);
      // The retry of an attach whose answer was lost, made before the revision: it landed.
      expect(await attach(deps, evidence)).toEqual(revised);
      const current = await work.attachEvidence(
        deps,
        'acme',
        { session_id: 's-1', revision: 2, item_id: 'inspect', evidence },
        model,
      );
      expect(current).toEqual(revised);
      expect(await written(store)).toEqual(before);
      // Anything else against the old revision is still stale.
      await expect(
        attach(deps, { type: 'tool_result', session_id: 's-1', tool_use_id: 'call-2' }),
      ).rejects.toMatchObject({ code: 'revision_conflict', data: { rule: 'stale_revision' } });
      expect(await written(store)).toEqual(before);
    });

    it('resolves an entry of its own session against the head it is appended after', async () => {
      const { deps } = await setup();
      // Position 11 is where this very event lands: not there when it was decided.
      const own: EvidenceRef = { type: 'ledger_entry', session_id: 's-1', entry_id: '11' };
      const attached = await attach(deps, own);
      expect(attached.position).toBe(11);
      expect(attached.contract!.items[0]!.evidence_availability).toEqual([unavailable('missing_entry')]);
    });
  });
}

describe('a ledger written before attached evidence was resolved', () => {
  it('still projects; its evidence is unchecked', () => {
    const result = projectWork(
      ledger(ev.created(contract()), ev.status('draft', 'active'), ev.evidence('inspect', 'call-1')),
    );
    expect(result.ok).toBe(true);
    const item = result.ok ? result.projection!.contracts[0]!.items[0]! : undefined;
    expect(item).toMatchObject({
      evidence: [{ type: 'tool_result', session_id: 's-1', tool_use_id: 'call-1' }],
      evidence_availability: [{ status: 'unchecked' }],
      evidence_count: 1,
    });
  });
});
