/**
 * WorkClaim: a statement with its basis. `declared` is asserted by the producer and carries no
 * evidence; `verified` carries at least one exact same-scope citation, validated when stored.
 * The same rule applies to checks and observations: a producer's claim is never upgraded.
 */
import { z } from 'zod';
import { BatonError } from '../errors.ts';
import { sourceRefSchema, type SourceRef } from '../ledger/source.ts';
import type { LocatedCitation } from '../handoff/prepared.ts';
import { nonBlankText } from '../text.ts';

export const claimLimits = { text: 4000, items: 64, citations: 32 } as const;

export function workText(max: number = claimLimits.text) {
  return nonBlankText(max);
}

export const textListSchema = z.array(workText()).max(claimLimits.items);

export const evidenceSchema = z.array(sourceRefSchema).max(claimLimits.citations);

/** Adds the basis rule to any object with `basis` and `evidence`. */
export function basisRule(
  value: { basis: 'declared' | 'verified'; evidence: readonly SourceRef[] },
  context: z.RefinementCtx,
): void {
  if (value.basis === 'declared' && value.evidence.length > 0) {
    context.addIssue({
      code: 'custom',
      path: ['evidence'],
      message: 'a declared claim carries no evidence: mark it verified, or drop the evidence',
    });
  }
  if (value.basis === 'verified' && value.evidence.length === 0) {
    context.addIssue({
      code: 'custom',
      path: ['evidence'],
      message: 'a verified claim needs at least one exact citation',
    });
  }
}

/** The basis rule as the published JSON Schema states it. */
export const basisRuleJsonSchema = {
  if: { properties: { basis: { const: 'verified' } } },
  then: { required: ['evidence'], properties: { evidence: { minItems: 1 } } },
  else: { properties: { evidence: { maxItems: 0 } } },
} as const;

export const workClaimSchema = z
  .strictObject({
    text: workText(),
    basis: z.enum(['declared', 'verified']),
    evidence: evidenceSchema.default([]),
  })
  .superRefine(basisRule)
  .meta(basisRuleJsonSchema);

export type WorkClaim = z.output<typeof workClaimSchema>;

/** Attribution labels: who said so, for people. Never identity, never access control. */
export const attributionSchema = z
  .strictObject({
    agent: z.string().max(200).optional(),
    session: z.string().max(200).optional(),
    human: z.string().max(200).optional(),
  })
  .optional();

/** Every citation under a record, located by its path, for one validation pass. */
export function locateEvidence(value: unknown, path: string[] = []): LocatedCitation[] {
  if (Array.isArray(value))
    return value.flatMap((item, index) => locateEvidence(item, [...path, String(index)]));
  if (value === null || typeof value !== 'object') return [];
  const located: LocatedCitation[] = [];
  for (const [key, child] of Object.entries(value)) {
    if ((key === 'evidence' || key === 'produced_artifacts') && Array.isArray(child)) {
      child.forEach((citation, index) =>
        located.push({ location: [...path, key, String(index)].join('.'), citation: citation as SourceRef }),
      );
    } else {
      located.push(...locateEvidence(child, [...path, key]));
    }
  }
  return located;
}

/** Refuse citations into another scope, naming where they stand. */
export function requireSameScope(scope_id: string, located: readonly LocatedCitation[], what: string): void {
  const foreign = located.filter(({ citation }) => citation.scope_id !== scope_id);
  if (foreign.length === 0) return;
  const first = foreign[0]!;
  throw new BatonError(
    'invalid_input',
    `${what} is invalid at ${first.location}: a citation must be in scope ${scope_id}, not ${first.citation.scope_id}`,
    { issues: foreign.map(({ location }) => ({ path: location, message: 'citation into another scope' })) },
  );
}
