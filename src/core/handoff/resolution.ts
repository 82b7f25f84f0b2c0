/**
 * Continue: a selection (`latest`, a prepared digest or an exact revision) resolves to one
 * exact handoff and one evidence check per citation. Availability proves a reference is
 * readable with its identity, never that the fact is current: nothing here says verified.
 */
import { z } from 'zod';
import { digestPattern, type Digest } from '../canonical.ts';
import { BatonError } from '../errors.ts';
import type { SourceRef, UnavailableReason } from '../ledger/source.ts';
import type { LocatedCitation, PreparedHandoff } from './prepared.ts';

/**
 * A selection that names one handoff: a prepared digest or an exact revision, never latest
 * (what acknowledge_handoff takes). latest is refused with what to do instead, and the
 * published schema offers only the two exact forms.
 */
export const exactTargetSchema = z.union(
  [
    z.strictObject({
      prepared: z.string().regex(digestPattern, 'a digest is sha256:<64 hex>') as z.ZodType<Digest>,
    }),
    z.strictObject({ exact: z.number().int().min(1) }),
  ],
  {
    error: (issue) =>
      issue.input === 'latest'
        ? 'latest is not an exact target: call continue_handoff first and acknowledge the {exact: revision} or ' +
          '{prepared: digest} it returned, after inspecting it'
        : undefined,
  },
);

export type ExactTarget = z.output<typeof exactTargetSchema>;

export const selectionSchema = z.union([z.literal('latest'), ...exactTargetSchema.options]);

export type Selection = z.output<typeof selectionSchema>;

/** The exact selection a Continue resolved to. */
export type ExactSelection =
  | { readonly kind: 'exact'; readonly revision: number; readonly digest: Digest }
  | { readonly kind: 'prepared'; readonly digest: Digest };

export type CitationReason = UnavailableReason | 'other_scope';

export type EvidenceCheck =
  | { readonly location: string; readonly citation: SourceRef; readonly status: 'available' }
  | {
      readonly location: string;
      readonly citation: SourceRef;
      readonly status: 'unavailable';
      readonly reason: CitationReason;
    };

export interface HandoffResolution {
  readonly schema: 'baton.handoff-resolution/v1';
  readonly scope_id: string;
  readonly selection: ExactSelection;
  /** The committed head when Continue ran; a prepared or exact selection may be older. */
  readonly current_head: number;
  readonly handoff: PreparedHandoff;
  /** `available` only when every citation is readable with its identity (not: verified). */
  readonly evidence: 'available' | 'unavailable' | 'none_cited';
  readonly evidence_checks: readonly EvidenceCheck[];
  readonly trust: 'untrusted_history';
}

/** What reading one exact ref says: the store's availability, without the entry. */
type SourceRead = { status: 'available' } | { status: 'unavailable'; reason: UnavailableReason };

/** Check one citation: a reference into another scope is never read there. */
export async function checkCitation(
  scope_id: string,
  { location, citation }: LocatedCitation,
  read: (ref: SourceRef) => Promise<SourceRead>,
): Promise<EvidenceCheck> {
  if (citation.scope_id !== scope_id)
    return { location, citation, status: 'unavailable', reason: 'other_scope' };
  const result = await read(citation);
  return result.status === 'available'
    ? { location, citation, status: 'available' }
    : { location, citation, status: 'unavailable', reason: result.reason };
}

/**
 * Check every citation, in order, reading each distinct ref once: handoff_current_work cites
 * its boundary from every statement and the next action, and one read answers them all.
 */
export function checkCitations(
  scope_id: string,
  located: readonly LocatedCitation[],
  read: (ref: SourceRef) => Promise<SourceRead>,
): Promise<EvidenceCheck[]> {
  const reads = new Map<string, Promise<SourceRead>>();
  const readOnce = (ref: SourceRef): Promise<SourceRead> => {
    const key = JSON.stringify([ref.scope_id, ref.source_id, ref.digest]);
    let result = reads.get(key);
    if (!result) {
      result = read(ref);
      reads.set(key, result);
    }
    return result;
  };
  return Promise.all(located.map((citation) => checkCitation(scope_id, citation, readOnce)));
}

/** A handoff of another scope is not found here, whoever knows its digest. */
export function requireSameScope(scope_id: string, handoff: PreparedHandoff): void {
  if (handoff.scope_id !== scope_id) {
    throw new BatonError('not_found', `that handoff belongs to scope ${handoff.scope_id}, not ${scope_id}`, {
      scope_id,
      handoff_scope_id: handoff.scope_id,
    });
  }
}

/** What the checks say together: `available` only when every citation is readable. */
export function evidenceOf(evidence_checks: readonly EvidenceCheck[]): HandoffResolution['evidence'] {
  if (evidence_checks.length === 0) return 'none_cited';
  return evidence_checks.every((check) => check.status === 'available') ? 'available' : 'unavailable';
}

/** The answer of a Continue whose handoff requireSameScope admitted. */
export function resolution(
  scope_id: string,
  selection: ExactSelection,
  current_head: number,
  handoff: PreparedHandoff,
  evidence_checks: readonly EvidenceCheck[],
): HandoffResolution {
  const evidence = evidenceOf(evidence_checks);
  return {
    schema: 'baton.handoff-resolution/v1',
    scope_id,
    selection,
    current_head,
    handoff,
    evidence,
    evidence_checks,
    trust: 'untrusted_history',
  };
}
