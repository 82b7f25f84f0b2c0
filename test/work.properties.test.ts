/**
 * Properties of the work projector over all event sequences: projecting the same entries
 * twice gives the same state, and no sequence of model-authored events reaches succeeded or
 * completed, whatever the model proposes.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BatonError } from '../src/core/errors.ts';
import {
  actorTypes,
  contractStatuses,
  verdicts,
  workEventSchema,
  workItemStatuses,
  type ActorType,
  type WorkEventInput,
} from '../src/core/work/model.ts';
import { projectWork, WorkProjector } from '../src/core/work/projector.ts';
import { contract, ev, event, ledger } from './helpers/work.ts';

const items = ['inspect', 'implement', 'ghost'] as const;
const criteria = ['inspected', 'tests', 'ghost'] as const;

function proposal(actors: readonly ActorType[]) {
  const actor = fc.constantFrom(...actors);
  return fc.oneof(
    fc
      .record({
        item: fc.constantFrom(...items),
        from: fc.constantFrom(...workItemStatuses),
        to: fc.constantFrom(...workItemStatuses),
        attempt: fc.integer({ min: 1, max: 3 }),
        actor,
      })
      .map(({ item, from, to, attempt, actor: who }) => ev.item(item, from, to, who, attempt)),
    fc
      .record({ from: fc.constantFrom(...contractStatuses), to: fc.constantFrom(...contractStatuses), actor })
      .map(({ from, to, actor: who }) => ev.status(from, to, who)),
    fc
      .record({ criterion: fc.constantFrom(...criteria), verdict: fc.constantFrom(...verdicts), actor })
      .map(({ criterion, verdict, actor: who }) => ev.verdict(criterion, verdict, null, who)),
    fc
      .record({ item: fc.constantFrom(...items), actor })
      .map(({ item, actor: who }) =>
        event(
          { type: 'evidence_attached', item_id: item, evidence: { type: 'child_session', session_id: 'c' } },
          { actor: who },
        ),
      ),
    fc
      .record({ revision: fc.integer({ min: 1, max: 3 }), actor })
      .map(({ revision, actor: who }) => ev.revised(contract({ revision: revision + 1 }), revision, who)),
  );
}

/** Apply proposals one by one as the app does: a refused proposal is dropped, never written. */
function accept(
  start: WorkEventInput[],
  proposals: WorkEventInput[],
): { accepted: WorkEventInput[]; seen: WorkProjector } {
  const projector = new WorkProjector();
  const accepted: WorkEventInput[] = [];
  for (const candidate of [...start, ...proposals]) {
    const position = accepted.length + 1;
    try {
      projector.applyEvent(workEventSchema.parse(candidate), position, '2026-12-02T09:00:00.000Z');
      accepted.push(candidate);
    } catch (error) {
      if (!(error instanceof BatonError)) throw error;
      // A refused proposal may have been applied halfway: rebuild from what was accepted.
      const rebuilt = new WorkProjector();
      accepted.forEach((event_, index) =>
        rebuilt.applyEvent(workEventSchema.parse(event_), index + 1, '2026-12-02T09:00:00.000Z'),
      );
      Object.assign(projector, rebuilt);
    }
  }
  return { accepted, seen: projector };
}

const start = [ev.created(), ev.status('draft', 'active', 'human'), ev.item('inspect', 'proposed', 'ready')];

describe('work projection properties', () => {
  it('projection is deterministic: the same entries, projected twice or after a JSON round trip, give the same state', () => {
    fc.assert(
      fc.property(fc.array(proposal(actorTypes), { maxLength: 60 }), (proposals) => {
        const { accepted } = accept(start, proposals);
        const entries = ledger(...accepted);
        const once = projectWork(entries);
        const twice = projectWork(entries);
        const copied = projectWork(JSON.parse(JSON.stringify(entries)) as typeof entries);
        expect(once.ok).toBe(true);
        expect(twice).toEqual(once);
        expect(copied).toEqual(once);
      }),
      { numRuns: 200 },
    );
  });

  it('no sequence of model-authored events reaches succeeded or completed', () => {
    fc.assert(
      fc.property(fc.array(proposal(['model']), { maxLength: 80 }), (proposals) => {
        const { accepted } = accept(start, proposals);
        for (let end = start.length; end <= accepted.length; end += 1) {
          const result = projectWork(ledger(...accepted.slice(0, end)));
          if (!result.ok) throw result.error;
          for (const state of result.projection!.contracts) {
            expect(state.status).not.toBe('completed');
            for (const item of state.items) expect(item.status).not.toBe('succeeded');
            for (const criterion of state.criteria) expect(criterion.result).toBeNull();
          }
        }
      }),
      { numRuns: 200 },
    );
  });

  it('accepted sequences from any actor never complete a contract with an unfinished required item', () => {
    fc.assert(
      fc.property(fc.array(proposal(actorTypes), { maxLength: 120 }), (proposals) => {
        const { accepted } = accept(start, proposals);
        const result = projectWork(ledger(...accepted));
        if (!result.ok) throw result.error;
        for (const state of result.projection!.contracts) {
          if (state.status !== 'completed') continue;
          expect(state.items.every((item) => item.status === 'succeeded')).toBe(true);
          expect(state.criteria.every((criterion) => criterion.result?.verdict === 'passed')).toBe(true);
        }
      }),
      { numRuns: 200 },
    );
  });
});
