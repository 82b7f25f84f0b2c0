/**
 * The other half of where the two specifications meet: a bound managed session whose run stops
 * before its contract ends prepares a Handoff for whoever continues (docs/managed-work.md, "An
 * interrupted bound session"). On every backend, then the boundary itself, pure.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acknowledgeHandoff, handoffCurrentWork, readContinuity } from '../src/app/continuity.ts';
import type { AppDeps } from '../src/app/deps.ts';
import { stopGate } from '../src/app/gate.ts';
import { commitHandoff, continueHandoff } from '../src/app/handoffs.ts';
import { captureSource } from '../src/app/sources.ts';
import { verifyWork } from '../src/app/verify.ts';
import * as work from '../src/app/work.ts';
import { listSessions } from '../src/app/work-list.ts';
import { systemClock } from '../src/core/clock.ts';
import { BatonError } from '../src/core/errors.ts';
import type { SourceRef } from '../src/core/ledger/source.ts';
import { interruptedBoundary, interruptionSourceIds } from '../src/core/work/interruption.ts';
import type { Actor } from '../src/core/work/model.ts';
import type { ContractProjection } from '../src/core/work/projector.ts';
import { collect, expectBatonError } from '../src/store/conformance/store.conformance.ts';
import { backends, overriding, type OpenedStore } from './helpers/stores.ts';
import { allConfirmed, commitFirstRevision } from './helpers/workstream.ts';

const project_id = 'acme';
const scope_id = 'login-work';
const at = { project_id, scope_id };
const model: Actor = { type: 'model', id: 'agent' };
const confirmed = allConfirmed;

for (const backend of backends) {
  describe(`an interrupted session bound to a workstream, on ${backend.name}`, () => {
    let opened: OpenedStore;
    let deps: AppDeps;
    let workspace: string;

    beforeEach(async () => {
      opened = await backend.open();
      deps = { store: opened.store, clock: systemClock };
      await deps.store.createProject(project_id);
      workspace = mkdtempSync(join(tmpdir(), 'baton-interrupt-'));
      writeFileSync(join(workspace, 'login.ts'), 'export {}\n');
      await commitFirstRevision(deps, at);
    });
    afterEach(async () => {
      await opened.dispose();
      rmSync(workspace, { recursive: true, force: true });
    });

    async function start(session: Record<string, unknown> = {}) {
      return work.startSession(deps, project_id, {
        session_id: 's',
        workspace,
        work_mode: 'managed',
        scope_id,
        ...session,
      });
    }

    /** Two items: `fix` (its criterion passes once verified) and `docs`, which waits on it. */
    async function contract(extra: Record<string, unknown> = {}) {
      return work.createContract(
        deps,
        project_id,
        {
          session_id: 's',
          contract_id: 'fix-login',
          objective: 'Fix the login redirect',
          criteria: [
            {
              criterion_id: 'source-exists',
              statement: 'login.ts exists',
              kind: { type: 'file_exists', path: 'login.ts' },
            },
            {
              criterion_id: 'notes-exist',
              statement: 'NOTES.md exists',
              kind: { type: 'file_exists', path: 'NOTES.md' },
            },
          ],
          items: [
            { item_id: 'fix', title: 'Fix the redirect', criterion_ids: ['source-exists'] },
            {
              item_id: 'docs',
              title: 'Write the notes',
              instructions: 'Explain the redirect in NOTES.md',
              dependencies: ['fix'],
              criterion_ids: ['notes-exist'],
            },
          ],
          ...extra,
        },
        model,
      );
    }

    async function move(item_id: string, ...path: ('running' | 'ready_for_verification')[]) {
      for (const to of path) {
        await work.transitionItem(deps, project_id, { session_id: 's', revision: 1, item_id, to }, model);
      }
    }

    async function scopeHead() {
      return (await deps.store.getStream({ ...at, kind: 'scope' })).head;
    }

    async function end(status: string, reason?: string, on: AppDeps = deps) {
      return work.endSession(on, project_id, { session_id: 's', status, ...(reason ? { reason } : {}) });
    }

    it('prepares a Handoff whose statements are the contract as the ledger holds it, which whoever continues can Continue, commit and accept', async () => {
      await start();
      await contract();
      await move('fix', 'running', 'ready_for_verification');
      await verifyWork(deps, project_id, { session_id: 's' });
      await move('docs', 'running');

      const ended = await end('max_turns', 'ran out of turns');
      const terminal = ended.projection?.terminal;
      expect(terminal?.status).toBe('max_turns');
      const handoff = terminal?.handoff;
      expect(handoff).toMatchObject({ scope_id, base_revision: 1 });
      expect(ended.warnings.map((warning) => warning.code)).not.toContain('handoff_not_prepared');

      // The boundary is in the workstream's history, with the verdicts it cites.
      const continuity = await readContinuity(deps, at);
      expect(continuity.counts['handoff-boundary']).toBe(2);
      expect(continuity.timeline.at(-1)).toMatchObject({
        kind: 'handoff-boundary',
        source_ref: handoff!.boundary_ref,
        status: 'continue',
        summary: 'Fix the login redirect',
        // Written by Baton for this session: the timeline names it, so a person can open it.
        session_id: 's',
      });
      // A boundary a caller stored names no session, whatever its attribution says.
      expect(continuity.timeline[0]).not.toHaveProperty('session_id');
      // Nothing is committed by the runtime: the head is still revision 1.
      expect(continuity.current?.revision).toBe(1);

      const resolution = await continueHandoff(deps, {
        ...at,
        selection: { prepared: handoff!.prepared_digest },
      });
      expect(resolution.evidence).toBe('available');
      const { statements, next_action, omissions } = resolution.handoff;
      for (const statement of [...statements, next_action]) {
        expect(statement.citations[0]).toEqual(handoff!.boundary_ref);
      }
      expect(statements[0]).toMatchObject({ basis: 'declared' });
      expect(statements[0]!.text).toBe(
        'Managed session s ended max_turns (ran out of turns) with contract fix-login revision 1 active: 1 of 2 items succeeded or skipped, 1 of 2 required criteria passed.',
      );
      expect(statements.map((statement) => statement.text)).toEqual(
        expect.arrayContaining([
          'Item fix "Fix the redirect": succeeded, owner parent_agent',
          'Item docs "Write the notes": running, owner parent_agent',
          'Criterion notes-exist (required): failed: NOTES.md does not exist',
        ]),
      );
      const passed = statements.find((statement) => statement.text.startsWith('Criterion source-exists'))!;
      expect(passed.text).toMatch(/^Criterion source-exists \(required\): passed/);
      expect(passed.basis).toBe('verified');
      const ids = interruptionSourceIds({
        session_id: 's',
        contract_id: 'fix-login',
        head: ended.position - 1,
        status: 'max_turns',
        reason: 'ran out of turns',
      });
      expect(passed.citations[1]).toMatchObject({ scope_id, source_id: ids.verdicts });
      expect(handoff!.boundary_ref.source_id).toBe(ids.boundary);
      expect(next_action.text).toBe(
        'Resume item docs "Write the notes" of contract fix-login revision 1 in managed session s (now running). Its instructions: Explain the redirect in NOTES.md',
      );
      expect(omissions).toEqual([]);

      // The session list shows where the handoff is.
      const listed = (await listSessions(deps, project_id)).sessions.find(
        (session) => session.session_id === 's',
      );
      expect(listed?.terminal?.handoff).toEqual(handoff);

      // Whoever continues publishes it, then accepts the revision it became.
      const revision = await commitHandoff(deps, {
        ...at,
        prepared: handoff!.prepared_digest,
        expected_head: handoff!.base_revision,
      });
      expect(revision.revision).toBe(2);
      const receipt = await acknowledgeHandoff(deps, {
        ...at,
        source_id: 'receipt-2',
        target: { exact: 2 },
        status: 'accepted',
        receiver_checks: confirmed,
      });
      expect(receipt.record.evidence).toBe('available');
    });

    it('ends once: the same end again writes nothing more, in the session or the workstream', async () => {
      await start();
      await contract();
      const first = await end('aborted', 'the person stopped it');
      const scope = await scopeHead();
      const again = await end('aborted', 'the person stopped it');
      expect(again.position).toBe(first.position);
      expect(again.projection?.terminal).toEqual(first.projection?.terminal);
      expect(await scopeHead()).toBe(scope);
      // The contract had no verdicts and no item had begun: the next action starts the first.
      const resolution = await continueHandoff(deps, {
        ...at,
        selection: { prepared: first.projection!.terminal!.handoff!.prepared_digest },
      });
      expect(resolution.handoff.next_action.text).toBe(
        'Start item fix "Fix the redirect" of contract fix-login revision 1 in managed session s (now ready).',
      );
      expect(resolution.handoff.statements[0]!.text).toContain('ended aborted (the person stopped it)');
      expect(resolution.handoff.statements.at(-1)).toMatchObject({
        text: 'Criterion notes-exist (required): not verified yet.',
        basis: 'declared',
      });
    });

    it('asks whoever continues to confirm a contract that waits for input', async () => {
      await start();
      await contract({
        assumptions: [{ assumption_id: 'browser', text: 'Only Firefox loops', requires_confirmation: true }],
      });
      const ended = await end('failed', 'the model refused');
      const resolution = await continueHandoff(deps, {
        ...at,
        selection: { prepared: ended.projection!.terminal!.handoff!.prepared_digest },
      });
      expect(resolution.handoff.next_action.text).toBe(
        'Confirm contract fix-login revision 1 in managed session s, answering its open assumptions (browser: Only Firefox loops); work resumes once it is confirmed.',
      );
    });

    it('prepares nothing for a session that is not bound or has no live contract', async () => {
      const head = await scopeHead();
      // Not bound.
      await start({ session_id: 'free', scope_id: undefined });
      await work.createContract(
        deps,
        project_id,
        {
          session_id: 'free',
          contract_id: 'c',
          objective: 'x',
          items: [{ item_id: 'i', title: 'I', required: false }],
        },
        model,
      );
      const free = await work.endSession(deps, project_id, { session_id: 'free', status: 'aborted' });
      expect(free.projection?.terminal).toEqual({ status: 'aborted', position: free.position });
      // Bound, with no contract.
      await start({ session_id: 'empty' });
      await work.endSession(deps, project_id, { session_id: 'empty', status: 'max_turns' });
      // Bound, its contract ended (the stop gate gave up on it): its outcome is the record.
      await start();
      await contract();
      await stopGate(deps, project_id, { session_id: 's', max_blocks: 1 });
      await stopGate(deps, project_id, { session_id: 's', max_blocks: 1 });
      const unverified = await work.readWork(deps, project_id, { session_id: 's' });
      expect(unverified.projection?.contracts[0]?.status).toBe('unverified');
      const afterOutcome = await scopeHead();
      expect(afterOutcome).toBeGreaterThan(head);
      const ended = await end('aborted');
      expect(ended.projection?.terminal?.handoff).toBeUndefined();
      expect(await scopeHead()).toBe(afterOutcome);
      expect((await readContinuity(deps, at)).counts['handoff-boundary']).toBe(1);
    });

    it('keeps the end when the handoff is refused or the process dies preparing it; the same end again prepares it', async () => {
      await start();
      await contract();
      const sessionHead = (await work.readWork(deps, project_id, { session_id: 's' })).position;
      // A refusal: the end stands without a handoff, and says why.
      const refusing = overriding(deps.store, {
        putPrepared: () =>
          Promise.reject(new BatonError('payload_too_large', 'prepared handoff is too large')),
      });
      const ended = await end('aborted', 'stopped', { ...deps, store: refusing });
      expect(ended.position).toBe(sessionHead + 1);
      expect(ended.terminal).toEqual({ status: 'aborted', position: ended.position });
      const warning = ended.warnings.find((candidate) => candidate.code === 'handoff_not_prepared');
      expect(warning?.contract_id).toBe('fix-login');
      expect(warning?.message).toContain('prepared handoff is too large');
      expect(warning?.message).toContain('ending the session aborted again prepares it');
      // The process dies while preparing it on the next try: the end still stands, nothing more.
      const crashing = overriding(deps.store, {
        putPrepared: () => Promise.reject(new Error('the process died here')),
      });
      await expect(end('aborted', 'stopped', { ...deps, store: crashing })).rejects.toThrow(
        'the process died here',
      );
      expect((await work.readWork(deps, project_id, { session_id: 's' })).terminal?.handoff).toBeUndefined();
      // The same end again prepares it, once; another end is still refused and writes nothing.
      const again = await end('aborted', 'stopped');
      expect(again.terminal).toMatchObject({ status: 'aborted', position: ended.position });
      expect(again.terminal?.handoff?.scope_id).toBe(scope_id);
      expect(again.warnings.map((candidate) => candidate.code)).not.toContain('handoff_not_prepared');
      const scope = await scopeHead();
      expect((await end('aborted', 'stopped')).terminal).toEqual(again.terminal);
      await expectBatonError(end('failed'), 'conflict', { rule: 'session_ended' });
      expect(await scopeHead()).toBe(scope);
    });

    it('prepares one handoff when two ends race, and a refused different end writes nothing in the workstream', async () => {
      await start();
      await contract();
      const head = await scopeHead();
      const results = await Promise.allSettled([
        end('max_turns', 'out of turns'),
        end('max_turns', 'out of turns'),
        end('failed', 'crashed'),
      ]);
      const ok = results.filter((result) => result.status === 'fulfilled').map((result) => result.value);
      const refused = results.filter((result) => result.status === 'rejected');
      expect(ok.length + refused.length).toBe(3);
      const read = await work.readWork(deps, project_id, { session_id: 's' });
      const winner = read.terminal!;
      expect(winner.handoff).toBeDefined();
      // One boundary for the end that stands; the refused end stored none.
      const continuity = await readContinuity(deps, at);
      const boundaries = continuity.timeline.filter((event) => event.kind === 'handoff-boundary');
      expect(boundaries.map((event) => event.source_ref)).toEqual([
        expect.objectContaining({ source_id: 'boundary-1' }),
        winner.handoff!.boundary_ref,
      ]);
      expect(await scopeHead()).toBe(head + 2);
    });

    it("keeps the runtime's boundary and verdicts ids from callers", async () => {
      const ids = interruptionSourceIds({
        session_id: 's',
        contract_id: 'c',
        head: 3,
        status: 'aborted',
        reason: '',
      });
      const head = await scopeHead();
      for (const source_id of [ids.boundary, ids.verdicts]) {
        await expectBatonError(
          captureSource(deps, { ...at, source_id, kind: 'note', content: 'x' }),
          'invalid_input',
        );
        const error = await expectBatonError(
          handoffCurrentWork(deps, {
            ...at,
            source_id,
            objective: 'forged',
            disposition: 'continue',
            next_action: { text: 'x', basis: 'declared' },
          }),
          'invalid_input',
        );
        expect(error.message).toContain('managed-work runtime');
      }
      expect(await scopeHead()).toBe(head);
      expect(
        (await collect(deps.store.readStream({ ...at, kind: 'scope' }))).some((entry) =>
          entry.source_id?.startsWith('managed-work:'),
        ),
      ).toBe(false);
    });
  });
}

