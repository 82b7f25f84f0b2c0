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

export const selectionSchema = z.union([
  z.literal('latest'),
  z.strictObject({
    prepared: z.string().regex(digestPattern, 'a digest is sha256:<64 hex>') as z.ZodType<Digest>,
  }),
  z.strictObject({ exact: z.number().int().min(1) }),
]);

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

/** Check one citation: a reference into another scope is never read there. */
export async function checkCitation(
  scope_id: string,
  { location, citation }: LocatedCitation,
  read: (
    ref: SourceRef,
  ) => Promise<{ status: 'available' } | { status: 'unavailable'; reason: UnavailableReason }>,
): Promise<EvidenceCheck> {
  if (citation.scope_id !== scope_id)
    return { location, citation, status: 'unavailable', reason: 'other_scope' };
  const result = await read(citation);
  return result.status === 'available'
    ? { location, citation, status: 'available' }
    : { location, citation, status: 'unavailable', reason: result.reason };
}

export function resolution(
  scope_id: string,
  selection: ExactSelection,
  current_head: number,
  handoff: PreparedHandoff,
  evidence_checks: readonly EvidenceCheck[],
): HandoffResolution {
  if (handoff.scope_id !== scope_id) {
    throw new BatonError('not_found', `that handoff belongs to scope ${handoff.scope_id}, not ${scope_id}`, {
      scope_id,
      handoff_scope_id: handoff.scope_id,
    });
  }
  const evidence =
    evidence_checks.length === 0
      ? 'none_cited'
      : evidence_checks.every((check) => check.status === 'available')
        ? 'available'
        : 'unavailable';
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
