/**
 * One send attempt of the sender card: handoff_current_work, then commit_handoff. The attempt
 * keeps one source_id for as long as the draft it sends is unchanged, and once a Prepared
 * Handoff exists, a retry publishes that same one: never another boundary source. The commit
 * expects the revision the workspace shows, so a draft is never published over a revision its
 * sender has not seen.
 */
import { ApiError, type Api } from './api.ts';
import { boundaryInput, cardField, sendKey, type Draft } from './draft.ts';
import { fieldErrors, issuesOf } from './issues.ts';
import { newAttemptId } from './ids.ts';
import type { CommitResult } from './types.ts';

export interface SendAttempt {
  readonly source_id: string;
  /** What this attempt sends; an edited draft starts a new attempt. */
  readonly key: string;
  readonly prepared?: {
    readonly digest: string;
    readonly base_revision: number;
    readonly boundary_position: number;
  };
  readonly phase: 'preparing' | 'committing' | 'partial' | 'head_moved' | 'failed';
  /** What failed (rendered with failureText, in the page's language when shown). */
  readonly failure?: unknown;
  /** With failed: what the server refused, by the card's field (see cardField). */
  readonly fields?: Readonly<Record<string, string>>;
  /** With head_moved: the revision someone else published first. */
  readonly head?: number;
}

export interface SendRequest {
  readonly api: Api;
  readonly scope_id: string;
  readonly draft: Draft;
  /** The revision the workspace shows (0 for none): the only head this send publishes on. */
  readonly shown: number;
  readonly previous: SendAttempt | undefined;
  readonly update: (attempt: SendAttempt) => void;
}

/** Publish the prepared handoff of an attempt; the same request again is safe (commit is idempotent). */
export async function publish(
  request: Pick<SendRequest, 'api' | 'scope_id' | 'update'>,
  attempt: SendAttempt,
): Promise<CommitResult | null> {
  const prepared = attempt.prepared;
  if (!prepared) return null;
  request.update({ ...attempt, phase: 'committing', failure: undefined });
  try {
    return await request.api.commit(request.scope_id, prepared.digest, prepared.base_revision);
  } catch (error) {
    if (error instanceof ApiError && error.code === 'revision_conflict') {
      const head = Number(error.details.actual_head);
      request.update({ ...attempt, phase: 'head_moved', head, failure: error });
    } else {
      request.update({ ...attempt, phase: 'partial', failure: error });
    }
    return null;
  }
}

export async function send(request: SendRequest): Promise<CommitResult | null> {
  const { api, scope_id, draft, shown, previous, update } = request;
  const key = sendKey(draft, scope_id);
  let attempt: SendAttempt =
    previous && previous.key === key
      ? previous
      : { source_id: newAttemptId('web-boundary'), key, phase: 'preparing' };
  if (!attempt.prepared || attempt.prepared.base_revision !== shown) {
    update({ ...attempt, phase: 'preparing', failure: undefined, fields: undefined });
    try {
      // The same source_id and content again returns the stored boundary: a retry stores nothing new.
      const result = await api.prepareCurrent(boundaryInput(draft, scope_id, attempt.source_id));
      attempt = {
        ...attempt,
        prepared: {
          digest: result.digest,
          base_revision: result.prepared_handoff.base_revision,
          boundary_position: result.boundary_receipt.position,
        },
      };
    } catch (error) {
      const fields = fieldErrors(issuesOf(error), (path) => cardField(path, draft));
      update({ ...attempt, phase: 'failed', failure: error, fields });
      return null;
    }
  }
  const prepared = attempt.prepared!;
  if (prepared.base_revision !== shown) {
    update({ ...attempt, phase: 'head_moved', head: prepared.base_revision });
    return null;
  }
  return publish(request, attempt);
}