describe('the boundary of an interrupted run', () => {
  const verdicts: SourceRef = { scope_id, source_id: 'v', digest: `sha256:${'1'.repeat(64)}` };
  const many = 100;
  const contract = {
    contract_id: 'big',
    revision: 3,
    status: 'active',
    status_reason: '',
    branch: false,
    contract: {
      contract_id: 'big',
      revision: 3,
      source_entry_id: '',
      objective: '  ',
      constraints: [],
      assumptions: [],
      criteria: [
        { criterion_id: 'k', statement: 'k', kind: { type: 'semantic', statement: 'k' }, required: false },
      ],
      items: Array.from({ length: many }, (_, index) => ({
        item_id: `i${index}`,
        title: `Item ${index}`,
        instructions: '',
        dependencies: [],
        owner: { type: 'worker' },
        required: true,
        readonly: false,
        path_claims: [],
        criterion_ids: [],
        capabilities: [],
      })),
    },
    items: Array.from({ length: many }, (_, index) => ({
      item_id: `i${index}`,
      status: index === 70 ? 'blocked' : 'succeeded',
      attempt: 1,
      owner: { type: 'worker' },
      child_session_id: null,
      started_at: null,
      finished_at: null,
      blocker: index === 70 ? 'needs a key' : null,
      evidence: [],
      evidence_count: index === 0 ? 2 : 0,
      evidence_availability: [],
    })),
    criteria: [{ criterion_id: 'k', result: null, recorded_position: null, stale: false }],
    created_position: 1,
    updated_position: 9,
    events: 9,
  } as unknown as ContractProjection;

  it('states a stale verdict as the verdicts source records it: unknown, never the old pass', () => {
    const small = {
      ...contract,
      items: contract.items.slice(0, 1),
      contract: { ...contract.contract, items: contract.contract.items.slice(0, 1) },
      criteria: [
        {
          criterion_id: 'k',
          result: { verdict: 'passed', reason: 'exit code 0', evidence: [], checkpoint: 'c1' },
          recorded_position: 3,
          stale: true,
        },
      ],
    } as unknown as ContractProjection;
    const boundary = interruptedBoundary({
      session_id: 's',
      status: 'aborted',
      reason: '',
      contract: small,
      verdicts,
    });
    expect(boundary.current_state.at(-1)).toEqual({
      text: 'Criterion k (optional): unknown: its passed verdict was taken before the workspace last changed: exit code 0',
      basis: 'verified',
      evidence: [verdicts],
    });
  });

  it('keeps 64 statements, says what did not fit, and names the blocked item next', () => {
    const boundary = interruptedBoundary({
      session_id: 's',
      status: 'aborted',
      reason: '',
      contract,
      verdicts,
    });
    expect(boundary.objective).toBe('contract big');
    expect(boundary.current_state).toHaveLength(64);
    expect(boundary.current_state[0]!.text).toBe(
      'Managed session s ended aborted with contract big revision 3 active: 99 of 100 items succeeded or skipped, 0 of 0 required criteria passed.',
    );
    expect(boundary.current_state[1]!.text).toBe(
      'Item i0 "Item 0": succeeded, owner worker; 2 evidence references in the session',
    );
    expect(boundary.omissions).toEqual([
      'The evidence attached to the items (files, commands, tool results) stays in managed session s; it is not copied into the workstream.',
      '37 items and 1 criteria did not fit this handoff; managed session s holds them all.',
    ]);
    expect(boundary.next_action.text).toBe(
      'Unblock item i70 "Item 70" of contract big revision 3 in managed session s (now blocked: needs a key).',
    );
    expect(boundary.disposition).toBe('continue');
    expect(boundary.attribution).toEqual({ agent: 'baton-runtime', session: 's' });
  });
});
