/**
 * The four continuity records, stored as typed sources by metadata.kind: Work Contract,
 * Current Work Handoff (boundary), Handoff Receipt and Task Outcome. Each is versioned; the
 * readers accept every version they know, so a v1 record stays readable when v2 exists.
 */
import { z } from 'zod';
import { digestPattern, type Digest } from '../canonical.ts';
import { dispositions } from '../handoff/prepared.ts';
import { sourceRefSchema } from '../ledger/source.ts';
import { recordSchema } from '../records.ts';
import {
  attributionSchema,
  basisRule,
  basisRuleJsonSchema,
  evidenceSchema,
  textListSchema,
  workClaimSchema,
  workText,
} from './claims.ts';

export const workKinds = ['work-contract', 'handoff-boundary', 'handoff-receipt', 'task-outcome'] as const;
export type WorkKind = (typeof workKinds)[number];

export const trustLabels = {
  'work-contract': 'untrusted_input',
  'handoff-boundary': 'untrusted_input',
  'handoff-receipt': 'untrusted_observation',
  'task-outcome': 'untrusted_observation',
} as const satisfies Record<WorkKind, string>;

const digestSchema = z.string().regex(digestPattern, 'a digest is sha256:<64 hex>') as z.ZodType<Digest>;

// Work Contract: the baseline agreed before execution.
export const workContractFields = {
  objective: workText(2000),
  facts: z.array(workClaimSchema).max(64).default([]),
  in_scope: textListSchema.default([]),
  exclusions: textListSchema.default([]),
  completion_criteria: textListSchema.min(1, 'name at least one completion criterion'),
  authorization_notes: textListSchema.default([]),
  open_questions: textListSchema.default([]),
  attribution: attributionSchema,
};
export const workContractSchema = recordSchema('baton.work-contract/v1', workContractFields);

// Current Work Handoff: the boundary a Prepared Handoff cites.
export const boundaryFields = {
  objective: workText(2000),
  current_state: z.array(workClaimSchema).max(64).default([]),
  disposition: z.enum(dispositions),
  next_action: workClaimSchema,
  omissions: textListSchema.default([]),
  blocked: z
    .strictObject({
      question: workText(),
      options: z.array(workText()).min(1, 'name at least one option').max(16),
      impact: workText(),
    })
    .optional(),
  attribution: attributionSchema,
};
export const boundarySchema = recordSchema('baton.handoff-boundary/v1', boundaryFields);
/** A boundary's fields without its schema id: what a producer gives. */
export type BoundaryContent = z.output<z.ZodObject<typeof boundaryFields>>;

// Handoff Receipt: the receiver's observation about one exact selection.
export const receiptStatuses = ['accepted', 'needs_clarification', 'declined'] as const;
export type ReceiptStatus = (typeof receiptStatuses)[number];
export const receiverCheckValues = ['confirmed', 'not_confirmed'] as const;

export const receiverChecksSchema = z.strictObject({
  live_workspace: z.enum(receiverCheckValues),
  capability: z.enum(receiverCheckValues),
  authorization: z.enum(receiverCheckValues),
});

export const receiptTargetSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('exact'), revision: z.number().int().min(1), digest: digestSchema }),
  z.strictObject({ kind: z.literal('prepared'), digest: digestSchema }),
]);

export const receiptSchema = recordSchema('baton.handoff-receipt/v1', {
  target: receiptTargetSchema,
  status: z.enum(receiptStatuses),
  evidence: z.enum(['available', 'unavailable', 'none_cited']),
  citations_checked: z.number().int().min(0).default(0),
  unavailable_citations: z
    .array(
      z.looseObject({
        location: z.string(),
        citation: sourceRefSchema,
        reason: z.enum(['missing', 'digest_mismatch', 'other_scope', 'retracted']),
      }),
    )
    .default([]),
  receiver_checks: receiverChecksSchema,
  reason: z.string().max(4000).optional(),
  receiver: z.string().max(200).optional(),
}).superRefine((receipt, context) => {
  // A receipt means what acknowledge_handoff allows, wherever it came from (an import, say).
  if (receipt.status === 'accepted') {
    const unconfirmed = Object.values(receipt.receiver_checks).some((value) => value !== 'confirmed');
    if (unconfirmed || receipt.evidence === 'unavailable' || receipt.unavailable_citations.length > 0) {
      context.addIssue({
        code: 'custom',
        path: ['status'],
        message: 'accepted needs readable evidence and all three receiver checks confirmed',
      });
    }
  } else if (!receipt.reason?.trim()) {
    context.addIssue({ code: 'custom', path: ['reason'], message: `${receipt.status} needs a reason` });
  }
});

