/**
 * The input and result type of every registry operation, by operationId. Inputs are the zod
 * input types of the schemas src/app/operations.ts validates with (the project comes from the
 * token, so no input names it); results are the return types of the app functions they call.
 * Type-only: nothing here exists at run time.
 */
import type { z } from 'zod';
import type {
  acknowledgeFields,
  AcknowledgeResult,
  createWorkContract,
  handoffCurrentWork,
  recordTaskOutcome,
} from '../app/continuity.ts';
import type {
  listExperienceCandidates,
  prepareContext,
  reviewExperience,
  reviewInput,
} from '../app/experience.ts';
import type { commitHandoff, continueHandoff } from '../app/handoffs.ts';
import type { continuityMetrics } from '../app/metrics.ts';
import type { captureSource, retractSource } from '../app/sources.ts';
import type { WorkContinuity } from '../core/continuity/projection.ts';
import type { boundaryFields, outcomeFields, workContractFields } from '../core/continuity/records.ts';
import type { HandoffReport, WorkstreamReport } from '../core/handoff/report.ts';
import type { selectionSchema } from '../core/handoff/resolution.ts';
import type { JsonObject, JsonValue } from '../core/json.ts';

type Where = { readonly scope_id: string; readonly source_id: string };
/** The caller's input of a strict object made of these zod fields. */
type Fields<Shape extends z.core.$ZodLooseShape> = z.input<z.ZodObject<Shape, z.core.$strict>>;
type Result<F extends (...args: never[]) => Promise<unknown>> = Awaited<ReturnType<F>>;

/** A digest: `sha256:` and 64 lower-case hex digits. */
export type DigestText = `sha256:${string}`;

export interface ReportInput {
  readonly scope_id?: string;
  /** Read through this revision instead of the head (a frozen earlier view). */
  readonly through?: number;
  readonly position?: number;
  readonly format?: 'json' | 'markdown';
}

/** What get_report answers for an input: Markdown, one workstream, or the whole project. */
export type ReportResult<I extends ReportInput> = I extends { readonly format: 'markdown' }
  ? { readonly markdown: string }
  : I extends { readonly scope_id: string }
    ? WorkstreamReport
    : HandoffReport;

export interface OperationMap {
  capture_source: {
    input: Where & { readonly kind?: string; readonly content: JsonValue; readonly metadata?: JsonObject };
    result: Result<typeof captureSource>;
  };
  retract_source: { input: Where & { readonly reason: string }; result: Result<typeof retractSource> };
  create_work_contract: {
    input: Where & Fields<typeof workContractFields>;
    result: Result<typeof createWorkContract>;
  };
  handoff_current_work: {
    input: Where & Fields<typeof boundaryFields>;
    result: Result<typeof handoffCurrentWork>;
  };
  commit_handoff: {
    input: {
      readonly scope_id: string;
      /** A prepared digest, or the Prepared Handoff body as transported unchanged. */
      readonly prepared: DigestText | JsonObject;
      readonly expected_head: number;
    };
    result: Result<typeof commitHandoff>;
  };
  continue_handoff: {
    input: { readonly scope_id: string; readonly selection: z.input<typeof selectionSchema> };
    result: Result<typeof continueHandoff>;
  };
  acknowledge_handoff: {
    input: Where & Fields<typeof acknowledgeFields>;
    result: AcknowledgeResult;
  };
  record_task_outcome: {
    input: Where & Fields<typeof outcomeFields>;
    result: Result<typeof recordTaskOutcome>;
  };
  get_report: {
    input: ReportInput;
    result: HandoffReport | WorkstreamReport | { readonly markdown: string };
  };
  get_work_continuity: {
    input: { readonly scope_id: string; readonly through?: number; readonly position?: number };
    result: WorkContinuity;
  };
  list_experience_candidates: {
    input: { readonly scope_id?: string };
    result: Result<typeof listExperienceCandidates>;
  };
  review_experience: {
    input: Omit<z.input<typeof reviewInput>, 'project_id'>;
    result: Result<typeof reviewExperience>;
  };
  prepare_context: { input: { readonly scope_id?: string }; result: Result<typeof prepareContext> };
  get_metrics: { input: Readonly<Record<string, never>>; result: Result<typeof continuityMetrics> };
}

export type OperationId = keyof OperationMap;
export type OperationInput<Id extends OperationId> = OperationMap[Id]['input'];
export type OperationResult<Id extends OperationId> = OperationMap[Id]['result'];
