import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AppDeps } from '../src/app/deps.ts';
import { commitHandoff, continueHandoff, prepareHandoff } from '../src/app/handoffs.ts';
import { readReport, readWorkstreamReport } from '../src/app/report.ts';
import { captureSource, retractSource } from '../src/app/sources.ts';
import { digestOf, sha256Digest } from '../src/core/canonical.ts';
import { systemClock } from '../src/core/clock.ts';
import { BatonError } from '../src/core/errors.ts';
import type { JsonObject } from '../src/core/json.ts';
import type { Revision } from '../src/core/ledger/revision.ts';
import { checkCitation, checkCitations } from '../src/core/handoff/resolution.ts';
import { reportMarkdown, workstreamMarkdown } from '../src/core/handoff/report.ts';
import type { SourceRef } from '../src/core/ledger/source.ts';
import { expectBatonError } from '../src/store/conformance/store.conformance.ts';
import { backends, withOverrides, type OpenedStore } from './helpers/stores.ts';

const project_id = 'acme';
const scope_id = 'auto-refresh';
const at = { project_id, scope_id };

function handoff(n: number, citations: SourceRef[] = []) {
  return {
    objective: 'Add safe auto-refresh to Handoff Report',
    disposition: 'continue',
    statements: [
      { text: 'Automatic polling is implemented', basis: 'declared', citations: [] },
      {
        text: `The frozen-selection switching test still fails (${n})`,
        basis: citations.length > 0 ? 'verified' : 'declared',
        citations,
      },
    ],
    next_action: {
      text: 'Fix the comparison between the frozen selection and the current revision',
      citations,
    },
    omissions: ['Remote CI is unavailable in the current environment'],
  };
}

