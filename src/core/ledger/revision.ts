/** Handoff Revisions: per scope, immutable, numbered 1..N, each naming a Prepared Handoff by digest. */
import type { Digest } from '../canonical.ts';
import { BatonError } from '../errors.ts';

export interface Revision {
  readonly scope_id: string;
  readonly revision: number;
  readonly prepared_digest: Digest;
  readonly committed_at: string;
}

export function revisionConflict(scope_id: string, expected_head: number, actual_head: number): BatonError {
  return new BatonError(
    'revision_conflict',
    `the handoff head of ${scope_id} is ${actual_head}, not ${expected_head}; Continue the latest revision first`,
    { scope_id, expected_head, actual_head },
  );
}

export function checkExpectedHead(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new BatonError(
      'invalid_input',
      'expected_head is a whole number >= 0 (0 when no revision exists)',
      {
        expected_head: value,
      },
    );
  }
  return value;
}
