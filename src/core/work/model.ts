/**
 * The managed work model: a versioned Work Contract of items and criteria, the runtime state
 * kept apart from the definition, the typed evidence references and the Work Events that are
 * the only way any of it changes. JSON shapes use the spec's snake_case names; every tagged
 * union is tagged by `type`. Objects are parsed loosely so a newer writer's fields survive.
 */
import { z } from 'zod';
import { checkStatuses } from '../continuity/records.ts';

const id = z
  .string()
  .min(1, 'an id is not empty')
  .max(128)
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._:-]*$/,
    'an id is letters, digits, . _ : - starting with a letter or digit',
  );
const text = (max: number) => z.string().max(max);

export const workIdSchema = id;

export const contractStatuses = [
  'draft',
  'awaiting_input',
  'active',
  'blocked',
  'verifying',
  'completed',
  'failed',
  'cancelled',
  'unverified',
] as const;
export type ContractStatus = (typeof contractStatuses)[number];
export const terminalContractStatuses: ReadonlySet<ContractStatus> = new Set([
  'completed',
  'failed',
  'cancelled',
  'unverified',
]);

/** Whether a contract waits for a person (to confirm a draft, or answer it) before any work goes on. */
export function awaitsPerson(contract: { readonly status: ContractStatus }): boolean {
  return contract.status === 'draft' || contract.status === 'awaiting_input';
}

export const workItemStatuses = [
  'proposed',
  'ready',
  'running',
  'waiting_approval',
  'blocked',
  'ready_for_verification',
  'succeeded',
  'failed',
  'skipped',
  'cancelled',
  'interrupted',
] as const;
export type WorkItemStatus = (typeof workItemStatuses)[number];

export const workOwnerSchema = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('parent_agent') }),
  z.looseObject({ type: z.literal('worker') }),
  z.looseObject({ type: z.literal('flow'), name: id }),
  z.looseObject({ type: z.literal('tool'), name: id }),
  z.looseObject({ type: z.literal('human') }),
]);
export type WorkOwner = z.output<typeof workOwnerSchema>;

export const criterionKindSchema = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('shell'), command: text(4000).min(1) }),
  z.looseObject({ type: z.literal('file_exists'), path: text(1024).min(1) }),
  z.looseObject({ type: z.literal('file_contains'), path: text(1024).min(1), pattern: text(1024).min(1) }),
  z.looseObject({ type: z.literal('tool_succeeded'), tool: id }),
  z.looseObject({ type: z.literal('flow_completed'), flow: id }),
  z.looseObject({ type: z.literal('external_receipt'), integration: id }),
  z.looseObject({ type: z.literal('semantic'), statement: text(4000).min(1) }),
]);
export type CriterionKind = z.output<typeof criterionKindSchema>;

export const constraintSchema = z.looseObject({ constraint_id: id, text: text(4000) });
export type Constraint = z.output<typeof constraintSchema>;

export const assumptionSchema = z.looseObject({
  assumption_id: id,
  text: text(4000),
  requires_confirmation: z.boolean().default(false),
  resolution: text(4000).nullable().default(null),
});
export type Assumption = z.output<typeof assumptionSchema>;

export const workCriterionSchema = z.looseObject({
  criterion_id: id,
  statement: text(4000),
  kind: criterionKindSchema,
  required: z.boolean().default(true),
});
export type WorkCriterion = z.output<typeof workCriterionSchema>;

export const workItemDefinitionSchema = z.looseObject({
  item_id: id,
  title: text(400).min(1, 'an item needs a title'),
  instructions: text(8000).default(''),
  dependencies: z.array(id).max(256).default([]),
  owner: workOwnerSchema.default({ type: 'parent_agent' }),
  required: z.boolean().default(true),
  readonly: z.boolean().default(false),
  path_claims: z.array(text(1024).min(1)).max(64).default([]),
  criterion_ids: z.array(id).max(64).default([]),
  /** Capabilities the item needs beyond reading (Baton's addition; checked against the session's). */
  capabilities: z.array(id).max(64).default([]),
});
export type WorkItemDefinition = z.output<typeof workItemDefinitionSchema>;

/** Bounds that hold for any configuration; `[work]` tightens the item and revision counts. */
export const contractBounds = {
  items: 1000,
  revisions: 1000,
  criteria: 1000,
  constraints: 256,
  assumptions: 256,
} as const;

export const workContractSchema = z.looseObject({
  contract_id: id,
  revision: z.number().int().min(1),
  source_entry_id: text(200).default(''),
  objective: text(8000),
  constraints: z.array(constraintSchema).max(contractBounds.constraints).default([]),
  assumptions: z.array(assumptionSchema).max(contractBounds.assumptions).default([]),
  criteria: z.array(workCriterionSchema).max(contractBounds.criteria).default([]),
  items: z.array(workItemDefinitionSchema).max(contractBounds.items).default([]),
});
export type WorkContract = z.output<typeof workContractSchema>;

