import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson, digestOf } from '../src/core/canonical.ts';
import { BatonError } from '../src/core/errors.ts';
import type { JsonValue } from '../src/core/json.ts';
import type { ScopeKey } from '../src/core/ledger/names.ts';
import { tempSqliteStore } from './helpers/sqlite.ts';

/** Shuffle the keys of every object in a JSON value, deeply. */
function shuffleKeys(value: JsonValue, seed: number): JsonValue {
  if (Array.isArray(value)) return value.map((item: JsonValue, i) => shuffleKeys(item, seed + i));
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value);
  const order = keys.map((key, i) => ({ key, rank: Math.sin(seed * 9973 + i) }));
  order.sort((a, b) => a.rank - b.rank);
  // fromEntries defines own properties, so a key such as "__proto__" stays an ordinary key.
  return Object.fromEntries(
    order.map(({ key }) => [key, shuffleKeys((value as Record<string, JsonValue>)[key]!, seed + 1)]),
  );
}

const jsonValue = fc.jsonValue() as fc.Arbitrary<JsonValue>;

describe('canonical digests', () => {
  it('do not depend on key order', () => {
    fc.assert(
      fc.property(jsonValue, fc.integer(), (value, seed) => {
        const shuffled = shuffleKeys(value, seed);
        expect(canonicalJson(shuffled)).toBe(canonicalJson(value));
        expect(digestOf(shuffled)).toBe(digestOf(value));
      }),
      { numRuns: 1000 },
    );
  });

  it('differ when the value differs', () => {
    fc.assert(
      fc.property(jsonValue, jsonValue, (a, b) => {
        fc.pre(canonicalJson(a) !== canonicalJson(b));
        expect(digestOf(a)).not.toBe(digestOf(b));
      }),
      { numRuns: 200 },
    );
  });
});

describe('idempotent capture', () => {
  let harness: Awaited<ReturnType<typeof tempSqliteStore>>;
  let run = 0;

  beforeAll(async () => {
    harness = await tempSqliteStore();
    await harness.store.createProject('prop');
  });
  afterAll(() => harness.dispose());

  it('stores one entry per distinct source_id, repeats return the identical receipt, changes conflict', async () => {
    const capture = fc.record({
      id: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'),
      content: fc.oneof(fc.constantFrom<JsonValue>('x', 'y'), jsonValue),
      seed: fc.integer(),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(capture, { minLength: 1, maxLength: 25 }), async (captures) => {
        run += 1;
        const scope: ScopeKey = { project_id: 'prop', scope_id: `run-${run}` };
        const first = new Map<string, { content: JsonValue; receipt: string }>();
        for (const { id, content, seed } of captures) {
          const known = first.get(id);
          const attempt = harness.store.captureSource(scope, {
            source_id: id,
            content: shuffleKeys(content, seed),
            metadata: { kind: 'note' },
          });
          if (!known) {
            first.set(id, { content, receipt: JSON.stringify(await attempt) });
          } else if (canonicalJson(known.content) === canonicalJson(content)) {
            expect(JSON.stringify(await attempt)).toBe(known.receipt);
          } else {
            const error = await attempt.then(
              () => undefined,
              (e: unknown) => e,
            );
            expect(error).toBeInstanceOf(BatonError);
            expect((error as BatonError).code).toBe('conflict');
            expect((error as BatonError).data.existing_digest).toBe(
              (JSON.parse(known.receipt) as { digest: string }).digest,
            );
          }
        }
        const stream = await harness.store.getStream({ ...scope, kind: 'scope' });
        expect(stream.head).toBe(first.size);
      }),
      { numRuns: 60 },
    );
  });
});
