import { describe, expect, it } from 'vitest';
import { fixedClock } from '../src/core/clock.ts';
import { BatonError, errorCodes, isBatonError } from '../src/core/errors.ts';
import { uuidv7Generator, uuidv7Pattern } from '../src/core/ids.ts';

describe('time-ordered ids', () => {
  it('are UUIDv7 carrying the injected clock time', () => {
    const clock = fixedClock('2026-12-02T16:00:00.000Z');
    const id = uuidv7Generator(clock)();
    expect(id).toMatch(uuidv7Pattern);
    const ms = parseInt(id.replace(/-/g, '').slice(0, 12), 16);
    expect(ms).toBe(Date.parse('2026-12-02T16:00:00.000Z'));
  });

  it('strictly increase within one millisecond and when the clock steps back', () => {
    const clock = fixedClock('2026-12-02T16:00:00.000Z');
    const next = uuidv7Generator(clock);
    const ids: string[] = [];
    for (let n = 0; n < 5000; n += 1) ids.push(next());
    clock.advance(-60_000);
    for (let n = 0; n < 100; n += 1) ids.push(next());
    clock.advance(120_000);
    ids.push(next());
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('BatonError', () => {
  it('carries a stable code and structured data', () => {
    const error = new BatonError('revision_conflict', 'head moved', {
      scope_id: 's',
      expected_head: 1,
      actual_head: 2,
    });
    expect(error).toBeInstanceOf(Error);
    expect(isBatonError(error, 'revision_conflict')).toBe(true);
    expect(isBatonError(error, 'conflict')).toBe(false);
    expect(JSON.parse(JSON.stringify(error))).toEqual({
      code: 'revision_conflict',
      message: 'head moved',
      data: { scope_id: 's', expected_head: 1, actual_head: 2 },
    });
  });

  it('has every code the surfaces map', () => {
    expect(errorCodes).toEqual(
      expect.arrayContaining([
        'invalid_input',
        'not_found',
        'conflict',
        'revision_conflict',
        'precondition_failed',
        'unauthorized',
        'forbidden',
        'payload_too_large',
        'unavailable',
      ]),
    );
  });
});
