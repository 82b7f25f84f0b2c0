/**
 * The Prepared Handoff: a canonical body identified by its digest, with exactly one next
 * action, prepared on the committed head it observed (base_revision). Everything it cites is
 * an exact SourceRef in its own scope. Pure validation; the app stores and commits it.
 */
import { z } from 'zod';
import { BatonError } from '../errors.ts';
import { scopeIdSchema } from '../ledger/names.ts';
import { sourceRefSchema, type SourceRef } from '../ledger/source.ts';
import { parseRecord, recordSchema } from '../records.ts';
import { requireSameScope } from '../continuity/claims.ts';

export const preparedHandoffSchemaId = 'baton.prepared-handoff/v1';

/** Text limits of a handoff, in characters. */
export const handoffLimits = {
  objective: 2000,
  text: 4000,
  statements: 64,
  /** 32 of the producer's evidence, plus the boundary source handoff_current_work adds. */
  citations: 33,
  omissions: 64,
  options: 16,
} as const;

function text(max: number) {
  return z
    .string()
    .max(max, `at most ${max} characters`)
    .refine((value) => value.trim().length > 0, 'must not be empty');
}

export const dispositions = ['continue', 'blocked', 'complete'] as const;
export type Disposition = (typeof dispositions)[number];

export const claimBases = ['declared', 'verified'] as const;
export type ClaimBasis = (typeof claimBases)[number];

const citationsSchema = z.array(sourceRefSchema).max(handoffLimits.citations);

export const statementSchema = z
  .strictObject({
    text: text(handoffLimits.text),
    basis: z.enum(claimBases),
    citations: citationsSchema.default([]),
  })
  .refine((statement) => statement.basis !== 'verified' || statement.citations.length > 0, {
    message: 'a verified statement needs at least one exact citation',
    path: ['citations'],
  });

export const nextActionSchema = z.strictObject({
  text: text(handoffLimits.text),
  citations: citationsSchema.default([]),
});

export const blockedSchema = z.strictObject({
  question: text(handoffLimits.text),
  options: z.array(text(handoffLimits.text)).min(1, 'name at least one option').max(handoffLimits.options),
  impact: text(handoffLimits.text),
});

/**
 * A blocked handoff carries `blocked` ({question, options, impact}), and only a blocked one: as a
 * refinement, and as the published JSON Schema states it.
 */
export function withBlockedRule<S extends z.ZodType<{ disposition: Disposition; blocked?: unknown }>>(
  schema: S,
): S {
  return schema
    .superRefine((handoff, context) => {
      if (handoff.disposition === 'blocked' && !handoff.blocked) {
        context.addIssue({
          code: 'custom',
          path: ['blocked'],
          message:
            'a blocked handoff needs {question, options, impact}: return the decision to a human instead of guessing',
        });
      }
      if (handoff.disposition !== 'blocked' && handoff.blocked) {
        context.addIssue({
          code: 'custom',
          path: ['blocked'],
          message: `blocked is only for disposition "blocked", not "${handoff.disposition}"`,
        });
      }
    })
    .meta({
      if: { properties: { disposition: { const: 'blocked' } } },
      then: { required: ['blocked'] },
      else: { not: { required: ['blocked'] } },
    });
}

/** What a caller gives to prepare a handoff; the scope and base revision come from the ledger. */
export const handoffContentSchema = withBlockedRule(
  z.strictObject({
    objective: text(handoffLimits.objective),
    disposition: z.enum(dispositions),
    statements: z.array(statementSchema).max(handoffLimits.statements).default([]),
    next_action: nextActionSchema,
    omissions: z.array(text(handoffLimits.text)).max(handoffLimits.omissions).default([]),
    blocked: blockedSchema.optional(),
  }),
);

export type HandoffContent = z.output<typeof handoffContentSchema>;

/** A stored Prepared Handoff body; read loosely so a newer Baton's fields survive. */
export const preparedHandoffSchema = recordSchema(preparedHandoffSchemaId, {
  scope_id: scopeIdSchema,
  base_revision: z.number().int().min(0),
  objective: z.string(),
  disposition: z.enum(dispositions),
  statements: z.array(
    z.looseObject({ text: z.string(), basis: z.enum(claimBases), citations: z.array(sourceRefSchema) }),
  ),
  next_action: z.looseObject({ text: z.string(), citations: z.array(sourceRefSchema) }),
  omissions: z.array(z.string()),
  blocked: z
    .looseObject({ question: z.string(), options: z.array(z.string()), impact: z.string() })
    .optional(),
});

export type PreparedHandoff = z.output<typeof preparedHandoffSchema>;

/** Validate what a caller wants to hand off; invalid_input names the field. */
export function parseHandoffContent(input: unknown): HandoffContent {
  const next = (input as { next_action?: unknown } | null)?.next_action;
  if (Array.isArray(next)) {
    throw new BatonError(
      'invalid_input',
      `handoff is invalid at next_action: exactly one next action, got ${next.length}`,
      { issues: [{ path: 'next_action', message: `exactly one next action, got ${next.length}` }] },
    );
  }
  return parseRecord(handoffContentSchema, input, 'handoff');
}

/** Build the canonical body; every citation must be in the handoff's own scope. */
export function preparedBody(
  scope_id: string,
  base_revision: number,
  content: HandoffContent,
): PreparedHandoff {
  const body: PreparedHandoff = {
    schema: preparedHandoffSchemaId,
    scope_id,
    base_revision,
    objective: content.objective,
    disposition: content.disposition,
    statements: content.statements,
    next_action: content.next_action,
    omissions: content.omissions,
    ...(content.blocked ? { blocked: content.blocked } : {}),
  };
  requireSameScope(scope_id, citationsOf(body), 'handoff');
  return body;
}

export function parsePreparedHandoff(value: unknown): PreparedHandoff {
  return parseRecord(preparedHandoffSchema, value, 'prepared handoff');
}

export interface LocatedCitation {
  /** Where the citation stands in the handoff, as a path: `statements.0.citations.1`. */
  readonly location: string;
  readonly citation: SourceRef;
}

/** Every citation of a handoff, in body order: statements first, then the next action. */
export function citationsOf(handoff: Pick<PreparedHandoff, 'statements' | 'next_action'>): LocatedCitation[] {
  const located: LocatedCitation[] = [];
  handoff.statements.forEach((statement, s) =>
    statement.citations.forEach((citation, c) =>
      located.push({ location: `statements.${s}.citations.${c}`, citation }),
    ),
  );
  handoff.next_action.citations.forEach((citation, c) =>
    located.push({ location: `next_action.citations.${c}`, citation }),
  );
  return located;
}