for (const backend of backends) {
  describe(`handoffs on ${backend.name}`, () => {
    let opened: OpenedStore;
    let deps: AppDeps;
    let log: SourceRef;

    beforeEach(async () => {
      opened = await backend.open();
      deps = { store: opened.store, clock: systemClock };
      await deps.store.createProject(project_id);
      log = (
        await captureSource(deps, { ...at, source_id: 'ci-log', kind: 'test-log', content: 'FAIL switching' })
      ).source_ref;
    });
    afterEach(() => opened.dispose());

    async function publish(n: number): Promise<number> {
      const head = await deps.store.revisionHead(at);
      const prepared = await prepareHandoff(deps, { ...at, ...handoff(n, [log]) });
      return (await commitHandoff(deps, { ...at, prepared: prepared.digest, expected_head: head })).revision;
    }

    describe('capture_source', () => {
      it('stores the kind as metadata.kind and is idempotent', async () => {
        const again = await captureSource(deps, {
          ...at,
          source_id: 'ci-log',
          kind: 'test-log',
          content: 'FAIL switching',
        });
        expect(again.source_ref).toEqual(log);
        expect(log.digest).toBe(digestOf({ content: 'FAIL switching', metadata: { kind: 'test-log' } }));
        await expectBatonError(
          captureSource(deps, { ...at, source_id: 'ci-log', kind: 'test-log', content: 'PASS' }),
          'conflict',
          { existing_digest: log.digest },
        );
        await expectBatonError(
          captureSource(deps, { ...at, source_id: 'x', kind: 'Bad Kind', content: 1 }),
          'invalid_input',
        );
      });
    });

    describe('prepare', () => {
      it('finalizes a canonical body on the observed head, stored by digest and not committed', async () => {
        const prepared = await prepareHandoff(deps, { ...at, ...handoff(1, [log]) });
        expect(prepared.prepared_handoff).toMatchObject({
          schema: 'baton.prepared-handoff/v1',
          scope_id,
          base_revision: 0,
          disposition: 'continue',
        });
        expect(prepared.digest).toBe(digestOf(prepared.prepared_handoff));
        expect(await deps.store.getPrepared(project_id, prepared.digest)).toEqual(prepared.prepared_handoff);
        expect(await deps.store.revisionHead(at)).toBe(0);
        await publish(1);
        const next = await prepareHandoff(deps, { ...at, ...handoff(2) });
        expect(next.prepared_handoff.base_revision).toBe(1);
      });

      const malformed: [string, Record<string, unknown>, string][] = [
        ['no next action', { next_action: undefined }, 'next_action'],
        ['two next actions', { next_action: [{ text: 'a' }, { text: 'b' }] }, 'next_action'],
        ['an empty objective', { objective: '   ' }, 'objective'],
        ['an unknown disposition', { disposition: 'paused' }, 'disposition'],
        [
          'a citation without digest',
          { next_action: { text: 'go', citations: [{ scope_id, source_id: 'ci-log' }] } },
          'next_action.citations.0.digest',
        ],
        ['text over the size limit', { next_action: { text: 'x'.repeat(4001) } }, 'next_action.text'],
        ['a blocked handoff without its question', { disposition: 'blocked' }, 'blocked'],
        [
          'a blocked handoff without options',
          { disposition: 'blocked', blocked: { question: 'Q?', options: [], impact: 'I' } },
          'blocked.options',
        ],
        [
          'a verified statement without evidence',
          { statements: [{ text: 's', basis: 'verified' }] },
          'statements.0.citations',
        ],
        ['an unknown field', { priority: 'high' }, ''],
      ];
      for (const [what, change, path] of malformed) {
        it(`refuses ${what}, naming ${path || 'the field'}, and stores nothing`, async () => {
          const error = await expectBatonError(
            prepareHandoff(deps, { ...at, ...handoff(1), ...change }),
            'invalid_input',
          );
          const issues = error.data.issues as { path: string }[];
          if (path) expect(issues[0]!.path).toBe(path);
          expect(error.message).toContain('handoff is invalid');
          expect(await deps.store.revisionHead(at)).toBe(0);
          expect((await deps.store.getStream({ ...at, kind: 'scope' })).head).toBe(1);
        });
      }

      it('refuses a citation into another scope', async () => {
        const elsewhere = await captureSource(deps, {
          project_id,
          scope_id: 'other',
          source_id: 'ci-log',
          content: 'FAIL switching',
        });
        const error = await expectBatonError(
          prepareHandoff(deps, { ...at, ...handoff(1, [elsewhere.source_ref]) }),
          'invalid_input',
        );
        expect(error.message).toContain('must be in scope auto-refresh');
      });

      it('refuses a citation that cannot be read now', async () => {
        const missing = { ...log, source_id: 'nope' };
        const error = await expectBatonError(
          prepareHandoff(deps, { ...at, ...handoff(1, [missing]) }),
          'invalid_input',
        );
        expect(error.data.issues).toEqual(
          expect.arrayContaining([
            { path: 'statements.1.citations.0', message: 'citation unavailable: missing' },
          ]),
        );
      });

      it('accepts a blocked handoff that returns the decision to a human', async () => {
        const prepared = await prepareHandoff(deps, {
          ...at,
          ...handoff(1),
          disposition: 'blocked',
          blocked: {
            question: 'Accept the remote runtime cost of polling every five seconds?',
            options: ['Poll every 5 s', 'Poll every 30 s'],
            impact: 'Five-second polling doubles remote runtime calls',
          },
        });
        expect(prepared.prepared_handoff.blocked?.options).toHaveLength(2);
      });
    });

    describe('commit', () => {
      it('publishes immutable revisions 1..N', async () => {
        expect(await publish(1)).toBe(1);
        expect(await publish(2)).toBe(2);
        const first = await deps.store.getRevision(at, 1);
        expect(await deps.store.getPrepared(project_id, first.prepared_digest)).toMatchObject({
          base_revision: 0,
        });
      });

      it('fails a handoff prepared on head 7 once someone commits 8, reporting head 8', async () => {
        for (let n = 1; n <= 7; n += 1) await publish(n);
        const mine = await prepareHandoff(deps, { ...at, ...handoff(100) });
        expect(mine.prepared_handoff.base_revision).toBe(7);
        await publish(8);
        await expectBatonError(
          commitHandoff(deps, { ...at, prepared: mine.digest, expected_head: 7 }),
          'revision_conflict',
          {
            scope_id,
            expected_head: 7,
            actual_head: 8,
          },
        );
        await expectBatonError(
          commitHandoff(deps, { ...at, prepared: mine.digest, expected_head: 8 }),
          'precondition_failed',
          { base_revision: 7, expected_head: 8 },
        );
        expect(await deps.store.revisionHead(at)).toBe(8);
      });

      it('returns the revision it already produced when a commit is retried after no confirmation', async () => {
        const prepared = await prepareHandoff(deps, { ...at, ...handoff(1, [log]) });
        const input = { ...at, prepared: prepared.digest, expected_head: 0 };
        const [a, b] = await Promise.all([commitHandoff(deps, input), commitHandoff(deps, input)]);
        const c = await commitHandoff(deps, input);
        expect(a).toEqual(b);
        expect(c).toEqual(a);
        expect(await deps.store.revisionHead(at)).toBe(1);
      });

      it('commits a Prepared Handoff transported unchanged as its body', async () => {
        const prepared = await prepareHandoff(deps, { ...at, ...handoff(1, [log]) });
        const transported = JSON.parse(JSON.stringify(prepared.prepared_handoff)) as Record<string, unknown>;
        const revision = await commitHandoff(deps, { ...at, prepared: transported, expected_head: 0 });
        expect(revision.prepared_digest).toBe(prepared.digest);
        const forged = { ...transported, next_action: [transported.next_action, transported.next_action] };
        await expectBatonError(
          commitHandoff(deps, { ...at, prepared: forged, expected_head: 1 }),
          'invalid_input',
        );
      });

      it('refuses a transported body with a field preparing would refuse, at the top as inside, and commits nothing', async () => {
        const prepared = await prepareHandoff(deps, { ...at, ...handoff(1, [log]) });
        const transported = JSON.parse(JSON.stringify(prepared.prepared_handoff)) as Record<string, unknown>;
        await expectBatonError(
          commitHandoff(deps, { ...at, prepared: { ...transported, grant: 'deploy' }, expected_head: 0 }),
          'invalid_input',
          { issues: [{ path: '', message: 'Unrecognized key: "grant"' }] },
        );
        const statements = transported.statements as Record<string, unknown>[];
        await expectBatonError(
          commitHandoff(deps, {
            ...at,
            prepared: { ...transported, statements: [{ ...statements[0], grant: 'deploy' }, statements[1]] },
            expected_head: 0,
          }),
          'invalid_input',
          { issues: [{ path: 'statements.0', message: 'Unrecognized key: "grant"' }] },
        );
        expect(await deps.store.revisionHead(at)).toBe(0);
      });

      it('refuses a handoff of another scope, and an unknown digest', async () => {
        const prepared = await prepareHandoff(deps, { project_id, scope_id: 'other', ...handoff(1) });
        await expectBatonError(
          commitHandoff(deps, { ...at, prepared: prepared.digest, expected_head: 0 }),
          'invalid_input',
          {
            handoff_scope_id: 'other',
          },
        );
        await expectBatonError(
          commitHandoff(deps, { ...at, prepared: sha256Digest('none'), expected_head: 0 }),
          'not_found',
        );
      });
    });

    describe('continue', () => {
      it('resolves latest to the exact revision and digest, with one check per citation', async () => {
        await publish(1);
        await publish(2);
        const resolved = await continueHandoff(deps, { ...at, selection: 'latest' });
        const second = await deps.store.getRevision(at, 2);
        expect(resolved.selection).toEqual({ kind: 'exact', revision: 2, digest: second.prepared_digest });
        expect(resolved.current_head).toBe(2);
        expect(resolved.trust).toBe('untrusted_history');
        expect(resolved.evidence).toBe('available');
        expect(resolved.evidence_checks).toEqual([
          { location: 'statements.1.citations.0', citation: log, status: 'available' },
          { location: 'next_action.citations.0', citation: log, status: 'available' },
        ]);
        expect(JSON.stringify(resolved.evidence_checks)).not.toContain('verified');
        const exact = await continueHandoff(deps, { ...at, selection: { exact: 1 } });
        expect(exact.selection).toMatchObject({ kind: 'exact', revision: 1 });
        expect(exact.current_head).toBe(2);
      });

      it('resolves a prepared selection that was never committed', async () => {
        const prepared = await prepareHandoff(deps, { ...at, ...handoff(1, [log]) });
        const resolved = await continueHandoff(deps, { ...at, selection: { prepared: prepared.digest } });
        expect(resolved.selection).toEqual({ kind: 'prepared', digest: prepared.digest });
        expect(resolved.handoff).toEqual(prepared.prepared_handoff);
        await expectBatonError(
          continueHandoff(deps, { project_id, scope_id: 'other', selection: { prepared: prepared.digest } }),
          'not_found',
        );
      });

      it('reports retracted evidence as unavailable, with its reason', async () => {
        await publish(1);
        await retractSource(deps, { ...at, source_id: 'ci-log', reason: 'held a token' });
        const resolved = await continueHandoff(deps, { ...at, selection: 'latest' });
        expect(resolved.evidence).toBe('unavailable');
        expect(
          resolved.evidence_checks.map((check) => check.status === 'unavailable' && check.reason),
        ).toEqual(['retracted', 'retracted']);
        const stream = await deps.store.getStream({ ...at, kind: 'scope' });
        expect(stream.head).toBe(1);
      });

      it('reports a digest that no longer matches', async () => {
        const wrong = { ...log, digest: sha256Digest('other content') };
        const body = {
          schema: 'baton.prepared-handoff/v1',
          scope_id,
          base_revision: 0,
          ...handoff(1, [wrong]),
        };
        // A transported body is checked like a prepared one: unreadable evidence is refused.
        await expectBatonError(
          commitHandoff(deps, { ...at, prepared: body, expected_head: 0 }),
          'invalid_input',
          {
            issues: [
              { path: 'statements.1.citations.0', message: 'citation unavailable: digest_mismatch' },
              { path: 'next_action.citations.0', message: 'citation unavailable: digest_mismatch' },
            ],
          },
        );
        // A revision written by an older Baton, or imported, can still cite a wrong digest.
        await deps.store.commitRevision(at, 0, body);
        const resolved = await continueHandoff(deps, { ...at, selection: { exact: 1 } });
        expect(resolved.evidence_checks[0]).toMatchObject({
          status: 'unavailable',
          reason: 'digest_mismatch',
        });
      });

      it('has nothing to continue before the first commit, and refuses a bad selection', async () => {
        await expectBatonError(continueHandoff(deps, { ...at, selection: 'latest' }), 'not_found');
        await expectBatonError(continueHandoff(deps, { ...at, selection: { exact: 1 } }), 'not_found');
        await expectBatonError(continueHandoff(deps, { ...at, selection: 'newest' }), 'invalid_input');
        await expectBatonError(continueHandoff(deps, { ...at, selection: { exact: 0 } }), 'invalid_input');
      });
    });

    describe('report', () => {
      it('Acceptance: Revision history — the report counts revisions through its frozen selection and lists the latest 20, latest first', async () => {
        for (let n = 1; n <= 23; n += 1) await publish(n);
        const report = await readWorkstreamReport(deps, at);
        expect(report.selection).toEqual({ revision: 23, position: 1 });
        expect(report.revision_count).toBe(23);
        expect(report.current?.revision).toBe(23);
        expect(report.revisions.map((r) => r.revision)).toEqual(Array.from({ length: 20 }, (_, n) => 23 - n));
        expect(report.revisions.filter((r) => r.current).map((r) => r.revision)).toEqual([23]);
        const older = await readWorkstreamReport(deps, { ...at, through: 5 });
        expect(older.current?.revision).toBe(5);
        expect(older.revisions.map((r) => r.revision)).toEqual([5, 4, 3, 2, 1]);
        await expectBatonError(readWorkstreamReport(deps, { ...at, through: 24 }), 'invalid_input');
      });

      it('never shows a revision committed after the selection was frozen', async () => {
        await publish(1);
        // A store that lets another writer commit right after the report reads the head.
        let raced = false;
        const racing = withOverrides(deps.store, {
          revisionHead: async (scope) => {
            const head = await deps.store.revisionHead(scope);
            if (!raced) {
              raced = true;
              const prepared = await prepareHandoff(deps, { ...at, ...handoff(99) });
              await commitHandoff(deps, { ...at, prepared: prepared.digest, expected_head: head });
            }
            return head;
          },
        });
        const report = await readWorkstreamReport({ ...deps, store: racing }, at);
        expect(await deps.store.revisionHead(at)).toBe(2);
        expect(report.selection).toMatchObject({ revision: 1 });
        expect(report.revision_count).toBe(1);
        expect(report.revisions.map((r) => r.revision)).toEqual([1]);
        expect(report.continuity.current?.revision).toBe(1);
        expect(JSON.stringify(report)).not.toContain('(99)');
      });

      it('lists every workstream of the project, and renders Markdown a person can read', async () => {
        await publish(1);
        await captureSource(deps, { project_id, scope_id: 'empty', source_id: 'n', content: 'x' });
        const report = await readReport(deps, { project_id });
        expect(report.workstreams.map((w) => [w.scope_id, w.revision_count])).toEqual([
          ['auto-refresh', 1],
          ['empty', 0],
        ]);
        const markdown = workstreamMarkdown(report.workstreams[0]!);
        expect(markdown).toContain('## Next action');
        expect(markdown).toContain(
          '> Fix the comparison between the frozen selection and the current revision',
        );
        expect(markdown).toContain('## Not included (omissions)');
        expect(markdown).toContain('- **Remote CI is unavailable in the current environment**');
        expect(markdown.indexOf('Next action')).toBeLessThan(markdown.indexOf('Where the work stands'));
        expect(markdown).toContain('untrusted history');
        expect(reportMarkdown(report)).toContain('No handoff has been committed here yet.');
      });
    });

    it('any interleaving of committers yields revisions 1..M, each prepared digest at most once', async () => {
      let run = 0;
      await fc.assert(
        fc.asyncProperty(fc.scheduler(), fc.integer({ min: 2, max: 5 }), async (s, committers) => {
          run += 1;
          const scope = { project_id, scope_id: `race-${run}` };
          const scheduledCommit = s.scheduleFunction(
            (
              k: typeof scope,
              e: number,
              b: JsonObject,
            ): Promise<{ revision: Revision } | { error: unknown }> =>
              deps.store.commitRevision(k, e, b).then(
                (revision) => ({ revision }),
                (error: unknown) => ({ error }),
              ),
          );
          const scheduled: AppDeps = {
            ...deps,
            store: withOverrides(deps.store, {
              revisionHead: s.scheduleFunction((k: typeof scope) => deps.store.revisionHead(k)),
              // The scheduler sees a settled outcome, so a conflict is not an unhandled rejection.
              commitRevision: async (k: typeof scope, e: number, b: JsonObject) => {
                const outcome = await scheduledCommit(k, e, b);
                if ('error' in outcome) throw outcome.error;
                return outcome.revision;
              },
            }),
          };
          const committer = async (who: number) => {
            for (let attempt = 0; attempt < 3; attempt += 1) {
              const prepared = await prepareHandoff(scheduled, { ...scope, ...handoff(who * 10 + attempt) });
              const input = {
                ...scope,
                prepared: prepared.digest,
                expected_head: prepared.prepared_handoff.base_revision,
              };
              try {
                await commitHandoff(scheduled, input);
                await commitHandoff(scheduled, input); // a retry after an unconfirmed commit
                return;
              } catch (error) {
                if (!(error instanceof BatonError) || error.code !== 'revision_conflict') throw error;
              }
            }
          };
          const all = Promise.all(Array.from({ length: committers }, (_, who) => committer(who)));
          await s.waitFor(all);
          const head = await deps.store.revisionHead(scope);
          const revisions = head === 0 ? [] : await deps.store.listRevisions(scope, { limit: 1000 });
          expect(revisions.map((r) => r.revision).sort((a, b) => a - b)).toEqual(
            Array.from({ length: head }, (_, n) => n + 1),
          );
          expect(new Set(revisions.map((r) => r.prepared_digest)).size).toBe(revisions.length);
          expect(head).toBeGreaterThanOrEqual(1);
        }),
        { numRuns: backend.name === 'sqlite' ? 40 : 15 },
      );
    });
  });
}

