/**
 * Experience incubation and PreparedContext: list candidates drafted from Task Outcomes, review
 * them, and bundle the approved ones with the current handoff and the active work contract.
 * One successful attempt never reaches PreparedContext on its own.
 */
import { z } from 'zod';
import { BatonError, isBatonError } from '../core/errors.ts';
import {
  projectCandidates,
  reviewKind,
  reviewSchema,
  reviewSourceId,
  type Candidate,
  type ReviewRecord,
} from '../core/continuity/experience.ts';
import { readWorkEntries, type ValidWorkRecord } from '../core/continuity/projection.ts';
import { readWorkRecord, workKinds, type WorkContract } from '../core/continuity/records.ts';
import type { PreparedHandoff } from '../core/handoff/prepared.ts';
import type { Digest } from '../core/canonical.ts';
import type { Entry } from '../core/ledger/entry.ts';
import { scopeIdSchema } from '../core/ledger/names.ts';
import type { SourceReceipt, SourceRef } from '../core/ledger/source.ts';
import { parseRecord } from '../core/records.ts';
import type { AppDeps } from './deps.ts';
import { readPreparedHandoff } from './handoffs.ts';

/** Entries of the given kinds in a scope; none when the scope has no stream yet. */
export async function readKinds(
  deps: AppDeps,
  scope: { project_id: string; scope_id: string },
  kinds: readonly string[],
): Promise<Entry[]> {
  const entries: Entry[] = [];
  try {
    for await (const entry of deps.store.readStream({ ...scope, kind: 'scope' }, { kinds }))
      entries.push(entry);
  } catch (error) {
    if (!isBatonError(error, 'not_found') || !('scope_id' in error.data)) throw error;
  }
  return entries;
}

function reviewsOf(scope_id: string, entries: readonly Entry[]): ReviewRecord[] {
  return entries.flatMap((entry) => {
    if (entry.metadata?.kind !== reviewKind || entry.retracted || entry.source_id === null) return [];
    const parsed = reviewSchema.safeParse(entry.content);
    return parsed.success
      ? [{ source_ref: { scope_id, source_id: entry.source_id, digest: entry.digest }, review: parsed.data }]
      : [];
  });
}

async function scopeRecords(
  deps: AppDeps,
  scope: { project_id: string; scope_id: string },
): Promise<{ records: ValidWorkRecord[]; reviews: ReviewRecord[] }> {
  const entries = await readKinds(deps, scope, [...workKinds, reviewKind]);
  return {
    records: readWorkEntries(scope.scope_id, entries).records,
    reviews: reviewsOf(scope.scope_id, entries),
  };
}

async function scopesOf(deps: AppDeps, project_id: string, scope_id?: string): Promise<string[]> {
  if (scope_id !== undefined) return [scope_id];
  const streams = await deps.store.listStreams(project_id);
  return streams.flatMap((info) => (info.stream.kind === 'scope' ? [info.stream.scope_id] : []));
}

/** Candidates of a scope, or of every scope of the project, in journal order. */
export async function listExperienceCandidates(
  deps: AppDeps,
  input: { project_id: string; scope_id?: string },
): Promise<Candidate[]> {
  await deps.store.getProject(input.project_id);
  const all: Candidate[] = [];
  for (const scope_id of await scopesOf(deps, input.project_id, input.scope_id)) {
    const { records, reviews } = await scopeRecords(deps, { project_id: input.project_id, scope_id });
    all.push(...projectCandidates(records, reviews));
  }
  return all;
}

/** The review's own fields are the stored record's, so the input promises what is stored. */
export const reviewInput = z.strictObject({
  project_id: z.string(),
  scope_id: scopeIdSchema,
  candidate: reviewSchema.shape.candidate.describe('A task outcome source in scope_id.'),
  decision: reviewSchema.shape.decision,
  note: reviewSchema.shape.note,
  reviewer: reviewSchema.shape.reviewer,
});