// Task Outcome: what happened in one attempt.
export const outcomeStatuses = ['succeeded', 'partial', 'blocked', 'failed', 'cancelled', 'unknown'] as const;
export const checkStatuses = [
  'passed',
  'failed',
  'skipped',
  'timed_out',
  'unavailable',
  'cancelled',
  'unknown',
] as const;
export type CheckStatus = (typeof checkStatuses)[number];

export const outcomeCheckSchema = z
  .strictObject({
    name: workText(200),
    status: z.enum(checkStatuses),
    basis: z.enum(['declared', 'verified']),
    evidence: evidenceSchema.default([]),
  })
  .superRefine(basisRule)
  .meta(basisRuleJsonSchema);

export const outcomeFields = {
  objective: workText(2000),
  status: z.enum(outcomeStatuses),
  summary: workText(),
  handoff_receipt_ref: sourceRefSchema.optional(),
  observations: z.array(workClaimSchema).max(64).default([]),
  checks: z.array(outcomeCheckSchema).max(64).default([]),
  produced_artifacts: evidenceSchema.default([]),
  remaining_work: textListSchema.default([]),
  attribution: attributionSchema,
};
export const outcomeSchema = recordSchema('baton.task-outcome/v1', outcomeFields);

export type WorkContract = z.output<typeof workContractSchema>;
export type Boundary = z.output<typeof boundarySchema>;
export type HandoffReceipt = z.output<typeof receiptSchema>;
export type TaskOutcome = z.output<typeof outcomeSchema>;

/** A valid work record of any kind, as the readers return it. */
export type WorkRecord =
  | { readonly kind: 'work-contract'; readonly record: WorkContract }
  | { readonly kind: 'handoff-boundary'; readonly record: Boundary }
  | { readonly kind: 'handoff-receipt'; readonly record: HandoffReceipt }
  | { readonly kind: 'task-outcome'; readonly record: TaskOutcome };

/** Every schema version a reader accepts, per kind. Add a version here; never remove one. */
const readers = {
  'work-contract': { 'baton.work-contract/v1': workContractSchema },
  'handoff-boundary': { 'baton.handoff-boundary/v1': boundarySchema },
  'handoff-receipt': { 'baton.handoff-receipt/v1': receiptSchema },
  'task-outcome': { 'baton.task-outcome/v1': outcomeSchema },
} as const;

/** The criterion verdicts of a bound session's ended contract (src/core/work/outcome.ts). */
export const managedWorkVerdictsKind = 'managed-work-verdicts';

/** The prefix of the sources a bound managed session writes (src/core/work/outcome.ts): only Baton writes it. */
export const managedWorkSourceIdPrefix = 'managed-work:';

/** Kinds only their own operations may write: capture_source refuses them. */
export const reservedKinds: readonly string[] = [...workKinds, 'experience-review', managedWorkVerdictsKind];

export function isWorkKind(kind: unknown): kind is WorkKind {
  return typeof kind === 'string' && (workKinds as readonly string[]).includes(kind);
}

/** Read a stored record of a work kind; undefined when it fails every schema it could be. */
export function readWorkRecord(kind: WorkKind, content: unknown): WorkRecord | undefined {
  const schemaId = (content as { schema?: unknown } | null)?.schema;
  const versions = readers[kind] as Record<string, z.ZodType>;
  const schema =
    typeof schemaId === 'string' && Object.hasOwn(versions, schemaId) ? versions[schemaId] : undefined;
  if (!schema) return undefined;
  const parsed = schema.safeParse(content);
  return parsed.success ? ({ kind, record: parsed.data } as WorkRecord) : undefined;
}
