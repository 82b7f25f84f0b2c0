/**
 * The continuity operations through src/app, on every backend. Test titles that start with
 * "Acceptance:" name a row of the continuity spec's Acceptance table.
 */
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  acknowledgeHandoff,
  createWorkContract,
  handoffCurrentWork,
  readContinuity,
  recordTaskOutcome,
} from '../src/app/continuity.ts';
import type { AppDeps } from '../src/app/deps.ts';
import { listExperienceCandidates, prepareContext, reviewExperience } from '../src/app/experience.ts';
import { commitHandoff, continueHandoff } from '../src/app/handoffs.ts';
import { continuityMetrics } from '../src/app/metrics.ts';
import { readReport, readWorkstreamReport } from '../src/app/report.ts';
import { captureSource, retractSource } from '../src/app/sources.ts';
import { systemClock } from '../src/core/clock.ts';
import { reviewSourceId } from '../src/core/continuity/experience.ts';
import { projectContinuity } from '../src/core/continuity/projection.ts';
import { workstreamMarkdown } from '../src/core/handoff/report.ts';
import { entryBody, ledgerLimits, type Entry } from '../src/core/ledger/entry.ts';
import type { SourceRef } from '../src/core/ledger/source.ts';
import { collect, expectBatonError } from '../src/store/conformance/store.conformance.ts';
import { backends, overriding, type OpenedStore } from './helpers/stores.ts';

const project_id = 'acme';
const scope_id = 'auto-refresh';
const at = { project_id, scope_id };
const confirmed = {
  live_workspace: 'confirmed',
  capability: 'confirmed',
  authorization: 'confirmed',
} as const;

