/**
 * What each registry operation answers, as published: the OpenAPI document's 200 schemas and
 * the typed client's check of every answer are made from these. Objects are open (a later
 * version may add fields, and a reader must ignore them). A record a caller reads as a whole
 * (a Prepared Handoff, a Work record, a boundary) is an object here, its own schema being
 * elsewhere. The type checks at the end keep each schema true to its app function's result:
 * a schema that names a field the result lacks, or types one differently, does not compile.
 */
import { z } from 'zod';
import { digestPattern } from '../core/canonical.ts';
import { workKinds } from '../core/continuity/records.ts';
import type { Candidate } from '../core/continuity/experience.ts';
import type { ContinuityMetrics } from '../core/continuity/metrics.ts';
import type { WorkContinuity } from '../core/continuity/projection.ts';
import type { HandoffReport, WorkstreamReport } from '../core/handoff/report.ts';
import type { HandoffResolution } from '../core/handoff/resolution.ts';
import type { Entry } from '../core/ledger/entry.ts';
import type { Revision } from '../core/ledger/revision.ts';
import type { SourceReceipt } from '../core/ledger/source.ts';
import type { GateDecision } from '../core/work/gate.ts';
import { contractStatuses, verdicts, workItemStatuses } from '../core/work/model.ts';
import {
  interruptionHandoffSchema,
  terminalStatuses,
  workModes,
  type SessionHeader,
} from '../core/work/session.ts';
import type { AcknowledgeResult, HandoffCurrentWorkResult, StoredWorkRecord } from './continuity.ts';
import type { PreparedContext } from './experience.ts';
import type { VerificationReport } from './verify.ts';
import type { WorkSnapshot } from './work.ts';

const whole = z.number().int().min(0);
/** A list as the app functions return it: read-only. */
const list = <T extends z.ZodType>(item: T) => z.array(item).readonly();
const digest = z.string().regex(digestPattern);
/** A JSON object read as a whole; its fields are described by its own schema. */
const record = z
  .custom<object>(
    (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
    'a JSON object',
  )
  .meta({ type: 'object' });

const sourceRef = z.object({ scope_id: z.string(), source_id: z.string(), digest });
const receipt = z.object({ source_ref: sourceRef, position: whole, digest });
const stored = z.object({ receipt, record, trust: z.string() });

const entry = z.object({
  stream: record,
  position: whole,
  global_seq: whole,
  type: z.string(),
  source_id: z.string().nullable(),
  digest,
  recorded_at: z.string(),
  content: z.unknown(),
  metadata: record.nullable(),
  retracted: z.object({ at: z.string(), reason: z.string() }).nullable(),
});

const revision = z.object({
  scope_id: z.string(),
  revision: whole,
  prepared_digest: digest,
  committed_at: z.string(),
});

const prepared = z.object({
  digest,
  prepared_handoff: record,
  boundary_receipt: receipt,
  boundary: record,
  trust: z.literal('untrusted_input'),
});

const resolution = z.object({
  schema: z.literal('baton.handoff-resolution/v1'),
  scope_id: z.string(),
  selection: z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('exact'), revision: whole, digest }),
    z.object({ kind: z.literal('prepared'), digest }),
  ]),
  current_head: whole,
  handoff: record,
  evidence: z.enum(['available', 'unavailable', 'none_cited']),
  evidence_checks: list(
    z.object({ location: z.string(), citation: sourceRef, status: z.enum(['available', 'unavailable']) }),
  ),
  trust: z.literal('untrusted_history'),
});

const continuity = z.object({
  scope_id: z.string(),
  current: z.object({ revision: whole, digest }).nullable(),
  counts: z.object(Object.fromEntries(workKinds.map((kind) => [kind, whole]))),
  invalid_record_count: whole,
  timeline: list(
    z.object({
      position: whole,
      kind: z.enum(workKinds),
      source_ref: sourceRef,
      summary: z.string(),
      status: z.string().optional(),
      session_id: z.string().optional(),
    }),
  ),
  truncated: z.boolean(),
  transfer_state: z.enum([
    'not_applicable',
    'awaiting_receipt',
    'needs_clarification',
    'declined',
    'accepted',
  ]),
  outcome_state: z.enum(['not_expected', 'awaiting_outcome', 'covered']),
  active_receipt_ref: sourceRef.nullable(),
  covering_outcome_ref: sourceRef.nullable(),
});