/** A human review approves or rejects one candidate, once; the same review again is a no-op. */
export async function reviewExperience(
  deps: AppDeps,
  input: unknown,
): Promise<{ receipt: SourceReceipt; candidate: Candidate }> {
  const parsed = parseRecord(reviewInput, input, 'experience review');
  const { project_id, scope_id, candidate, ...fields } = parsed;
  const record = parseRecord(
    reviewSchema,
    { schema: 'baton.experience-review/v1', candidate, ...fields },
    'experience review',
  );
  if (candidate.scope_id !== scope_id) {
    throw new BatonError(
      'invalid_input',
      `experience review is invalid at candidate: it is not in scope ${scope_id}`,
      {
        issues: [{ path: 'candidate', message: 'citation into another scope' }],
      },
    );
  }
  const entry = await deps.store.readSource(project_id, candidate);
  if (entry.metadata?.kind !== 'task-outcome' || !readWorkRecord('task-outcome', entry.content)) {
    throw new BatonError(
      'invalid_input',
      'experience review is invalid at candidate: only a valid task-outcome source is a candidate',
      {
        issues: [{ path: 'candidate', message: 'not a task outcome' }],
      },
    );
  }
  let receipt: SourceReceipt;
  try {
    receipt = await deps.store.captureSource(
      { project_id, scope_id },
      { source_id: reviewSourceId(candidate), content: record, metadata: { kind: reviewKind } },
    );
  } catch (error) {
    if (isBatonError(error, 'conflict')) {
      throw new BatonError(
        'conflict',
        'this candidate has been reviewed already, with another decision or note',
        {
          candidate,
          existing_digest: error.data.existing_digest,
        },
      );
    }
    throw error;
  }
  const [reviewed] = (await listExperienceCandidates(deps, { project_id, scope_id })).filter(
    (c) => c.candidate.source_id === candidate.source_id && c.candidate.digest === candidate.digest,
  );
  return { receipt, candidate: reviewed! };
}

export interface PreparedContext {
  readonly schema: 'baton.prepared-context/v1';
  readonly project_id: string;
  readonly scope_id: string | null;
  readonly handoff: {
    readonly revision: number;
    readonly digest: Digest;
    readonly handoff: PreparedHandoff;
    readonly trust: 'untrusted_history';
  } | null;
  readonly work_contract: {
    readonly source_ref: SourceRef;
    readonly record: WorkContract;
    readonly trust: 'untrusted_input';
  } | null;
  readonly experience: readonly Candidate[];
}

/**
 * What a participant starting on a scope should read: the current committed handoff, the
 * active (latest valid) work contract and the approved experience. All of it is untrusted.
 */
export async function prepareContext(
  deps: AppDeps,
  input: { project_id: string; scope_id?: string },
): Promise<PreparedContext> {
  const experience = (await listExperienceCandidates(deps, input)).filter((c) => c.status === 'approved');
  if (input.scope_id === undefined) {
    return {
      schema: 'baton.prepared-context/v1',
      project_id: input.project_id,
      scope_id: null,
      handoff: null,
      work_contract: null,
      experience,
    };
  }
  const scope = { project_id: input.project_id, scope_id: input.scope_id };
  const head = await deps.store.revisionHead(scope);
  let handoff: PreparedContext['handoff'] = null;
  if (head > 0) {
    const revision = await deps.store.getRevision(scope, head);
    handoff = {
      revision: head,
      digest: revision.prepared_digest,
      handoff: await readPreparedHandoff(deps.store, scope.project_id, revision.prepared_digest),
      trust: 'untrusted_history',
    };
  }
  const { records } = await scopeRecords(deps, scope);
  const contract = records.filter((r) => r.work.kind === 'work-contract').at(-1);
  return {
    schema: 'baton.prepared-context/v1',
    project_id: input.project_id,
    scope_id: input.scope_id,
    handoff,
    work_contract:
      contract && contract.work.kind === 'work-contract'
        ? { source_ref: contract.source_ref, record: contract.work.record, trust: 'untrusted_input' }
        : null,
    experience,
  };
}