for (const backend of backends) {
  describe(`continuity on ${backend.name}`, () => {
    let opened: OpenedStore;
    let deps: AppDeps;
    let log: SourceRef;

    beforeEach(async () => {
      opened = await backend.open();
      deps = { store: opened.store, clock: systemClock };
      await deps.store.createProject(project_id);
      log = (
        await captureSource(deps, {
          ...at,
          source_id: 'ci-log',
          kind: 'test-log',
          content: 'FAIL switching test',
        })
      ).source_ref;
    });
    afterEach(() => opened.dispose());

    function boundary(source_id: string, evidence: SourceRef[] = [log]) {
      return {
        ...at,
        source_id,
        objective: 'Add safe auto-refresh to Handoff Report',
        current_state: [
          { text: 'Automatic polling is implemented', basis: 'declared' },
          { text: 'The frozen-selection switching test still fails', basis: 'verified', evidence },
        ],
        disposition: 'continue',
        next_action: { text: 'Fix the frozen selection comparison', basis: 'declared' },
        omissions: ['Remote CI is unavailable in the current environment'],
        attribution: { agent: 'agent-a' },
      };
    }

    /** Prepare from a boundary and commit it; returns the exact revision. */
    async function send(source_id: string): Promise<{ revision: number; digest: string }> {
      const prepared = await handoffCurrentWork(deps, boundary(source_id));
      const revision = await commitHandoff(deps, {
        ...at,
        prepared: prepared.digest,
        expected_head: prepared.prepared_handoff.base_revision,
      });
      return { revision: revision.revision, digest: revision.prepared_digest };
    }

    async function accept(source_id: string, revision: number) {
      return acknowledgeHandoff(deps, {
        ...at,
        source_id,
        target: { exact: revision },
        status: 'accepted',
        receiver_checks: confirmed,
        receiver: 'agent-b',
      });
    }

    function outcome(source_id: string, handoff_receipt_ref?: SourceRef, status = 'partial') {
      return {
        ...at,
        source_id,
        objective: 'Add safe auto-refresh',
        status,
        summary: 'Auto-refresh and draft protection are complete; docs build has no final result',
        ...(handoff_receipt_ref ? { handoff_receipt_ref } : {}),
        checks: [
          { name: 'focused tests', status: 'passed', basis: 'verified', evidence: [log] },
          { name: 'make docs-test', status: 'timed_out', basis: 'declared' },
          { name: 'remote CI', status: 'unavailable', basis: 'declared' },
        ],
        remaining_work: ['Run make docs-test again when the docs environment is healthy'],
      };
    }

    describe('create_work_contract', () => {
      it('Acceptance: Human -> Agent — the contract keeps objective, scope, criteria and authority notes', async () => {
        const stored = await createWorkContract(deps, {
          ...at,
          source_id: 'contract-1',
          objective: 'Add five-second auto-refresh to Handoff Report',
          facts: [
            { text: 'The test command is npm test', basis: 'verified', evidence: [log] },
            { text: 'Polling cost is acceptable', basis: 'declared' },
          ],
          in_scope: ['frontend polling', 'draft protection'],
          exclusions: ['Handoff Core', 'a general scheduler'],
          completion_criteria: ['relevant tests pass', 'no overwritten draft'],
          authorization_notes: ['changes in this repository; not production deployment'],
          open_questions: [],
        });
        expect(stored.trust).toBe('untrusted_input');
        expect(stored.receipt.source_ref.scope_id).toBe(scope_id);
        const context = await prepareContext(deps, at);
        expect(context.work_contract).toEqual({
          source_ref: stored.receipt.source_ref,
          record: stored.record,
          trust: 'untrusted_input',
        });
        expect(context.work_contract?.record).toMatchObject({
          objective: 'Add five-second auto-refresh to Handoff Report',
          exclusions: ['Handoff Core', 'a general scheduler'],
          completion_criteria: ['relevant tests pass', 'no overwritten draft'],
          authorization_notes: ['changes in this repository; not production deployment'],
        });
      });

      const bad: [string, (evidence: SourceRef) => Record<string, unknown>, string][] = [
        [
          'a declared claim with evidence',
          (evidence) => ({ facts: [{ text: 'x', basis: 'declared', evidence: [evidence] }] }),
          'facts.0.evidence',
        ],
        [
          'a verified claim without evidence',
          () => ({ facts: [{ text: 'x', basis: 'verified' }] }),
          'facts.0.evidence',
        ],
        ['no completion criteria', () => ({ completion_criteria: [] }), 'completion_criteria'],
        ['an empty objective', () => ({ objective: ' ' }), 'objective'],
        ['an unknown field', () => ({ priority: 'high' }), ''],
      ];
      for (const [what, change, path] of bad) {
        it(`refuses ${what}, naming ${path || 'it'}, and stores nothing`, async () => {
          const input = {
            ...at,
            source_id: 'contract-1',
            objective: 'o',
            completion_criteria: ['c'],
            ...change(log),
          };
          const error = await expectBatonError(createWorkContract(deps, input), 'invalid_input');
          expect((error.data.issues as { path: string }[])[0]!.path).toBe(path);
          expect((await deps.store.getStream({ ...at, kind: 'scope' })).head).toBe(1);
        });
      }

      it('refuses a citation into another scope, and evidence that cannot be read', async () => {
        const other = await captureSource(deps, {
          project_id,
          scope_id: 'other',
          source_id: 'x',
          content: 'x',
        });
        const input = (evidence: SourceRef) => ({
          ...at,
          source_id: 'contract-1',
          objective: 'o',
          completion_criteria: ['c'],
          facts: [{ text: 'f', basis: 'verified', evidence: [evidence] }],
        });
        const foreign = await expectBatonError(
          createWorkContract(deps, input(other.source_ref)),
          'invalid_input',
        );
        expect(foreign.message).toContain('must be in scope auto-refresh');
        await retractSource(deps, { ...at, source_id: 'ci-log', reason: 'secret' });
        const retracted = await expectBatonError(createWorkContract(deps, input(log)), 'invalid_input');
        expect(retracted.message).toContain('retracted');
      });
    });

    describe('handoff_current_work', () => {
      it('Acceptance: High-level handoff — one operation stores the boundary and returns an uncommitted Prepared Handoff', async () => {
        const result = await handoffCurrentWork(deps, boundary('boundary-1'));
        expect(await deps.store.revisionHead(at)).toBe(0);
        expect(result.trust).toBe('untrusted_input');
        const boundaryRef = result.boundary_receipt.source_ref;
        const handoff = result.prepared_handoff;
        expect(handoff.statements.map((s) => s.citations)).toEqual([[boundaryRef], [boundaryRef, log]]);
        expect(handoff.next_action.citations).toEqual([boundaryRef]);
        expect(handoff.omissions).toEqual(['Remote CI is unavailable in the current environment']);
        const stored = await deps.store.readSource(project_id, boundaryRef);
        expect(stored.metadata).toEqual({ kind: 'handoff-boundary' });
      });

      it('Acceptance: Retryable send — a retry reuses the same source_id and the same Prepared Handoff', async () => {
        const first = await handoffCurrentWork(deps, boundary('send-1'));
        const retry = await handoffCurrentWork(deps, boundary('send-1'));
        expect(retry.boundary_receipt).toEqual(first.boundary_receipt);
        expect(retry.digest).toBe(first.digest);
        const input = { ...at, prepared: first.digest, expected_head: 0 };
        const committed = await commitHandoff(deps, input);
        expect(await commitHandoff(deps, input)).toEqual(committed);
        const stream = await collect(deps.store.readStream({ ...at, kind: 'scope' }));
        expect(stream.filter((e) => e.metadata?.kind === 'handoff-boundary').length).toBe(1);
      });

      it('finalizes a retry after the head moved against the new head, reusing the stored boundary', async () => {
        const first = await handoffCurrentWork(deps, boundary('send-1'));
        await send('b-other');
        // The spec: a Prepared Handoff's base is the committed head observed during finalization.
        const retry = await handoffCurrentWork(deps, boundary('send-1'));
        expect(retry.boundary_receipt).toEqual(first.boundary_receipt);
        expect(retry.prepared_handoff.base_revision).toBe(1);
        expect(retry.digest).not.toBe(first.digest);
        expect(retry.prepared_handoff.statements).toEqual(first.prepared_handoff.statements);
      });

      it('keeps the boundary when finalizing fails afterwards', async () => {
        await send('b-0');
        const stale = await handoffCurrentWork(deps, boundary('b-1'));
        await send('b-2');
        await expectBatonError(
          commitHandoff(deps, { ...at, prepared: stale.digest, expected_head: 1 }),
          'revision_conflict',
          { actual_head: 2 },
        );
        expect((await deps.store.readSource(project_id, stale.boundary_receipt.source_ref)).source_id).toBe(
          'b-1',
        );
      });

      it("names the stored boundary's receipt when finalizing fails after the capture", async () => {
        // A retraction lands between the boundary's capture and its finalization (a race).
        const store = deps.store;
        let raced = false;
        const racing = overriding(store, {
          async captureSource(...args) {
            const result = await store.captureSource(...args);
            if (!raced && (args[1].metadata as { kind?: string } | undefined)?.kind === 'handoff-boundary') {
              raced = true;
              await retractSource(deps, { ...at, source_id: 'ci-log', reason: 'leaked a key' });
            }
            return result;
          },
        });
        const error = await expectBatonError(
          handoffCurrentWork({ ...deps, store: racing }, boundary('b-race')),
          'invalid_input',
        );
        const receipt = error.data.boundary_receipt as { source_ref: SourceRef };
        expect(receipt.source_ref).toMatchObject({ scope_id, source_id: 'b-race' });
        const stored = await deps.store.readSource(project_id, receipt.source_ref);
        expect(stored.metadata).toEqual({ kind: 'handoff-boundary' });
        expect(stored.digest).toBe(receipt.source_ref.digest);
        expect(error.message).toContain('the boundary b-race is stored');
      });

      it('refuses a blocked boundary without its question, and two next actions, storing nothing', async () => {
        await expectBatonError(
          handoffCurrentWork(deps, { ...boundary('b'), disposition: 'blocked' }),
          'invalid_input',
        );
        await expectBatonError(
          handoffCurrentWork(deps, {
            ...boundary('b'),
            next_action: [boundary('b').next_action, boundary('b').next_action],
          }),
          'invalid_input',
        );
        await expectBatonError(
          handoffCurrentWork(deps, { ...boundary('b'), disposition: 'paused' }),
          'invalid_input',
        );
        expect((await deps.store.getStream({ ...at, kind: 'scope' })).head).toBe(1);
      });
    });

    describe('acknowledge_handoff', () => {
      it('rejects acknowledging latest and says to Continue first', async () => {
        await send('b-1');
        const error = await expectBatonError(
          acknowledgeHandoff(deps, {
            ...at,
            source_id: 'r',
            target: 'latest',
            status: 'accepted',
            receiver_checks: confirmed,
          }),
          'invalid_input',
        );
        expect(error.message).toContain('call continue_handoff first');
      });

      it('Acceptance: Human -> Human — a committed handoff read from Report produces a receipt for its exact revision', async () => {
        const { revision, digest } = await send('b-1');
        const report = await readWorkstreamReport(deps, at);
        expect(report.current?.revision).toBe(revision);
        const acknowledged = await accept('receipt-1', report.current!.revision);
        expect(acknowledged.record.target).toEqual({ kind: 'exact', revision, digest });
        expect(acknowledged.trust).toBe('untrusted_observation');
        expect(acknowledged.record.evidence).toBe('available');
        expect(acknowledged.record.citations_checked).toBe(4);
        // The stored receipt is the answer; the handoff itself was read with Continue.
        expect(Object.keys(acknowledged).sort()).toEqual(['receipt', 'record', 'trust']);
      });

      it('refuses a revision never committed, a malformed digest and a handoff of another scope, storing nothing', async () => {
        const { digest } = await send('b-1');
        const base = { ...at, source_id: 'r', status: 'accepted', receiver_checks: confirmed };
        await expectBatonError(acknowledgeHandoff(deps, { ...base, target: { exact: 2 } }), 'not_found');
        const malformed = await expectBatonError(
          acknowledgeHandoff(deps, { ...base, target: { prepared: 'sha256:nope' } }),
          'invalid_input',
        );
        expect((malformed.data.issues as { path: string }[])[0]!.path).toBe('target.prepared');
        const elsewhere = { ...at, scope_id: 'other-scope' };
        await expectBatonError(
          acknowledgeHandoff(deps, { ...base, ...elsewhere, target: { prepared: digest } }),
          'not_found',
        );
        expect((await readContinuity(deps, at)).counts['handoff-receipt']).toBe(0);
        expect((await readContinuity(deps, elsewhere)).counts['handoff-receipt']).toBe(0);
      });

      it('Acceptance: Evidence gate — accepted with one unavailable citation is rejected', async () => {
        await send('b-1');
        await retractSource(deps, { ...at, source_id: 'ci-log', reason: 'held a token' });
        const error = await expectBatonError(accept('r-1', 1), 'precondition_failed');
        expect(error.data.unavailable_citations).toEqual([
          { location: 'statements.1.citations.1', citation: log, reason: 'retracted' },
        ]);
        expect((await readContinuity(deps, at)).counts['handoff-receipt']).toBe(0);
      });

      it('answers an identical retry with the stored receipt even after a cited source was retracted', async () => {
        await send('b-1');
        const contractInput = {
          ...at,
          source_id: 'c-1',
          objective: 'Add safe auto-refresh',
          facts: [{ text: 'The switching test fails', basis: 'verified', evidence: [log] }],
          completion_criteria: ['the switching test passes'],
        };
        const contract = await createWorkContract(deps, contractInput);
        const accepted = await accept('r-1', 1);
        const declineInput = {
          ...at,
          source_id: 'r-2',
          target: { exact: 1 },
          status: 'declined',
          reason: 'not mine to take',
          receiver_checks: confirmed,
        } as const;
        const declined = await acknowledgeHandoff(deps, declineInput);
        const recorded = await recordTaskOutcome(deps, outcome('o-1', accepted.receipt.source_ref));
        await retractSource(deps, { ...at, source_id: 'ci-log', reason: 'held a token' });

        // The same requests again: answered as first stored, nothing new written.
        const before = (await readContinuity(deps, at)).counts;
        expect(await accept('r-1', 1)).toEqual(accepted);
        expect(await acknowledgeHandoff(deps, declineInput)).toEqual(declined);
        expect(await createWorkContract(deps, contractInput)).toEqual(contract);
        expect(await recordTaskOutcome(deps, outcome('o-1', accepted.receipt.source_ref))).toEqual(recorded);
        expect((await readContinuity(deps, at)).counts).toEqual(before);

        // A different request under a stored source_id is still refused as before.
        await expectBatonError(
          acknowledgeHandoff(deps, { ...declineInput, reason: 'another reason' }),
          'conflict',
        );
        await expectBatonError(acknowledgeHandoff(deps, { ...declineInput, source_id: 'r-1' }), 'conflict');
        await expectBatonError(accept('r-2', 1), 'precondition_failed');
        await expectBatonError(accept('r-3', 1), 'precondition_failed');
        // A record under that source_id that is not a valid receipt answers nothing either.
        await deps.store.captureSource(at, {
          source_id: 'odd',
          content: { schema: 'baton.handoff-receipt/v1', status: 'declined' },
          metadata: { kind: 'handoff-receipt' },
        });
        await expectBatonError(acknowledgeHandoff(deps, { ...declineInput, source_id: 'odd' }), 'conflict');
        await expectBatonError(
          recordTaskOutcome(deps, { ...outcome('o-1', accepted.receipt.source_ref), summary: 'changed' }),
          'invalid_input',
        );
      });

      it('answers an identical retry with an empty receiver label, which is not stored, after a retraction', async () => {
        await send('b-1');
        const input = {
          ...at,
          source_id: 'r-1',
          target: { exact: 1 },
          status: 'accepted',
          receiver_checks: confirmed,
          receiver: '',
        } as const;
        const first = await acknowledgeHandoff(deps, input);
        expect(first.record).not.toHaveProperty('receiver');
        await retractSource(deps, { ...at, source_id: 'ci-log', reason: 'held a token' });
        expect(await acknowledgeHandoff(deps, input)).toEqual(first);
      });

      it('rejects accepted without authorization confirmed', async () => {
        await send('b-1');
        const error = await expectBatonError(
          acknowledgeHandoff(deps, {
            ...at,
            source_id: 'r-1',
            target: { exact: 1 },
            status: 'accepted',
            receiver_checks: { ...confirmed, authorization: 'not_confirmed' },
          }),
          'invalid_input',
        );
        expect((error.data.issues as { path: string }[])[0]!.path).toBe('receiver_checks.authorization');
      });

      it('Acceptance: Clarification — unavailable evidence produces needs_clarification with a reason', async () => {
        await send('b-1');
        await retractSource(deps, { ...at, source_id: 'ci-log', reason: 'held a token' });
        await expectBatonError(
          acknowledgeHandoff(deps, {
            ...at,
            source_id: 'r-1',
            target: { exact: 1 },
            status: 'needs_clarification',
            receiver_checks: { ...confirmed, capability: 'not_confirmed' },
          }),
          'invalid_input',
        );
        const stored = await acknowledgeHandoff(deps, {
          ...at,
          source_id: 'r-1',
          target: { exact: 1 },
          status: 'needs_clarification',
          reason: 'The cited failure log is unavailable; I cannot identify the failing assertion',
          receiver_checks: { ...confirmed, capability: 'not_confirmed' },
        });
        expect(stored.record).toMatchObject({ status: 'needs_clarification', evidence: 'unavailable' });
        expect(stored.record.unavailable_citations).toHaveLength(1);
        expect((await readContinuity(deps, at)).transfer_state).toBe('needs_clarification');
      });

      it('declined needs a reason; an unknown status is refused', async () => {
        await send('b-1');
        const base = { ...at, source_id: 'r', target: { exact: 1 }, receiver_checks: confirmed };
        await expectBatonError(acknowledgeHandoff(deps, { ...base, status: 'declined' }), 'invalid_input');
        await expectBatonError(
          acknowledgeHandoff(deps, { ...base, status: 'declined', reason: '  ' }),
          'invalid_input',
        );
        await expectBatonError(acknowledgeHandoff(deps, { ...base, status: 'maybe' }), 'invalid_input');
        const declined = await acknowledgeHandoff(deps, {
          ...base,
          status: 'declined',
          reason: 'The next action needs a production deployment I may not perform',
        });
        expect(declined.record.status).toBe('declined');
        expect((await readContinuity(deps, at)).transfer_state).toBe('declined');
      });

      it('Acceptance: Agent -> Agent — a Prepared Handoff transported unchanged can Continue and be acknowledged without the session', async () => {
        const prepared = await handoffCurrentWork(deps, boundary('b-1'));
        const transported = JSON.parse(JSON.stringify({ digest: prepared.digest })) as { digest: string };
        const resolved = await continueHandoff(deps, { ...at, selection: { prepared: transported.digest } });
        expect(resolved.handoff).toEqual(prepared.prepared_handoff);
        const receipt = await acknowledgeHandoff(deps, {
          ...at,
          source_id: 'r-prepared',
          target: { prepared: transported.digest },
          status: 'accepted',
          receiver_checks: confirmed,
        });
        expect(receipt.record.target).toEqual({ kind: 'prepared', digest: prepared.digest });
        // Only a receipt of a committed exact revision can be covered by an outcome.
        await expectBatonError(
          recordTaskOutcome(deps, outcome('o-1', receipt.receipt.source_ref)),
          'invalid_input',
        );
      });

      it('keeps a receipt for revision 7 on 7 when 8 exists', async () => {
        for (let n = 1; n <= 7; n += 1) await send(`b-${n}`);
        const seven = await accept('r-7', 7);
        await send('b-8');
        expect(seven.record.target).toMatchObject({ kind: 'exact', revision: 7 });
        const continuity = await readContinuity(deps, at);
        expect(continuity.current?.revision).toBe(8);
        expect(continuity.transfer_state).toBe('awaiting_receipt');
        expect((await readContinuity(deps, { ...at, through: 7 })).transfer_state).toBe('accepted');
      });
    });

    describe('record_task_outcome and coverage', () => {
      it('Acceptance: Result coverage — acceptance awaits an outcome; only one naming that receipt covers', async () => {
        await send('b-1');
        expect((await readContinuity(deps, at)).transfer_state).toBe('awaiting_receipt');
        const receipt = await accept('r-1', 1);
        let continuity = await readContinuity(deps, at);
        expect([continuity.transfer_state, continuity.outcome_state]).toEqual([
          'accepted',
          'awaiting_outcome',
        ]);
        await recordTaskOutcome(deps, outcome('unlinked'));
        expect((await readContinuity(deps, at)).outcome_state).toBe('awaiting_outcome');
        const linked = await recordTaskOutcome(deps, outcome('linked', receipt.receipt.source_ref));
        expect(linked.trust).toBe('untrusted_observation');
        continuity = await readContinuity(deps, at);
        expect(continuity.outcome_state).toBe('covered');
        expect(continuity.covering_outcome_ref).toEqual(linked.receipt.source_ref);
      });

      it('leaves the transfer awaiting_outcome when the outcome names an earlier receipt', async () => {
        await send('b-1');
        const early = await accept('r-early', 1);
        await accept('r-late', 1);
        await recordTaskOutcome(deps, outcome('o', early.receipt.source_ref));
        const continuity = await readContinuity(deps, at);
        expect(continuity.active_receipt_ref?.source_id).toBe('r-late');
        expect(continuity.outcome_state).toBe('awaiting_outcome');
      });

      it('covers with a failed outcome: covered is not success', async () => {
        await send('b-1');
        const receipt = await accept('r-1', 1);
        await recordTaskOutcome(deps, { ...outcome('o', receipt.receipt.source_ref, 'failed') });
        expect((await readContinuity(deps, at)).outcome_state).toBe('covered');
      });

      it('refuses an outcome naming a receipt of another revision state, or a non-receipt', async () => {
        await send('b-1');
        const clarify = await acknowledgeHandoff(deps, {
          ...at,
          source_id: 'r-1',
          target: { exact: 1 },
          status: 'needs_clarification',
          reason: 'missing data',
          receiver_checks: confirmed,
        });
        const notAccepted = await expectBatonError(
          recordTaskOutcome(deps, outcome('o', clarify.receipt.source_ref)),
          'invalid_input',
        );
        expect(notAccepted.message).toContain('needs_clarification');
        await expectBatonError(recordTaskOutcome(deps, outcome('o', log)), 'invalid_input');
      });

      it('Acceptance: Outcome status — failed, skipped, timed_out, unavailable, cancelled and unknown never become passed', async () => {
        const statuses = ['failed', 'skipped', 'timed_out', 'unavailable', 'cancelled', 'unknown'];
        const stored = await recordTaskOutcome(deps, {
          ...at,
          source_id: 'o',
          objective: 'o',
          status: 'succeeded',
          summary: 'the producer says it worked',
          checks: [
            ...statuses.map((status) => ({ name: status, status, basis: 'declared' })),
            { name: 'claimed pass', status: 'passed', basis: 'declared' },
          ],
        });
        expect(stored.record.checks.map((c) => [c.status, c.basis])).toEqual([
          ...statuses.map((status) => [status, 'declared']),
          ['passed', 'declared'],
        ]);
        const entry = await deps.store.readSource(project_id, stored.receipt.source_ref);
        expect(JSON.stringify(entry.content)).not.toContain('"verified"');
        const metrics = await continuityMetrics(deps, { project_id });
        expect(metrics.counts).toMatchObject({ verified_passed_checks: 0, declared_passed_checks: 1 });
      });

      it('refuses unknown statuses and unbacked verified checks, naming the field', async () => {
        const base = outcome('o');
        const cases: [Record<string, unknown>, string][] = [
          [{ status: 'done' }, 'status'],
          [{ checks: [{ name: 'x', status: 'green', basis: 'declared' }] }, 'checks.0.status'],
          [{ checks: [{ name: 'x', status: 'passed', basis: 'verified' }] }, 'checks.0.evidence'],
          [
            { checks: [{ name: 'x', status: 'passed', basis: 'declared', evidence: [log] }] },
            'checks.0.evidence',
          ],
          [{ observations: [{ text: 'x', basis: 'verified' }] }, 'observations.0.evidence'],
        ];
        for (const [change, path] of cases) {
          const error = await expectBatonError(
            recordTaskOutcome(deps, { ...base, ...change }),
            'invalid_input',
          );
          expect((error.data.issues as { path: string }[])[0]!.path).toBe(path);
        }
        const missing = { ...log, source_id: 'gone' };
        await expectBatonError(
          recordTaskOutcome(deps, { ...base, produced_artifacts: [missing] }),
          'invalid_input',
          { issues: [{ path: 'produced_artifacts.0', message: 'citation unavailable: missing' }] },
        );
        expect((await readContinuity(deps, at)).counts['task-outcome']).toBe(0);
      });
    });

    describe('the continuity projection', () => {
      it('Acceptance: Continuity — the report shows all four kinds in journal position order, positions not times', async () => {
        await createWorkContract(deps, { ...at, source_id: 'c', objective: 'o', completion_criteria: ['c'] });
        await send('b-1');
        const receipt = await accept('r-1', 1);
        await recordTaskOutcome(deps, outcome('o-1', receipt.receipt.source_ref));
        const report = await readWorkstreamReport(deps, at);
        const timeline = report.continuity.timeline;
        expect(timeline.map((e) => e.kind)).toEqual([
          'work-contract',
          'handoff-boundary',
          'handoff-receipt',
          'task-outcome',
        ]);
        const positions = timeline.map((e) => e.position);
        expect([...positions].sort((a, b) => a - b)).toEqual(positions);
        expect(Object.keys(timeline[0]!)).not.toContain('recorded_at');
        const markdown = workstreamMarkdown(report);
        expect(markdown).toContain('| Journal position | Record | Summary |');
        expect(markdown).toContain('Transfer: **accepted** · outcome: **covered**');
      });

      it('shows the contract and outcomes recorded before any handoff is committed, in the Markdown too', async () => {
        await createWorkContract(deps, {
          ...at,
          source_id: 'c',
          objective: 'Import the CSV',
          completion_criteria: ['c'],
        });
        await recordTaskOutcome(deps, {
          ...outcome('o-1'),
          status: 'failed',
          summary: 'The import stopped at row 12',
        });
        const markdown = workstreamMarkdown(await readWorkstreamReport(deps, at));
        expect(markdown).toContain('No handoff has been committed here yet.');
        expect(markdown).toContain('## Work recorded so far');
        expect(markdown).toContain('Transfer: **not_applicable** · outcome: **not_expected**');
        const contract = markdown.indexOf('| work\\-contract | Import the CSV |');
        const failed = markdown.indexOf('| task\\-outcome (failed) | The import stopped at row 12 |');
        expect(contract).toBeGreaterThan(0);
        expect(failed).toBeGreaterThan(contract);
        expect(markdown).toContain('grant no authority');
      });

      it('truncates the timeline at 64 events yet decides coverage from every record', async () => {
        await send('b-1');
        const receipt = await accept('r-1', 1);
        await recordTaskOutcome(deps, outcome('o-linked', receipt.receipt.source_ref));
        for (let n = 0; n < 67; n += 1) await recordTaskOutcome(deps, outcome(`o-${n}`));
        const continuity = await readContinuity(deps, at);
        expect(continuity.counts['task-outcome']).toBe(68);
        expect(continuity.timeline).toHaveLength(64);
        expect(continuity.truncated).toBe(true);
        expect(continuity.timeline.map((e) => e.source_ref.source_id)).not.toContain('o-linked');
        expect(continuity.outcome_state).toBe('covered');
      });

      it('counts an invalid work record and leaves it out of history', async () => {
        // Written around the operations (as an import could): it declares a work kind but fails its schema.
        await deps.store.captureSource(at, {
          source_id: 'bad-outcome',
          content: { schema: 'baton.task-outcome/v1', status: 'great' },
          metadata: { kind: 'task-outcome' },
        });
        await deps.store.captureSource(at, {
          source_id: 'odd-schema',
          content: { schema: 'constructor' },
          metadata: { kind: 'handoff-receipt' },
        });
        await deps.store.captureSource(at, {
          source_id: 'forged-receipt',
          content: {
            schema: 'baton.handoff-receipt/v1',
            target: { kind: 'exact', revision: 1, digest: log.digest },
            status: 'accepted',
            evidence: 'unavailable',
            receiver_checks: {
              live_workspace: 'not_confirmed',
              capability: 'confirmed',
              authorization: 'confirmed',
            },
          },
          metadata: { kind: 'handoff-receipt' },
        });
        await captureSource(deps, { ...at, source_id: 'note', kind: 'note', content: { any: 'thing' } });
        await recordTaskOutcome(deps, outcome('good'));
        const continuity = await readContinuity(deps, at);
        expect(continuity.invalid_record_count).toBe(3);
        expect(continuity.counts['task-outcome']).toBe(1);
        expect(continuity.timeline.map((e) => e.source_ref.source_id)).toEqual(['good']);
        // One malformed source never breaks the project's views.
        expect((await readReport(deps, { project_id })).workstreams).toHaveLength(1);
        expect((await continuityMetrics(deps, { project_id })).counts.receipts).toBe(0);
      });

      it('Acceptance: Persistence — work records reuse the Source journal; revisions stay immutable', async () => {
        await send('b-1');
        const receipt = await accept('r-1', 1);
        const entries = await collect(deps.store.readStream({ ...at, kind: 'scope' }));
        expect(entries.map((e) => e.metadata?.kind)).toEqual([
          'test-log',
          'handoff-boundary',
          'handoff-receipt',
        ]);
        expect(entries[2]!.digest).toBe(receipt.receipt.digest);
        await expectBatonError(
          commitHandoff(deps, {
            ...at,
            prepared: (await handoffCurrentWork(deps, boundary('b-2'))).digest,
            expected_head: 0,
          }),
          'precondition_failed',
        );
        expect((await deps.store.getRevision(at, 1)).revision).toBe(1);
      });
    });

    describe('review findings', () => {
      it('refuses capture_source for the kinds only their operations write', async () => {
        for (const kind of [
          'work-contract',
          'handoff-boundary',
          'handoff-receipt',
          'task-outcome',
          'experience-review',
        ]) {
          await expectBatonError(
            captureSource(deps, { ...at, source_id: `x-${kind}`, kind, content: {} }),
            'invalid_input',
          );
          await expectBatonError(
            captureSource(deps, { ...at, source_id: `y-${kind}`, content: {}, metadata: { kind } }),
            'invalid_input',
          );
        }
        await expectBatonError(captureSource(deps, null as never), 'invalid_input');
        // kind and a metadata.kind that says otherwise: refused, not one silently kept.
        await expectBatonError(
          captureSource(deps, {
            ...at,
            source_id: 'z',
            kind: 'test-log',
            content: {},
            metadata: { kind: 'note' },
          }),
          'invalid_input',
        );
        expect((await deps.store.getStream({ ...at, kind: 'scope' })).head).toBe(1);
        const same = { ...at, source_id: 'z', kind: 'test-log', content: {}, metadata: { kind: 'test-log' } };
        expect((await captureSource(deps, same)).position).toBe(2);
      });

      it('keeps the source ids of reviews to review_experience, so no source can hold a candidate review in advance', async () => {
        const recorded = await recordTaskOutcome(deps, outcome('o-1'));
        const reviewId = reviewSourceId(recorded.receipt.source_ref);
        const head = (await deps.store.getStream({ ...at, kind: 'scope' })).head;
        await expectBatonError(
          captureSource(deps, { ...at, source_id: reviewId, kind: 'note', content: 'x' }),
          'invalid_input',
          {
            issues: [{ path: 'source_id', message: expect.stringContaining('review_experience') as string }],
          },
        );
        await expectBatonError(
          createWorkContract(deps, {
            ...at,
            source_id: reviewId,
            objective: 'o',
            completion_criteria: ['c'],
          }),
          'invalid_input',
          {
            issues: [{ path: 'source_id', message: expect.stringContaining('review_experience') as string }],
          },
        );
        expect((await deps.store.getStream({ ...at, kind: 'scope' })).head).toBe(head);
        const reviewed = await reviewExperience(deps, {
          ...at,
          candidate: recorded.receipt.source_ref,
          decision: 'approved',
          note: 'holds',
        });
        expect(reviewed.candidate.status).toBe('approved');
      });

      it('keeps a view frozen earlier as it was, journal included', async () => {
        await send('b-1');
        const frozen = await readWorkstreamReport(deps, at);
        await send('b-2');
        await accept('r-2', 2);
        const again = await readWorkstreamReport(deps, {
          ...at,
          through: frozen.selection.revision,
          position: frozen.selection.position,
        });
        expect(again.continuity).toEqual(frozen.continuity);
        expect(JSON.stringify(again)).not.toContain('r-2');
        await expectBatonError(readWorkstreamReport(deps, { ...at, position: 999 }), 'invalid_input');
        // Revision 2 cites its boundary, so no view of it was ever read through an earlier position.
        await expectBatonError(
          readWorkstreamReport(deps, { ...at, through: 2, position: 0 }),
          'invalid_input',
        );
        await expectBatonError(
          readWorkstreamReport(deps, { ...at, through: 2, position: frozen.selection.position }),
          'invalid_input',
        );
        const latest = await readWorkstreamReport(deps, at);
        expect(latest.selection.revision).toBe(2);
        const exact = await readWorkstreamReport(deps, {
          ...at,
          through: latest.selection.revision,
          position: latest.selection.position,
        });
        expect(exact.selection).toEqual(latest.selection);
      });

      it('never freezes a selection it would refuse, when a handoff lands between its two reads', async () => {
        await send('b-1');
        // The journal head is read first; a one-line handoff (its boundary source, then revision
        // 2) commits before the revision head is read.
        let raced = false;
        const store = new Proxy(deps.store, {
          get(target, name, receiver) {
            const value: unknown = Reflect.get(target, name, receiver);
            if (typeof value !== 'function') return value;
            // The stores keep private fields: call their methods on the store itself.
            if (name !== 'revisionHead') return (value as (...args: unknown[]) => unknown).bind(target);
            return async (...args: unknown[]) => {
              if (!raced) {
                raced = true;
                await send('b-2');
              }
              return Reflect.apply(value, target, args) as unknown;
            };
          },
        });
        const frozen = await readWorkstreamReport({ ...deps, store }, at);
        expect(raced).toBe(true);
        expect(frozen.selection.revision).toBe(2);
        // The view of revision 2 includes the boundary source it cites, and reads again as it was.
        const timeline = JSON.stringify(frozen.continuity);
        expect(timeline).toContain('b-2');
        const again = await readWorkstreamReport(deps, {
          ...at,
          through: frozen.selection.revision,
          position: frozen.selection.position,
        });
        expect(again.continuity).toEqual(frozen.continuity);
      });

      it('checks the finalized handoff, size included, before storing the boundary', async () => {
        // A boundary just under the entry limit whose Prepared Handoff, citing it 65 more times, is over it.
        const long = (await captureSource(deps, { ...at, source_id: 'l'.repeat(250), content: 'x' }))
          .source_ref;
        const current_state = Array.from({ length: 64 }, () => ({
          text: 'x'.repeat(3000),
          basis: 'verified' as const,
          evidence: Array<SourceRef>(32).fill(long),
        }));
        const input = { ...boundary('huge'), current_state, omissions: [] as string[] };
        const record = (omissions: string[]) => ({
          schema: 'baton.handoff-boundary/v1',
          objective: input.objective,
          current_state,
          disposition: 'continue',
          next_action: { ...input.next_action, evidence: [] },
          omissions,
          attribution: input.attribution,
        });
        const size = (omissions: string[]) =>
          Buffer.byteLength(entryBody(record(omissions), { kind: 'handoff-boundary' }));
        while (size([...input.omissions, 'x'.repeat(4000)]) < ledgerLimits.entryBytes - 2000) {
          input.omissions.push('x'.repeat(4000));
        }
        input.omissions.push('x'.repeat(ledgerLimits.entryBytes - 2000 - size([...input.omissions, ''])));
        expect(size(input.omissions)).toBeLessThanOrEqual(ledgerLimits.entryBytes);
        const error = await expectBatonError(handoffCurrentWork(deps, input), 'payload_too_large');
        expect(error.message).toContain('prepared handoff');
        expect((await deps.store.getStream({ ...at, kind: 'scope' })).head).toBe(2);
      });

      it('gives two long outcome ids that share a prefix their own reviews', async () => {
        const a = await recordTaskOutcome(deps, outcome(`${'o'.repeat(240)}-a`));
        const b = await recordTaskOutcome(deps, outcome(`${'o'.repeat(240)}-b`));
        await reviewExperience(deps, {
          ...at,
          candidate: a.receipt.source_ref,
          decision: 'approved',
          note: 'a',
        });
        await reviewExperience(deps, {
          ...at,
          candidate: b.receipt.source_ref,
          decision: 'rejected',
          note: 'b',
        });
        const statuses = (await listExperienceCandidates(deps, at)).map((c) => c.status);
        expect(statuses).toEqual(['approved', 'rejected']);
      });

      it('Acceptance: Exact preflight (operations) — Continue resolves latest to an exact revision the receipt binds to', async () => {
        await send('b-1');
        const preflight = await continueHandoff(deps, { ...at, selection: 'latest' });
        expect(preflight.selection).toMatchObject({ kind: 'exact', revision: 1 });
        await send('b-2');
        // The receiver inspected revision 1: the receipt binds to exactly that, never to 2.
        const receipt = await acknowledgeHandoff(deps, {
          ...at,
          source_id: 'r',
          target: { exact: preflight.selection.kind === 'exact' ? preflight.selection.revision : 0 },
          status: 'accepted',
          receiver_checks: confirmed,
        });
        expect(receipt.record.target).toEqual(preflight.selection);
      });

      it('Acceptance: Three choices — accepted needs readable evidence and all three checks; the other two need a reason', async () => {
        await send('b-1');
        const base = { ...at, target: { exact: 1 }, receiver_checks: confirmed };
        for (const status of ['needs_clarification', 'declined']) {
          await expectBatonError(
            acknowledgeHandoff(deps, { ...base, source_id: `r-${status}`, status }),
            'invalid_input',
          );
        }
        for (const check of ['live_workspace', 'capability', 'authorization']) {
          await expectBatonError(
            acknowledgeHandoff(deps, {
              ...base,
              source_id: 'r-a',
              status: 'accepted',
              receiver_checks: { ...confirmed, [check]: 'not_confirmed' },
            }),
            'invalid_input',
          );
        }
        const choices = [];
        for (const status of ['accepted', 'needs_clarification', 'declined']) {
          choices.push(
            (await acknowledgeHandoff(deps, { ...base, source_id: `ok-${status}`, status, reason: 'why' }))
              .record.status,
          );
        }
        expect(choices).toEqual(['accepted', 'needs_clarification', 'declined']);
      });
    });

    describe('experience incubation', () => {
      it('Acceptance: Experience boundary — only task-outcome sources become candidates, and they stay pending', async () => {
        await createWorkContract(deps, { ...at, source_id: 'c', objective: 'o', completion_criteria: ['c'] });
        await send('b-1');
        const stored = await recordTaskOutcome(deps, outcome('o-1', undefined, 'succeeded'));
        const candidates = await listExperienceCandidates(deps, { project_id });
        expect(candidates).toHaveLength(1);
        expect(candidates[0]).toMatchObject({
          candidate: stored.receipt.source_ref,
          status: 'pending',
          review: null,
        });
        expect(candidates[0]!.draft.lesson).toContain('ended succeeded');
        expect((await prepareContext(deps, at)).experience).toEqual([]);
      });

      it('enters PreparedContext only after a review approves it', async () => {
        const good = await recordTaskOutcome(deps, outcome('o-good', undefined, 'succeeded'));
        const bad = await recordTaskOutcome(deps, outcome('o-bad', undefined, 'failed'));
        await expectBatonError(
          reviewExperience(deps, {
            ...at,
            candidate: good.receipt.source_ref,
            decision: 'approved',
            note: '',
          }),
          'invalid_input',
        );
        await expectBatonError(
          reviewExperience(deps, { ...at, candidate: log, decision: 'approved', note: 'n' }),
          'invalid_input',
        );
        const approved = await reviewExperience(deps, {
          ...at,
          candidate: good.receipt.source_ref,
          decision: 'approved',
          note: 'Background refresh must preserve unsent drafts',
        });
        expect(approved.candidate.status).toBe('approved');
        await reviewExperience(deps, {
          ...at,
          candidate: bad.receipt.source_ref,
          decision: 'rejected',
          note: 'one-off',
        });
        await expectBatonError(
          reviewExperience(deps, {
            ...at,
            candidate: bad.receipt.source_ref,
            decision: 'approved',
            note: 'changed mind',
          }),
          'conflict',
        );
        await send('b-1');
        const context = await prepareContext(deps, at);
        expect(context.experience.map((c) => c.candidate.source_id)).toEqual(['o-good']);
        expect(context.handoff).toMatchObject({ revision: 1, trust: 'untrusted_history' });
        const projectWide = await prepareContext(deps, { project_id });
        expect(projectWide.experience).toHaveLength(1);
        expect(projectWide.handoff).toBeNull();
      });
    });

    describe('metrics', () => {
      it('counts clarification, evidence availability and result coverage from the ledger', async () => {
        await send('b-1');
        const accepted = await accept('r-1', 1);
        await recordTaskOutcome(deps, outcome('o-1', accepted.receipt.source_ref));
        await send('b-2');
        await retractSource(deps, { ...at, source_id: 'ci-log', reason: 'secret' });
        await acknowledgeHandoff(deps, {
          ...at,
          source_id: 'r-2',
          target: { exact: 2 },
          status: 'needs_clarification',
          reason: 'log unavailable',
          receiver_checks: confirmed,
        });
        const metrics = await continuityMetrics(deps, { project_id });
        expect(metrics.clarification_rate).toEqual({ rate: 0.5, numerator: 1, denominator: 2 });
        expect(metrics.evidence_availability_rate).toEqual({ rate: 7 / 8, numerator: 7, denominator: 8 });
        expect(metrics.handoff_result_coverage_rate).toEqual({ rate: 0.5, numerator: 1, denominator: 2 });
        expect(metrics.counts).toMatchObject({ receipts: 2, accepted_receipts: 1, outcomes: 1 });
      });
    });
  });
}

