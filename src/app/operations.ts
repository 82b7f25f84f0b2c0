/**
 * The operation registry: every operation Baton offers, once, with its input schema, whether
 * it writes, and the one app function it calls. HTTP routes, the OpenAPI document, MCP tools,
 * the typed client and the CLI are all derived from this list; none adds logic of its own.
 */
import { z } from 'zod';
import { ownSourceIdSchema } from '../core/continuity/experience.ts';
import { workKinds } from '../core/continuity/records.ts';
import { boundaryFields, outcomeFields, workContractFields } from '../core/continuity/records.ts';
import { workstreamMarkdown, reportMarkdown } from '../core/handoff/report.ts';
import { preparedHandoffSchema, withBlockedRule } from '../core/handoff/prepared.ts';
import { selectionSchema } from '../core/handoff/resolution.ts';
import { jsonObjectSchema, jsonValueSchema } from '../core/json.ts';
import { scopeIdSchema, sourceIdSchema } from '../core/ledger/names.ts';
import { retractionReasonSchema } from '../core/ledger/source.ts';
import { digestPattern } from '../core/canonical.ts';
import {
  acknowledgeFields,
  acknowledgeHandoff,
  withAcknowledgeRules,
  createWorkContract,
  handoffCurrentWork,
  readContinuity,
  recordTaskOutcome,
} from './continuity.ts';
import type { AppDeps } from './deps.ts';
import { listExperienceCandidates, prepareContext, reviewExperience, reviewInput } from './experience.ts';
import { commitHandoff, continueHandoff } from './handoffs.ts';
import { continuityMetrics } from './metrics.ts';
import { readReport, readWorkstreamReport } from './report.ts';
import { resultSchemas } from './results.ts';
import { captureSource, kindSchema, retractSource, type CaptureSourceInput } from './sources.ts';

export type Access = 'read' | 'write';

export interface Operation<S extends z.ZodType = z.ZodType> {
  /** The spec's operationId, also the MCP tool name where it is a tool. */
  readonly operationId: string;
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly summary: string;
  readonly access: Access;
  /** Idempotent: the same input again changes nothing more (retries are safe). */
  readonly idempotent: boolean;
  /** The input, without project_id: a surface takes the project from its authentication. */
  readonly input: S;
  /** What it answers, as published (src/app/results.ts): open objects, checked by the client. */
  readonly output: z.ZodType;
  /** Run with the caller's validated input (its own object, as sent). */
  run(deps: AppDeps, project_id: string, input: z.input<S>): Promise<unknown>;
}

function operation<S extends z.ZodType>(definition: Operation<S>): Operation {
  return definition;
}

const where = { scope_id: scopeIdSchema, source_id: sourceIdSchema };
/** Where a source is written: any source_id but a review's (review_experience derives those). */
const writeWhere = { scope_id: scopeIdSchema, source_id: ownSourceIdSchema };
const digest = z.string().regex(digestPattern, 'a digest is sha256:<64 hex>');
/**
 * A whole number, or its decimal digits as a query string carries it (at most 15, so it reads
 * exactly); never an empty string or null. The number has the same bound, so a client that
 * writes a documented integer in a query never sends one the server refuses.
 */
const revision = z.union([
  z.number().int().min(0).max(999_999_999_999_999),
  z.string().regex(/^\d{1,15}$/, 'a whole number'),
]);

