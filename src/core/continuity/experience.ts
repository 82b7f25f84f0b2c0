/**
 * Experience incubation: every valid Task Outcome drafts one pending Candidate, deterministically,
 * citing the outcome. Only a Review approves or rejects it. Pure: candidates are a projection of
 * outcome and review sources, rebuilt from the journal at any time.
 */
import { z } from 'zod';
import { BatonError } from '../errors.ts';
import { sha256Digest } from '../canonical.ts';
import { sourceIdSchema } from '../ledger/names.ts';
import { sourceRefSchema, type SourceRef } from '../ledger/source.ts';
import { recordSchema } from '../records.ts';
import { workText } from './claims.ts';
import { sameRef, type ValidWorkRecord } from './projection.ts';
import { managedWorkSourceIdPrefix, type TaskOutcome } from './records.ts';

export const reviewKind = 'experience-review';

export const reviewSchema = recordSchema('baton.experience-review/v1', {
  candidate: sourceRefSchema,
  decision: z.enum(['approved', 'rejected']),
  note: workText(),
  reviewer: z.string().max(200).optional(),
});

export type ExperienceReview = z.output<typeof reviewSchema>;

const reviewSourceIdPrefix = 'experience-review:';

/** The review of an outcome is stored under a source_id derived from it: one review per candidate. */
export function reviewSourceId(candidate: SourceRef): string {
  return `${reviewSourceIdPrefix}${sha256Digest(candidate.source_id).slice('sha256:'.length)}`;
}

export { managedWorkSourceIdPrefix };

/** Prefixes of the source ids only Baton writes, each with its one writer. */
const reservedPrefixes = [
  [reviewSourceIdPrefix, 'review_experience'],
  [managedWorkSourceIdPrefix, "the managed-work runtime (a bound session's outcomes)"],
] as const;

const reservedOnly = `source ids starting ${reservedPrefixes
  .map(([prefix, writer]) => `${prefix} are written only by ${writer}`)
  .join(', and ')}`;

/**
 * The source_id of anything Baton does not write itself: a source stored under a review's id
 * first would hold the candidate's one review slot, and the candidate could never be reviewed;
 * one under a bound session's outcome id would refuse that outcome.
 */
export const ownSourceIdSchema = sourceIdSchema.regex(
  new RegExp(`^(?!${reservedPrefixes.map(([prefix]) => prefix).join('|')})`),
  reservedOnly,
);

/** ownSourceIdSchema's rule, for a caller that has no schema for the source_id. */
export function requireOwnSourceId(source_id: string, what: string): void {
  if (!reservedPrefixes.some(([prefix]) => source_id.startsWith(prefix))) return;
  throw new BatonError('invalid_input', `${what} is invalid at source_id: ${reservedOnly}`, {
    issues: [{ path: 'source_id', message: reservedOnly }],
  });
}

export interface Candidate {
  /** The Task Outcome the candidate was drafted from: its identity. */
  readonly candidate: SourceRef;
  readonly status: 'pending' | 'approved' | 'rejected';
  readonly draft: {
    readonly objective: string;
    readonly outcome_status: TaskOutcome['status'];
    readonly lesson: string;
    readonly checks: readonly { name: string; status: string; basis: string }[];
    readonly remaining_work: readonly string[];
  };
  readonly review: { readonly ref: SourceRef; readonly decision: string; readonly note: string } | null;
  readonly trust: 'untrusted_observation';
}

/** The draft is a pure function of the outcome: the same outcome always drafts the same text. */
export function draftCandidate(outcome: TaskOutcome): Candidate['draft'] {
  const checks = outcome.checks.map((check) => ({
    name: check.name,
    status: check.status,
    basis: check.basis,
  }));
  const checkText = checks.length
    ? ` Checks: ${checks.map((check) => `${check.name} ${check.status} (${check.basis})`).join('; ')}.`
    : ' No checks were recorded.';
  return {
    objective: outcome.objective,
    outcome_status: outcome.status,
    lesson: `When working on "${outcome.objective}", the attempt ended ${outcome.status}: ${outcome.summary}.${checkText}`,
    checks,
    remaining_work: outcome.remaining_work,
  };
}

export interface ReviewRecord {
  readonly source_ref: SourceRef;
  readonly review: ExperienceReview;
}

export function projectCandidates(
  records: readonly ValidWorkRecord[],
  reviews: readonly ReviewRecord[],
): Candidate[] {
  return records.flatMap((record) => {
    if (record.work.kind !== 'task-outcome') return [];
    const review = reviews.find((r) => sameRef(r.review.candidate, record.source_ref));
    return [
      {
        candidate: record.source_ref,
        status: review ? review.review.decision : 'pending',
        draft: draftCandidate(record.work.record),
        review: review
          ? { ref: review.source_ref, decision: review.review.decision, note: review.review.note }
          : null,
        trust: 'untrusted_observation' as const,
      },
    ];
  });
}