describe('the continuity projection is pure', () => {
  const entry = (scope_id: string, position: number, kind: string, content: unknown): Entry => ({
    stream: { project_id: 'p', kind: 'scope', scope_id },
    position,
    global_seq: position,
    type: 'source',
    source_id: `s-${position}`,
    digest: `sha256:${position.toString(16).padStart(64, '0')}`,
    recorded_at: '2026-12-02T16:00:00.000Z',
    content: content as never,
    metadata: { kind },
    retracted: null,
  });
  const record = fc.oneof(
    fc.record({
      kind: fc.constant('work-contract'),
      content: fc.constant({ schema: 'baton.work-contract/v1', objective: 'o', completion_criteria: ['c'] }),
    }),
    fc.record({
      kind: fc.constant('handoff-receipt'),
      content: fc.record({
        schema: fc.constant('baton.handoff-receipt/v1'),
        target: fc.record({
          kind: fc.constant('exact'),
          revision: fc.integer({ min: 1, max: 3 }),
          digest: fc.constant(`sha256:${'a'.repeat(64)}`),
        }),
        status: fc.constantFrom('accepted', 'needs_clarification', 'declined'),
        evidence: fc.constant('available'),
        receiver_checks: fc.constant({
          live_workspace: 'confirmed',
          capability: 'confirmed',
          authorization: 'confirmed',
        }),
      }),
    }),
    fc.record({
      kind: fc.constant('task-outcome'),
      content: fc.constant({
        schema: 'baton.task-outcome/v1',
        objective: 'o',
        status: 'failed',
        summary: 's',
      }),
    }),
    fc.record({
      kind: fc.constant('task-outcome'),
      content: fc.constant({ schema: 'baton.task-outcome/v1', status: 'bad' }),
    }),
  );

  it('gives the same result twice, and entries of other scopes never change it', () => {
    fc.assert(
      fc.property(
        fc.array(record, { maxLength: 90 }),
        fc.array(record, { maxLength: 20 }),
        fc.integer({ min: 0, max: 3 }),
        (mine, theirs, revision) => {
          const own = mine.map((r, i) => entry('here', i + 1, r.kind, r.content));
          const other = theirs.map((r, i) => entry('elsewhere', i + 1, r.kind, r.content));
          const current = revision === 0 ? null : { revision, digest: `sha256:${'a'.repeat(64)}` as const };
          const once = projectContinuity('here', own, current);
          expect(projectContinuity('here', own, current)).toEqual(once);
          const mixed = [...other, ...own].sort(() => 0);
          expect(projectContinuity('here', mixed, current)).toEqual(once);
          expect(once.timeline.length).toBe(Math.min(64, once.timeline.length));
        },
      ),
      { numRuns: 200 },
    );
  });
});