export const operations: readonly Operation[] = [
  operation({
    operationId: 'capture_source',
    method: 'POST',
    path: '/v1/work/sources/capture',
    summary: 'Capture a source into a workstream; the same content again returns the same receipt.',
    access: 'write',
    idempotent: true,
    output: resultSchemas.capture_source,
    input: z.strictObject({
      ...writeWhere,
      kind: kindSchema.optional(),
      content: jsonValueSchema,
      metadata: jsonObjectSchema.optional(),
    }),
    run: (deps, project_id, input) => captureSource(deps, { ...input, project_id } as CaptureSourceInput),
  }),
  operation({
    operationId: 'retract_source',
    method: 'POST',
    path: '/v1/work/sources/retract',
    summary: 'Purge a source that must not be kept; its tombstone keeps its place and identity.',
    access: 'write',
    idempotent: true,
    output: resultSchemas.retract_source,
    input: z.strictObject({ ...where, reason: retractionReasonSchema }),
    run: (deps, project_id, input) => retractSource(deps, { ...input, project_id }),
  }),
  operation({
    operationId: 'create_work_contract',
    method: 'POST',
    path: '/v1/work/contracts/create',
    summary: 'Validate exact evidence and store a Work Contract source.',
    access: 'write',
    idempotent: true,
    output: resultSchemas.create_work_contract,
    input: z.strictObject({ ...writeWhere, ...workContractFields }),
    run: (deps, project_id, input) => createWorkContract(deps, { ...input, project_id }),
  }),
  operation({
    operationId: 'handoff_current_work',
    method: 'POST',
    path: '/v1/work/handoffs/prepare-current',
    summary: 'Store a boundary source and deterministically finalize a Prepared Handoff (not committed).',
    access: 'write',
    idempotent: true,
    output: resultSchemas.handoff_current_work,
    input: withBlockedRule(z.strictObject({ ...writeWhere, ...boundaryFields })),
    run: (deps, project_id, input) => handoffCurrentWork(deps, { ...input, project_id }),
  }),
  operation({
    operationId: 'commit_handoff',
    method: 'POST',
    path: '/v1/work/handoffs/commit',
    summary: 'Publish a Prepared Handoff as the next immutable revision if the head is still expected_head.',
    access: 'write',
    idempotent: true,
    output: resultSchemas.commit_handoff,
    input: z.strictObject({
      scope_id: scopeIdSchema,
      prepared: z.union([digest, preparedHandoffSchema]),
      expected_head: z.number().int().min(0),
    }),
    run: (deps, project_id, input) =>
      commitHandoff(deps, { ...input, project_id } as Parameters<typeof commitHandoff>[1]),
  }),
  operation({
    operationId: 'continue_handoff',
    method: 'POST',
    path: '/v1/work/handoffs/continue',
    summary: 'Resolve latest, a prepared digest or an exact revision and check every citation again.',
    access: 'read',
    idempotent: true,
    output: resultSchemas.continue_handoff,
    input: z.strictObject({ scope_id: scopeIdSchema, selection: selectionSchema }),
    run: (deps, project_id, input) => continueHandoff(deps, { ...input, project_id }),
  }),
  operation({
    operationId: 'acknowledge_handoff',
    method: 'POST',
    path: '/v1/work/handoffs/acknowledge',
    summary: 'Continue an exact selection, check evidence and store a Receipt source.',
    access: 'write',
    idempotent: true,
    output: resultSchemas.acknowledge_handoff,
    input: withAcknowledgeRules(z.strictObject({ ...writeWhere, ...acknowledgeFields })),
    run: (deps, project_id, input) => acknowledgeHandoff(deps, { ...input, project_id }),
  }),
  operation({
    operationId: 'record_task_outcome',
    method: 'POST',
    path: '/v1/work/outcomes/record',
    summary: 'Store a completion-aware Task Outcome source.',
    access: 'write',
    idempotent: true,
    output: resultSchemas.record_task_outcome,
    input: z.strictObject({ ...writeWhere, ...outcomeFields }),
    run: (deps, project_id, input) => recordTaskOutcome(deps, { ...input, project_id }),
  }),
  operation({
    operationId: 'get_report',
    method: 'GET',
    path: '/v1/work/report',
    summary: 'The Handoff Report of the project or one workstream, as JSON or human Markdown.',
    access: 'read',
    idempotent: true,
    output: resultSchemas.get_report,
    input: z
      .strictObject({
        scope_id: scopeIdSchema.optional(),
        through: revision
          .optional()
          .describe(
            'Read through this revision, with scope_id (refused without it); a selection a report returned.',
          ),
        position: revision
          .optional()
          .describe(
            'Read the journal through this position, with scope_id and through (refused without scope_id); ' +
              'at least the latest position the revision cites.',
          ),
        format: z.enum(['json', 'markdown']).default('json'),
      })
      .superRefine((input, context) => {
        if (input.scope_id !== undefined) return;
        for (const field of ['through', 'position'] as const) {
          if (input[field] !== undefined)
            context.addIssue({
              code: 'custom',
              path: [field],
              message: `${field} reads one workstream: name it with scope_id`,
            });
        }
      })
      .meta({ dependentRequired: { through: ['scope_id'], position: ['scope_id'] } }),
    run: async (deps, project_id, input) => {
      const markdown = input.format === 'markdown';
      if (input.scope_id === undefined) {
        const report = await readReport(deps, { project_id });
        return markdown ? { markdown: reportMarkdown(report) } : report;
      }
      const report = await readWorkstreamReport(deps, {
        project_id,
        scope_id: input.scope_id,
        through: input.through === undefined ? undefined : Number(input.through),
        position: input.position === undefined ? undefined : Number(input.position),
      });
      return markdown ? { markdown: workstreamMarkdown(report) } : report;
    },
  }),
  operation({
    operationId: 'get_work_continuity',
    method: 'GET',
    path: '/v1/work/continuity',
    summary: `The WorkContinuity projection of a workstream (${workKinds.join(', ')}).`,
    access: 'read',
    idempotent: true,
    output: resultSchemas.get_work_continuity,
    input: z.strictObject({
      scope_id: scopeIdSchema,
      through: revision.optional(),
      position: revision.optional(),
    }),
    run: (deps, project_id, input) =>
      readContinuity(deps, {
        project_id,
        scope_id: input.scope_id,
        through: input.through === undefined ? undefined : Number(input.through),
        position: input.position === undefined ? undefined : Number(input.position),
      }),
  }),
  operation({
    operationId: 'list_experience_candidates',
    method: 'GET',
    path: '/v1/work/experience/candidates',
    summary: 'Experience candidates drafted from Task Outcomes, with their review state.',
    access: 'read',
    idempotent: true,
    output: resultSchemas.list_experience_candidates,
    input: z.strictObject({ scope_id: scopeIdSchema.optional() }),
    run: (deps, project_id, input) => listExperienceCandidates(deps, { ...input, project_id }),
  }),
  operation({
    operationId: 'review_experience',
    method: 'POST',
    path: '/v1/work/experience/review',
    summary: 'Approve or reject one experience candidate, once, with a note.',
    access: 'write',
    idempotent: true,
    output: resultSchemas.review_experience,
    input: reviewInput.omit({ project_id: true }),
    run: (deps, project_id, input) => reviewExperience(deps, { ...input, project_id }),
  }),
  operation({
    operationId: 'prepare_context',
    method: 'POST',
    path: '/v1/work/context/prepare',
    summary:
      'The current committed handoff, the active work contract and approved experience, with trust labels.',
    access: 'read',
    idempotent: true,
    output: resultSchemas.prepare_context,
    input: z.strictObject({ scope_id: scopeIdSchema.optional() }),
    run: (deps, project_id, input) => prepareContext(deps, { ...input, project_id }),
  }),
  operation({
    operationId: 'get_metrics',
    method: 'GET',
    path: '/v1/work/metrics',
    summary: 'Continuity metrics of the project with the counts behind each rate.',
    access: 'read',
    idempotent: true,
    output: resultSchemas.get_metrics,
    input: z.strictObject({}),
    run: (deps, project_id) => continuityMetrics(deps, { project_id }),
  }),
];

export function findOperation(operationId: string): Operation | undefined {
  return operations.find((candidate) => candidate.operationId === operationId);
}
