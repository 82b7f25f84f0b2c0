import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deepFreeze, jsonIssue } from '../src/core/json.ts';

describe('jsonIssue', () => {
  it('accepts every JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(jsonIssue(value)).toBeUndefined();
      }),
    );
  });

  it('accepts the same object twice when it is not a cycle', () => {
    const shared = { a: 1 };
    expect(jsonIssue({ x: shared, y: [shared, shared] })).toBeUndefined();
  });

  it('names the path of what JSON cannot carry', () => {
    const cyclic: Record<string, unknown> = { a: [1] };
    (cyclic.a as unknown[]).push(cyclic);
    const cases: [unknown, (string | number)[]][] = [
      [{ a: { b: [1, Number.NaN] } }, ['a', 'b', 1]],
      [{ a: undefined }, ['a']],
      [[Infinity], [0]],
      [{ s: 'ok', t: '\ud800' }, ['t']],
      [{ when: new Date(0) }, ['when']],
      [{ f: () => 1 }, ['f']],
      [{ n: 10n }, ['n']],
      [cyclic, ['a', 1]],
    ];
    for (const [value, path] of cases) expect(jsonIssue(value)?.path).toEqual(path);
  });
});

describe('jsonIssue on deep values', () => {
  it('walks a 100,000-deep array in linear time and still names the path', () => {
    let deep: unknown = Number.NaN;
    for (let n = 0; n < 100_000; n += 1) deep = [deep];
    const issue = jsonIssue(deep);
    expect(issue?.path).toHaveLength(100_000);
    expect(issue?.message).toContain('NaN');
  });
});

describe('deepFreeze', () => {
  it('freezes a value and everything inside it, and returns it', () => {
    const value = { a: [{ b: 1 }], c: { d: 'x' } };
    expect(deepFreeze(value)).toBe(value);
    expect(Object.isFrozen(value.a[0])).toBe(true);
    expect(Object.isFrozen(value.c)).toBe(true);
    expect(() => {
      (value.a as unknown[]).push(2);
    }).toThrow(TypeError);
  });
});
