/**
 * Frozen v1 work records. They were written by this version of Baton; every later version must
 * still read them (the readers keep every schema version), and their digests never change.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { digestOf } from '../src/core/canonical.ts';
import { reviewSchema } from '../src/core/continuity/experience.ts';
import { projectContinuity } from '../src/core/continuity/projection.ts';
import { readWorkRecord, type WorkKind } from '../src/core/continuity/records.ts';

const fixtures = join(import.meta.dirname, 'fixtures');
const schemas = [
  'baton.work-contract/v1',
  'baton.handoff-boundary/v1',
  'baton.handoff-receipt/v1',
  'baton.task-outcome/v1',
  'baton.experience-review/v1',
];

describe('Acceptance: Compatibility — frozen v1 work records stay readable', () => {
  for (const schema of schemas) {
    for (const file of readdirSync(join(fixtures, schema))) {
      it(`${schema}/${file}`, () => {
        const fixture = JSON.parse(readFileSync(join(fixtures, schema, file), 'utf8')) as {
          kind: string;
          content: { schema: string };
          digest: string;
        };
        expect(fixture.content.schema).toBe(schema);
        expect(digestOf({ content: fixture.content, metadata: { kind: fixture.kind } })).toBe(fixture.digest);
        if (fixture.kind === 'experience-review') {
          expect(reviewSchema.safeParse(fixture.content).success).toBe(true);
          return;
        }
        const read = readWorkRecord(fixture.kind as WorkKind, fixture.content);
        expect(read?.kind).toBe(fixture.kind);
        const projected = projectContinuity(
          'auto-refresh',
          [
            {
              stream: { project_id: 'acme', kind: 'scope', scope_id: 'auto-refresh' },
              position: 1,
              global_seq: 1,
              type: 'source',
              source_id: 'fixture',
              digest: fixture.digest as `sha256:${string}`,
              recorded_at: '2026-12-02T16:00:00.000Z',
              content: fixture.content,
              metadata: { kind: fixture.kind },
              retracted: null,
            },
          ],
          null,
        );
        expect(projected.invalid_record_count).toBe(0);
        expect(projected.counts[fixture.kind as WorkKind]).toBe(1);
      });
    }
  }
});