const workstreamReport = z.object({
  scope_id: z.string(),
  selection: z.object({ revision: whole, position: whole }),
  revision_count: whole,
  current: z.object({ revision: whole, digest, committed_at: z.string(), handoff: record }).nullable(),
  revisions: list(
    z.object({
      revision: whole,
      digest,
      committed_at: z.string(),
      objective: z.string(),
      next_action: z.string(),
      current: z.boolean(),
    }),
  ),
  continuity,
  trust: z.literal('untrusted_history'),
});

const handoffReport = z.object({
  schema: z.literal('baton.handoff-report/v1'),
  project_id: z.string(),
  workstreams: list(workstreamReport),
});

const markdown = z.object({ markdown: z.string() });

const candidate = z.object({
  candidate: sourceRef,
  status: z.enum(['pending', 'approved', 'rejected']),
  draft: z.object({ objective: z.string(), lesson: z.string() }),
  review: z.object({ ref: sourceRef, decision: z.string(), note: z.string() }).nullable(),
  trust: z.literal('untrusted_observation'),
});

const preparedContext = z.object({
  schema: z.literal('baton.prepared-context/v1'),
  project_id: z.string(),
  scope_id: z.string().nullable(),
  handoff: z
    .object({ revision: whole, digest, handoff: record, trust: z.literal('untrusted_history') })
    .nullable(),
  work_contract: z.object({ source_ref: sourceRef, record, trust: z.literal('untrusted_input') }).nullable(),
  experience: list(candidate),
});

const rate = z.object({ rate: z.number().nullable(), numerator: whole, denominator: whole });
const metrics = z.object({
  project_id: z.string(),
  clarification_rate: rate,
  evidence_availability_rate: rate,
  handoff_result_coverage_rate: rate,
  counts: z.object({
    receipts: whole,
    accepted_receipts: whole,
    outcomes: whole,
    verified_passed_checks: whole,
    declared_passed_checks: whole,
  }),
});

/** The result schema of each operation, by operationId. */
export const resultSchemas = {
  capture_source: receipt,
  retract_source: entry,
  create_work_contract: stored,
  handoff_current_work: prepared,
  commit_handoff: revision,
  continue_handoff: resolution,
  acknowledge_handoff: stored,
  record_task_outcome: stored,
  get_report: z.union([workstreamReport, handoffReport, markdown]),
  get_work_continuity: continuity,
  list_experience_candidates: list(candidate),
  review_experience: z.object({ receipt, candidate }),
  prepare_context: preparedContext,
  get_metrics: metrics,
} as const satisfies Record<string, z.ZodType>;

// ---- managed work ----

const sessionHeader = z.object({
  schema: z.literal('baton.session-header/v1'),
  session_id: z.string(),
  parent_session_id: z.string().nullable(),
  contract_id: z.string().nullable(),
  work_item_id: z.string().nullable(),
  work_mode: z.enum(workModes),
  workspace: z.string().nullable(),
  capabilities: record,
});

/** Whether an attached reference resolved in the ledger when it was attached (docs/managed-work.md). */
const evidenceAvailability = z.discriminatedUnion('status', [
  z.object({ status: z.literal('available') }),
  z.object({
    status: z.literal('unavailable'),
    reason: z.string().meta({
      description:
        'missing_session, missing_entry, not_a_receipt, not_a_checkpoint, invalid_range, not_a_child, ' +
        'retracted or outside_ledger; a later version may name more.',
    }),
  }),
  z.object({ status: z.literal('unchecked') }),
]);

