import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BatonError } from '../src/core/errors.ts';
import { parseRecord, recordSchema } from '../src/core/records.ts';

// Version 1 of a record, and the same record after a later release added an optional field.
const noteV1 = recordSchema('baton.note/v1', { text: z.string() });
const noteV1Later = recordSchema('baton.note/v1', {
  text: z.string(),
  labels: z.array(z.string()).default([]),
});

describe('record schema conventions', () => {
  it('carry a versioned schema id and refuse another', () => {
    expect(parseRecord(noteV1, { schema: 'baton.note/v1', text: 'hi' }, 'note')).toEqual({
      schema: 'baton.note/v1',
      text: 'hi',
    });
    let caught: unknown;
    try {
      parseRecord(noteV1, { schema: 'baton.note/v2', text: 'hi' }, 'note');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(BatonError);
    expect((caught as BatonError).code).toBe('invalid_input');
    expect((caught as BatonError).data.issues).toEqual([expect.objectContaining({ path: 'schema' })]);
  });

  it('read old records: a new optional field gets its default', () => {
    const old = { schema: 'baton.note/v1', text: 'written before labels existed' };
    expect(parseRecord(noteV1Later, old, 'note')).toEqual({ ...old, labels: [] });
  });

  it('preserve unknown fields instead of rejecting them', () => {
    const newer = { schema: 'baton.note/v1', text: 'hi', written_by_a_newer_baton: { x: 1 } };
    expect(parseRecord(noteV1, newer, 'note')).toEqual(newer);
  });

  it('name the path of what is wrong', () => {
    expect(() => parseRecord(noteV1, { schema: 'baton.note/v1', text: 7 }, 'note')).toThrow(
      /note is invalid at text/,
    );
  });

  it('refuse a schema id that is not baton.<name>/v<N>', () => {
    expect(() => recordSchema('baton.Note/1' as never, {})).toThrow();
  });
});