export const evidenceRefSchema = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('ledger_entry'), session_id: text(200), entry_id: text(200) }),
  z.looseObject({ type: z.literal('tool_result'), session_id: text(200), tool_use_id: text(200) }),
  z.looseObject({ type: z.literal('receipt'), session_id: text(200), entry_id: text(200) }),
  z.looseObject({
    type: z.literal('checkpoint_diff'),
    session_id: text(200),
    from_seq: z.number().int().min(0),
    to_seq: z.number().int().min(0),
  }),
  z.looseObject({ type: z.literal('flow_node'), flow: id, run_id: text(200), node_id: text(200) }),
  z.looseObject({ type: z.literal('child_session'), session_id: text(200) }),
  z.looseObject({ type: z.literal('external_operation'), integration: id, operation_id: text(200) }),
]);
export type EvidenceRef = z.output<typeof evidenceRefSchema>;

/**
 * Why an attached reference does not resolve in this project's ledger (docs/managed-work.md,
 * "Attached evidence"). Read back as any short string: a newer Baton may name more reasons.
 */
export const evidenceUnavailableReasons = [
  'missing_session',
  'missing_entry',
  'not_a_receipt',
  'not_a_checkpoint',
  'invalid_range',
  'not_a_child',
  'retracted',
  'outside_ledger',
] as const;
export type EvidenceUnavailableReason = (typeof evidenceUnavailableReasons)[number];

/**
 * Whether an attached reference resolved in this project's ledger when it was attached;
 * `unchecked` for one attached before Baton decided it.
 */
export const evidenceAvailabilitySchema = z.discriminatedUnion('status', [
  z.looseObject({ status: z.literal('available') }),
  z.looseObject({ status: z.literal('unavailable'), reason: text(200).min(1) }),
  z.looseObject({ status: z.literal('unchecked') }),
]);
export type EvidenceAvailability = z.output<typeof evidenceAvailabilitySchema>;

/** The check vocabulary of the continuity spec: anything but passed is not a pass. */
export const verdicts = checkStatuses;
export type Verdict = (typeof verdicts)[number];

export const criterionResultSchema = z.looseObject({
  verdict: z.enum(verdicts),
  reason: text(4000).default(''),
  evidence: z.array(evidenceRefSchema).max(64).default([]),
  /** The workspace checkpoint the verdict was taken at; a newer mutation makes it stale. */
  checkpoint: text(200).nullable().default(null),
});
export type CriterionResult = z.output<typeof criterionResultSchema>;

/** Who recorded an event. Only runtime and verifier may reach succeeded or completed. */
export const actorTypes = ['model', 'human', 'runtime', 'verifier'] as const;
export type ActorType = (typeof actorTypes)[number];
export const actorSchema = z.looseObject({ type: z.enum(actorTypes), id: text(200).default('') });
export type Actor = z.output<typeof actorSchema>;

export const operationIdentitySchema = z.looseObject({
  contract_id: id,
  item_id: id,
  attempt: z.number().int().min(1),
  operation_id: text(200).min(1),
});
export type OperationIdentity = z.output<typeof operationIdentitySchema>;

const reason = text(4000).default('');

export const workEventKindSchema = z.discriminatedUnion('type', [
  z.looseObject({
    type: z.literal('contract_created'),
    contract: workContractSchema,
    /** Another contract is live in the session and this one is started beside it on purpose. */
    branch: z.boolean().default(false),
  }),
  z.looseObject({
    type: z.literal('contract_revised'),
    previous_revision: z.number().int().min(1),
    contract: workContractSchema,
    reason,
  }),
  z.looseObject({
    type: z.literal('contract_status_changed'),
    from: z.enum(contractStatuses),
    to: z.enum(contractStatuses),
    reason,
  }),
  z.looseObject({
    type: z.literal('item_status_changed'),
    item_id: id,
    from: z.enum(workItemStatuses),
    to: z.enum(workItemStatuses),
    attempt: z.number().int().min(1),
    reason,
    /**
     * An interruption of an item that may have written: only a person retries it, after review
     * (docs/managed-work.md, "Reconciliation"). Written only when true, so older events read back unchanged.
     */
    review_required: z.boolean().optional(),
  }),
  z.looseObject({
    type: z.literal('item_assigned'),
    item_id: id,
    owner: workOwnerSchema,
    child_session_id: text(200).nullable().default(null),
  }),
  z.looseObject({
    type: z.literal('evidence_attached'),
    item_id: id,
    evidence: evidenceRefSchema,
    /** Decided by Baton at the append; events written before it was are `unchecked`. */
    availability: evidenceAvailabilitySchema.default({ status: 'unchecked' }),
  }),
  z.looseObject({ type: z.literal('assumption_resolved'), assumption_id: id, resolution: text(4000).min(1) }),
  z.looseObject({
    type: z.literal('verification_recorded'),
    criterion_id: id,
    result: criterionResultSchema,
  }),
]);
export type WorkEventKind = z.output<typeof workEventKindSchema>;
export type WorkEventType = WorkEventKind['type'];
export const workEventTypes: readonly WorkEventType[] = workEventKindSchema.options.map(
  (option) => option.shape.type.value,
);

export const workEventSchema = z.looseObject({
  schema: z.literal('baton.work-event/v1'),
  contract_id: id,
  revision: z.number().int().min(1),
  kind: workEventKindSchema,
  actor: actorSchema,
  operation: operationIdentitySchema.nullable().default(null),
});
export type WorkEvent = z.output<typeof workEventSchema>;
/** A Work Event as a writer builds it: defaults may be left out. */
export type WorkEventInput = z.input<typeof workEventSchema>;