/** An item's state; its owner and evidence references are read as a whole. */
const itemState = z.object({
  item_id: z.string(),
  status: z.enum(workItemStatuses),
  attempt: whole,
  owner: record,
  child_session_id: z.string().nullable(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  blocker: z.string().nullable(),
  evidence: list(record),
  evidence_count: whole,
  evidence_availability: list(evidenceAvailability).meta({
    description: 'Whether each reference of evidence, at the same index, resolved when it was attached.',
  }),
});

/** A contract as projected; its definition and criteria are read as a whole (docs/managed-work.md). */
const contractProjection = z.object({
  contract_id: z.string(),
  revision: whole,
  status: z.enum(contractStatuses),
  status_reason: z.string(),
  branch: z.boolean(),
  contract: record,
  items: list(itemState),
  criteria: list(record),
  created_position: whole,
  updated_position: whole,
  events: whole,
});

/**
 * A session's terminal marker: how it ended, where, and the Handoff an interrupted bound session
 * prepared for whoever continues (commit_handoff publishes it with expected_head base_revision).
 */
export const terminalMarkerSchema = z.object({
  status: z.enum(terminalStatuses),
  position: whole,
  handoff: interruptionHandoffSchema.optional(),
});

const workSnapshot = z.object({
  session_id: z.string(),
  position: whole,
  projection: z
    .object({
      contracts: list(contractProjection),
      active_contract_id: z.string().nullable(),
      position: whole,
      latest_checkpoint: z.string().nullable(),
      terminal: terminalMarkerSchema.nullable(),
    })
    .nullable(),
  terminal: terminalMarkerSchema.nullable(),
  contract: contractProjection.nullable(),
  warnings: list(
    z.object({
      code: z.string(),
      message: z.string(),
      position: whole.optional(),
      contract_id: z.string().optional(),
      item_id: z.string().optional(),
    }),
  ),
  control_block: z.string().nullable(),
});

const gateDecision = z.discriminatedUnion('decision', [
  z.object({
    decision: z.literal('allow'),
    contract_id: z.string().nullable(),
    status: z.string().nullable(),
  }),
  z.object({
    decision: z.literal('block'),
    contract_id: z.string(),
    status: z.string(),
    reasons: list(z.object({ code: z.string(), id: z.string(), message: z.string() })),
  }),
]);

/** A snapshot with the completion gate's decision on it, as the MCP work tools answer. */
const gatedWorkSnapshot = workSnapshot.extend({
  gate: gateDecision,
  trust: z.literal('untrusted_history'),
});

const verificationReport = z.object({
  session_id: z.string(),
  contract_id: z.string(),
  revision: whole,
  checkpoint: z.string().nullable(),
  verdicts: list(
    z.object({
      criterion_id: z.string(),
      kind: z.string(),
      verdict: z.enum(verdicts),
      reason: z.string(),
      evidence: list(record),
    }),
  ),
  contract_status: z.string(),
});

export const workResultSchemas = {
  sessionHeader,
  workSnapshot,
  gatedWorkSnapshot,
  verification: verificationReport.extend({
    snapshot: gatedWorkSnapshot,
    trust: z.literal('untrusted_observation'),
  }),
} as const;

/** True when every value of type R is a valid output of S: R may say more, never otherwise. */
export type Fits<R, S extends z.ZodType> = [R] extends [z.output<S>] ? true : false;
export type Check<T extends true> = T;

/** Compile-time only: each schema describes what its app function really returns. */
export type ResultSchemasFit = [
  Check<Fits<SourceReceipt, typeof receipt>>,
  Check<Fits<Entry, typeof entry>>,
  Check<Fits<StoredWorkRecord<object>, typeof stored>>,
  Check<Fits<AcknowledgeResult, typeof stored>>,
  Check<Fits<HandoffCurrentWorkResult, typeof prepared>>,
  Check<Fits<Revision, typeof revision>>,
  Check<Fits<HandoffResolution, typeof resolution>>,
  Check<Fits<WorkContinuity, typeof continuity>>,
  Check<Fits<WorkstreamReport, typeof workstreamReport>>,
  Check<Fits<HandoffReport, typeof handoffReport>>,
  Check<Fits<Candidate, typeof candidate>>,
  Check<Fits<PreparedContext, typeof preparedContext>>,
  Check<Fits<ContinuityMetrics & { project_id: string }, typeof metrics>>,
  Check<Fits<SessionHeader, typeof sessionHeader>>,
  Check<Fits<WorkSnapshot, typeof workSnapshot>>,
  Check<Fits<GateDecision, typeof gateDecision>>,
  Check<Fits<Omit<VerificationReport, 'snapshot'>, typeof verificationReport>>,
];
