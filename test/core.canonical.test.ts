import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { canonicalJson, digestOf, sha256Digest } from '../src/core/canonical.ts';
import { BatonError } from '../src/core/errors.ts';
import { entryBody } from '../src/core/ledger/entry.ts';
import { entryLine, entryLineSchema, exportHeaderSchema, headerLine } from '../src/core/ledger/jsonl.ts';
import type { StreamKey } from '../src/core/ledger/names.ts';

const fixtures = join(import.meta.dirname, 'fixtures');

function load<T>(path: string): T {
  return JSON.parse(readFileSync(join(fixtures, path), 'utf8')) as T;
}

describe('canonical JSON (RFC 8785)', () => {
  it('matches the RFC 8785 §3.2.2 sample byte for byte', () => {
    const input = JSON.parse(
      '{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],' +
        '"string":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/","literals":[null,true,false]}',
    ) as unknown;
    expect(canonicalJson(input)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],' +
        '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it('writes digests as sha256:<hex> of the canonical text', () => {
    expect(digestOf({ b: 1, a: 2 })).toBe(sha256Digest('{"a":2,"b":1}'));
    expect(sha256Digest('')).toBe('sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('refuses values JSON cannot carry', () => {
    for (const bad of [Number.NaN, Infinity, undefined, '\ud800']) {
      expect(() => canonicalJson(bad)).toThrow(BatonError);
    }
  });

  describe('frozen golden fixtures: a failure here means a digest changed', () => {
    for (const file of readdirSync(join(fixtures, 'canonical/v1'))) {
      it(`canonical/v1/${file}`, () => {
        const fixture = load<{ value: unknown; canonical: string; digest: string }>(`canonical/v1/${file}`);
        expect(canonicalJson(fixture.value)).toBe(fixture.canonical);
        expect(digestOf(fixture.value)).toBe(fixture.digest);
      });
    }

    for (const file of readdirSync(join(fixtures, 'baton.entry/v1'))) {
      it(`baton.entry/v1/${file} still parses and re-exports to the same bytes`, () => {
        const fixture = load<{ line: string; digest: string }>(`baton.entry/v1/${file}`);
        const entry = entryLineSchema.parse(JSON.parse(fixture.line));
        expect(entry.digest).toBe(fixture.digest);
        if (entry.content !== null && entry.metadata !== null) {
          expect(sha256Digest(entryBody(entry.content, entry.metadata))).toBe(fixture.digest);
        }
        const stream: StreamKey = { project_id: 'acme', kind: 'scope', scope_id: 'auto-refresh' };
        expect(entryLine({ ...entry, stream, global_seq: 1 })).toBe(fixture.line);
      });
    }

    it('baton.ledger-export/v1/header.json', () => {
      const fixture = load<{ line: string }>('baton.ledger-export/v1/header.json');
      const header = exportHeaderSchema.parse(JSON.parse(fixture.line));
      expect(headerLine(header.stream, header.head)).toBe(fixture.line);
    });
  });
});