describe('citation checks', () => {
  it('never read a citation into another scope', async () => {
    const citation: SourceRef = { scope_id: 'elsewhere', source_id: 's', digest: sha256Digest('x') };
    let reads = 0;
    const check = await checkCitation('here', { location: 'next_action.citations.0', citation }, () => {
      reads += 1;
      return Promise.resolve({ status: 'available' as const });
    });
    expect(check).toEqual({
      location: 'next_action.citations.0',
      citation,
      status: 'unavailable',
      reason: 'other_scope',
    });
    expect(reads).toBe(0);
  });

  it('reads each distinct citation once and answers every location in order', async () => {
    const boundary: SourceRef = { scope_id: 'here', source_id: 'boundary', digest: sha256Digest('b') };
    const log: SourceRef = { scope_id: 'here', source_id: 'log', digest: sha256Digest('l') };
    const stale: SourceRef = { ...log, digest: sha256Digest('other') };
    const read: SourceRef[] = [];
    const checks = await checkCitations(
      'here',
      [
        { location: 'statements.0.citations.0', citation: boundary },
        { location: 'statements.1.citations.0', citation: log },
        { location: 'statements.1.citations.1', citation: boundary },
        { location: 'statements.2.citations.0', citation: stale },
        { location: 'next_action.citations.0', citation: boundary },
      ],
      (ref) => {
        read.push(ref);
        return Promise.resolve(
          ref.digest === stale.digest
            ? { status: 'unavailable' as const, reason: 'digest_mismatch' as const }
            : { status: 'available' as const },
        );
      },
    );
    expect(read).toEqual([boundary, log, stale]);
    expect(checks.map((check) => [check.location, check.status])).toEqual([
      ['statements.0.citations.0', 'available'],
      ['statements.1.citations.0', 'available'],
      ['statements.1.citations.1', 'available'],
      ['statements.2.citations.0', 'unavailable'],
      ['next_action.citations.0', 'available'],
    ]);
  });
});
