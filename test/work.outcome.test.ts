/**
 * Where the two specifications meet: a managed session bound to a workstream is a
 * completion-aware integration. Each contract that ends records a Task Outcome in the
 * workstream whose checks are the criterion verdicts (docs/managed-work.md, "Bound to a
 * workstream"). On every backend.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acknowledgeHandoff, readContinuity, recordTaskOutcome } from '../src/app/continuity.ts';
import type { AppDeps } from '../src/app/deps.ts';
import { stopGate } from '../src/app/gate.ts';
import { captureSource, retractSource } from '../src/app/sources.ts';
import { verifyWork } from '../src/app/verify.ts';
import * as work from '../src/app/work.ts';
import { systemClock } from '../src/core/clock.ts';
import type { SourceRef } from '../src/core/ledger/source.ts';
import type { Actor } from '../src/core/work/model.ts';
import { contractOutcomeSourceIds } from '../src/core/work/outcome.ts';
import { collect, expectBatonError } from '../src/store/conformance/store.conformance.ts';
import { backends, overriding, type OpenedStore } from './helpers/stores.ts';
import { allConfirmed, commitFirstRevision } from './helpers/workstream.ts';

const project_id = 'acme';
const scope_id = 'login-work';
const at = { project_id, scope_id };
const model: Actor = { type: 'model', id: 'agent' };
const confirmed = allConfirmed;

for (const backend of backends) {
  describe(`a managed session bound to a workstream, on ${backend.name}`, () => {
    let opened: OpenedStore;
    let deps: AppDeps;
    let workspace: string;
    let accepted: SourceRef;

    beforeEach(async () => {
      opened = await backend.open();
      deps = { store: opened.store, clock: systemClock };
      await deps.store.createProject(project_id);
      workspace = mkdtempSync(join(tmpdir(), 'baton-outcome-'));
      writeFileSync(join(workspace, 'login.ts'), 'export {}\n');
      // Revision 1 of the workstream, accepted by the agent that will run the session.
      await commitFirstRevision(deps, at);
      accepted = (
        await acknowledgeHandoff(deps, {
          ...at,
          source_id: 'receipt-1',
          target: { exact: 1 },
          status: 'accepted',
          receiver_checks: confirmed,
          receiver: 'agent-b',
        })
      ).receipt.source_ref;
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
        handoff_receipt_ref: accepted,
        ...session,
      });
    }

    async function contract(criteria: { criterion_id: string; path: string; required?: boolean }[]) {
      return work.createContract(
        deps,
        project_id,
        {
          session_id: 's',
          contract_id: 'fix-login',
          objective: 'Fix the login redirect',
          criteria: criteria.map(({ criterion_id, path, required }) => ({
            criterion_id,
            statement: `${path} exists`,
            kind: { type: 'file_exists', path },
            ...(required === undefined ? {} : { required }),
          })),
          items: [{ item_id: 'fix', title: 'Fix it', criterion_ids: criteria.map((c) => c.criterion_id) }],
        },
        model,
      );
    }

    async function finish() {
      for (const to of ['running', 'ready_for_verification'] as const) {
        await work.transitionItem(
          deps,
          project_id,
          { session_id: 's', revision: 1, item_id: 'fix', to },
          model,
        );
      }
    }

    async function scopeSources() {
      return (await collect(deps.store.readStream({ ...at, kind: 'scope' }))).filter(
        (entry) => entry.type === 'source',
      );
    }

    it('records a covering Task Outcome whose checks are the verdicts, verified by a verdicts source, when the contract completes', async () => {
      await start();
      await contract([
        { criterion_id: 'source-exists', path: 'login.ts' },
        { criterion_id: 'notes-exist', path: 'NOTES.md', required: false },
      ]);
      expect((await readContinuity(deps, at)).outcome_state).toBe('awaiting_outcome');
      await finish();
      const report = await verifyWork(deps, project_id, { session_id: 's' });
      expect(report.snapshot.projection?.contracts[0]?.status).toBe('completed');

      const continuity = await readContinuity(deps, at);
      expect(continuity.outcome_state).toBe('covered');
      const ids = contractOutcomeSourceIds('s', 'fix-login');
      expect(continuity.covering_outcome_ref?.source_id).toBe(ids.outcome);
      expect(continuity.timeline.at(-1)).toMatchObject({ kind: 'task-outcome', session_id: 's' });
      const outcome = (await deps.store.readSource(project_id, continuity.covering_outcome_ref!)).content as {
        status: string;
        checks: { name: string; status: string; basis: string; evidence: SourceRef[] }[];
        handoff_receipt_ref: SourceRef;
        summary: string;
        remaining_work: string[];
      };
      expect(outcome.status).toBe('succeeded');
      expect(outcome.handoff_receipt_ref).toEqual(accepted);
      expect(outcome.summary).toContain('1 of 1 required criteria passed');
      expect(outcome.remaining_work).toEqual([]);
      const verdicts = (await scopeSources()).find((entry) => entry.source_id === ids.verdicts)!;
      const verdictsRef = { scope_id, source_id: ids.verdicts, digest: verdicts.digest };
      expect(outcome.checks).toEqual([
        { name: 'source-exists', status: 'passed', basis: 'verified', evidence: [verdictsRef] },
        { name: 'notes-exist', status: 'failed', basis: 'verified', evidence: [verdictsRef] },
      ]);
      expect(verdicts.metadata).toEqual({ kind: 'managed-work-verdicts' });
      expect(verdicts.content).toMatchObject({
        session_id: 's',
        contract_id: 'fix-login',
        status: 'completed',
        criteria: [
          { criterion_id: 'source-exists', required: true, status: 'passed' },
          { criterion_id: 'notes-exist', required: false, status: 'failed' },
        ],
      });
    });

    it('records an ended contract the stop gate gave up on as unknown, never as a success, and writes it once', async () => {
      await start();
      await contract([{ criterion_id: 'source-exists', path: 'login.ts' }]);
      await stopGate(deps, project_id, { session_id: 's', max_blocks: 1 });
      const exhausted = await stopGate(deps, project_id, { session_id: 's', max_blocks: 1 });
      expect(exhausted.exhausted?.to).toBe('unverified');
      const continuity = await readContinuity(deps, at);
      expect(continuity.outcome_state).toBe('covered');
      const outcome = (await deps.store.readSource(project_id, continuity.covering_outcome_ref!)).content as {
        status: string;
        checks: { status: string; basis: string; evidence: unknown[] }[];
        remaining_work: string[];
      };
      expect(outcome.status).toBe('unknown');
      expect(outcome.checks).toEqual([
        { name: 'source-exists', status: 'unknown', basis: 'declared', evidence: [] },
      ]);
      expect(outcome.remaining_work).toEqual(['fix (ready): Fix it']);
      // Reopening the session reconciles again: the same ids and content, nothing new written.
      const before = (await scopeSources()).length;
      await start();
      await work.reconcileWork(deps, project_id, { session_id: 's' });
      expect((await scopeSources()).length).toBe(before);
    });

    it('writes nothing to any workstream for a session that is not bound', async () => {
      await start({ scope_id: undefined, handoff_receipt_ref: undefined });
      const before = (await scopeSources()).length;
      await contract([{ criterion_id: 'source-exists', path: 'login.ts' }]);
      await finish();
      await verifyWork(deps, project_id, { session_id: 's' });
      expect((await scopeSources()).length).toBe(before);
      expect((await readContinuity(deps, at)).outcome_state).toBe('awaiting_outcome');
    });

    it('binds without a receipt: the outcome is recorded and covers nothing', async () => {
      await start({ handoff_receipt_ref: undefined });
      await contract([{ criterion_id: 'source-exists', path: 'login.ts' }]);
      await finish();
      await verifyWork(deps, project_id, { session_id: 's' });
      const continuity = await readContinuity(deps, at);
      expect(continuity.counts['task-outcome']).toBe(1);
      expect(continuity.outcome_state).toBe('awaiting_outcome');
    });

    it('refuses a receipt it could never cover when the session starts, writing nothing', async () => {
      const refused = async (session: Record<string, unknown>) => {
        const error = await expectBatonError(start(session), 'invalid_input');
        await expectBatonError(
          deps.store.getStream({ project_id, kind: 'session', session_id: 's' }),
          'not_found',
        );
        return error;
      };
      expect((await refused({ scope_id: undefined })).message).toContain('needs the scope_id');
      // Another workstream's receipt.
      await refused({ scope_id: 'other-work' });
      // A receipt that does not exist.
      await refused({ handoff_receipt_ref: { ...accepted, digest: `sha256:${'0'.repeat(64)}` } });
      // A receipt that is not accepted.
      const clarification = await acknowledgeHandoff(deps, {
        ...at,
        source_id: 'receipt-2',
        target: { exact: 1 },
        status: 'needs_clarification',
        reason: 'Which browser loops?',
        receiver_checks: confirmed,
      });
      expect((await refused({ handoff_receipt_ref: clarification.receipt.source_ref })).message).toContain(
        'only an accepted receipt can be covered',
      );
      // Not a receipt at all.
      const note = await captureSource(deps, { ...at, source_id: 'note', kind: 'note', content: 'x' });
      expect((await refused({ handoff_receipt_ref: note.source_ref })).message).toContain(
        'no valid handoff receipt',
      );
    });

    it('keeps the work change when the outcome is refused, and warns again on each reconcile while it stays refused', async () => {
      await start();
      await contract([{ criterion_id: 'source-exists', path: 'login.ts' }]);
      await finish();
      // Between the contract's end and its outcome, the receipt it covers is not readable.
      await retractSource(deps, { ...at, source_id: 'receipt-1', reason: 'wrong receiver' });
      const report = await verifyWork(deps, project_id, { session_id: 's' });
      expect(report.snapshot.projection?.contracts[0]?.status).toBe('completed');
      expect(report.snapshot.warnings).toContainEqual(
        expect.objectContaining({ code: 'outcome_not_recorded', contract_id: 'fix-login' }),
      );
      expect((await readContinuity(deps, at)).counts['task-outcome']).toBe(0);
      // A crash between the two writes leaves the same state: the reconcile on reopen catches up.
      const again = await work.reconcileWork(deps, project_id, { session_id: 's' });
      expect(again.warnings.map((warning) => warning.code)).toContain('outcome_not_recorded');
    });

    it('records the outcome on reconcile when a crash came between the contract ending and its outcome', async () => {
      await start();
      await contract([{ criterion_id: 'source-exists', path: 'login.ts' }]);
      await finish();
      const crashing = overriding(deps.store, {
        captureSource: () => Promise.reject(new Error('the process died here')),
      });
      await expect(verifyWork({ ...deps, store: crashing }, project_id, { session_id: 's' })).rejects.toThrow(
        'the process died here',
      );
      expect(
        (await work.readWork(deps, project_id, { session_id: 's' })).projection?.contracts[0]?.status,
      ).toBe('completed');
      expect((await readContinuity(deps, at)).counts['task-outcome']).toBe(0);
      await start();
      const continuity = await readContinuity(deps, at);
      expect(continuity.outcome_state).toBe('covered');
    });

    it("keeps Baton's own source ids and the verdicts kind from callers", async () => {
      const ids = contractOutcomeSourceIds('s', 'fix-login');
      const head = (await deps.store.getStream({ ...at, kind: 'scope' })).head;
      for (const source_id of [ids.outcome, ids.verdicts]) {
        const error = await expectBatonError(
          captureSource(deps, { ...at, source_id, kind: 'note', content: 'x' }),
          'invalid_input',
        );
        expect(error.message).toContain('managed-work runtime');
        await expectBatonError(
          recordTaskOutcome(deps, {
            ...at,
            source_id,
            objective: 'x',
            status: 'succeeded',
            summary: 'claimed',
            handoff_receipt_ref: accepted,
          }),
          'invalid_input',
        );
      }
      await expectBatonError(
        captureSource(deps, { ...at, source_id: 'forged', kind: 'managed-work-verdicts', content: {} }),
        'invalid_input',
      );
      expect((await deps.store.getStream({ ...at, kind: 'scope' })).head).toBe(head);
    });
  });
}
