/**
 * The four continuity operations of a Workstream: create_work_contract, handoff_current_work,
 * acknowledge_handoff and record_task_outcome, plus the WorkContinuity projection. Each stores
 * one typed source under the caller's stable source_id, so a retry returns the same receipt.
 * Nothing here grants tool, network, credential or write authority.
 */
import { z } from 'zod';
import { canonicalJson } from '../core/canonical.ts';
import { BatonError, isBatonError } from '../core/errors.ts';
import { locateEvidence } from '../core/continuity/claims.ts';
import { ownSourceIdSchema } from '../core/continuity/experience.ts';
import { answersAcknowledgement } from '../core/continuity/retry.ts';
import { projectContinuity, type WorkContinuity } from '../core/continuity/projection.ts';
import {
  boundaryFields,
  boundarySchema,
  outcomeFields,
  outcomeSchema,
  readWorkRecord,
  receiverChecksSchema,
  receiptStatuses,
  trustLabels,
  workContractFields,
  workKinds,
  type Boundary,
  type BoundaryContent,
  type HandoffReceipt,
  type TaskOutcome,
  type WorkContract,
  type WorkKind,
} from '../core/continuity/records.ts';
import { parseHandoffContent, preparedBody, withBlockedRule } from '../core/handoff/prepared.ts';
import { sealEntry, sealPrepared } from '../core/ledger/entry.ts';
import { evidenceOf, exactTargetSchema } from '../core/handoff/resolution.ts';
import type { JsonObject } from '../core/json.ts';
import { sourceReceipt, type SourceReceipt, type SourceRef } from '../core/ledger/source.ts';
import { parseRecord } from '../core/records.ts';
import type { AppDeps } from './deps.ts';
import { freezeSelection, type Selection } from './selection.ts';
import type { Entry } from '../core/ledger/entry.ts';
import { requireReadableEvidence } from './evidence.ts';
import { checkHandoff, prepareHandoff, type PreparedResult } from './handoffs.ts';

const where = { project_id: z.string(), scope_id: z.string(), source_id: ownSourceIdSchema };

/**
 * An operation's input: the location plus the record's fields, nothing else. Built once per
 * operation, at load: zod compiles a schema on its first parse, which costs more than the parse.
 */
function inputSchema<S extends z.ZodRawShape>(fields: S) {
  return z.strictObject({ ...where, ...fields });
}

const workContractInput = inputSchema(workContractFields);
const boundaryInput = withBlockedRule(inputSchema(boundaryFields));
const outcomeInput = inputSchema(outcomeFields);

async function store<K extends WorkKind>(
  deps: AppDeps,
  at: { project_id: string; scope_id: string; source_id: string },
  kind: K,
  record: JsonObject,
): Promise<{ receipt: SourceReceipt; trust: (typeof trustLabels)[K] }> {
  const receipt = await deps.store.captureSource(
    { project_id: at.project_id, scope_id: at.scope_id },
    { source_id: at.source_id, content: record, metadata: { kind } },
  );
  return { receipt, trust: trustLabels[kind] };
}

/**
 * Run an operation that validates evidence and then stores its record. When it is refused
 * (evidence no longer readable: invalid_input or precondition_failed; other content under the
 * source_id: conflict) and the scope already holds a valid record of this kind under this
 * source_id that `answers` the request, that stored record is the answer: an identical retry
 * of a call that succeeded is answered as it was, even after a cited source was retracted
 * since. Anything else is refused as before. Looked up only on refusal, so a first call pays
 * nothing for it.
 */
async function answeringRetry<R>(
  deps: AppDeps,
  at: { project_id: string; scope_id: string; source_id: string },
  kind: WorkKind,
  answers: (stored: R, content: JsonObject) => boolean,
  run: () => Promise<StoredWorkRecord<R>>,
): Promise<StoredWorkRecord<R>> {
  try {
    return await run();
  } catch (error) {
    // A store that cannot be reached is not a refusal: nothing to look up.
    if (!isBatonError(error) || error.code === 'unavailable') throw error;
    const entry = await deps.store.findSource(
      { project_id: at.project_id, scope_id: at.scope_id },
      at.source_id,
    );
    const content = entry?.retracted === null && entry.metadata?.kind === kind ? entry.content : undefined;
    const work = content === undefined ? undefined : readWorkRecord(kind, content);
    if (!entry || !work || !answers(work.record as R, content as JsonObject)) throw error;
    return {
      receipt: sourceReceipt(at.scope_id, at.source_id, entry.digest, entry.position),
      // As stored, byte for byte the first answer's record.
      record: content as R,
      trust: trustLabels[kind],
    };
  }
}

/** The same record, as canonical JSON compares: key order aside. */
function sameRecord(record: object): (stored: unknown, content: JsonObject) => boolean {
  const expected = canonicalJson(record);
  return (_stored, content) => canonicalJson(content) === expected;
}

function split<T extends { project_id: string; scope_id: string; source_id: string }>(input: T) {
  const { project_id, scope_id, source_id, ...fields } = input;
  return { at: { project_id, scope_id, source_id }, fields };
}

export interface StoredWorkRecord<R> {
  readonly receipt: SourceReceipt;
  readonly record: R;
  readonly trust: string;
}

/** Delegation: validate the contract's evidence and store it. It never overrides current instructions. */
export async function createWorkContract(
  deps: AppDeps,
  input: unknown,
): Promise<StoredWorkRecord<WorkContract>> {
  const { at, fields } = split(parseRecord(workContractInput, input, 'work contract'));
  const record = { schema: 'baton.work-contract/v1', ...fields } as WorkContract;
  return answeringRetry(deps, at, 'work-contract', sameRecord(record), async () => {
    await requireReadableEvidence(deps, at.project_id, at.scope_id, locateEvidence(record), 'work contract');
    const { receipt, trust } = await store(deps, at, 'work-contract', record as JsonObject);
    return { receipt, record, trust };
  });
}

export interface HandoffCurrentWorkResult extends PreparedResult {
  readonly boundary_receipt: SourceReceipt;
  readonly boundary: Boundary;
  readonly trust: 'untrusted_input';
}

/**
 * Store the inspected boundary and deterministically finalize a Prepared Handoff that cites it
 * from every state item and the next action, keeping the original exact citations of verified
 * claims. No model, no commit: commit_handoff publishes.
 */
export async function handoffCurrentWork(deps: AppDeps, input: unknown): Promise<HandoffCurrentWorkResult> {
  const { at, fields } = split(parseRecord(boundaryInput, input, 'handoff boundary'));
  return finalizeBoundary(deps, at, { schema: 'baton.handoff-boundary/v1', ...fields }, callerRetry);
}

const callerRetry = 'fix the cause and retry with the same source_id';

const runtimeBoundarySchema = withBlockedRule(boundarySchema);

/**
 * handoff_current_work for Baton's own managed-work runtime (src/app/work-outcome.ts: an
 * interrupted bound session): the same rules, under a source id of the prefix callers may not use.
 */
export async function prepareRuntimeHandoff(
  deps: AppDeps,
  at: { project_id: string; scope_id: string; source_id: string },
  fields: BoundaryContent,
): Promise<HandoffCurrentWorkResult> {
  const boundary: Boundary = parseRecord(
    runtimeBoundarySchema,
    { schema: 'baton.handoff-boundary/v1', ...fields },
    'handoff boundary',
  );
  return finalizeBoundary(deps, at, boundary);
}

async function finalizeBoundary(
  deps: AppDeps,
  at: { project_id: string; scope_id: string; source_id: string },
  boundary: Boundary,
  /** What the caller does when finalizing fails after the boundary is stored, if anything. */
  retry?: string,
): Promise<HandoffCurrentWorkResult> {
  const handoff = (boundaryRef: SourceRef[]) => ({
    objective: boundary.objective,
    disposition: boundary.disposition,
    statements: boundary.current_state.map((claim) => ({
      text: claim.text,
      basis: claim.basis,
      citations: [...boundaryRef, ...claim.evidence],
    })),
    next_action: {
      text: boundary.next_action.text,
      citations: [...boundaryRef, ...boundary.next_action.evidence],
    },
    omissions: boundary.omissions,
    ...(boundary.blocked ? { blocked: boundary.blocked } : {}),
  });
  // Every rule of the finalized handoff, its size included, is checked before the boundary
  // is stored: the boundary's ref is known before it is written.
  const sealed = sealEntry({
    type: 'source',
    source_id: at.source_id,
    content: boundary,
    metadata: { kind: 'handoff-boundary' },
  });
  const boundaryRef: SourceRef = { scope_id: at.scope_id, source_id: at.source_id, digest: sealed.digest };
  const head = await deps.store.revisionHead({ project_id: at.project_id, scope_id: at.scope_id });
  sealPrepared(preparedBody(at.scope_id, head, parseHandoffContent(handoff([boundaryRef]))));
  await requireReadableEvidence(
    deps,
    at.project_id,
    at.scope_id,
    locateEvidence(boundary),
    'handoff boundary',
  );
  // The capture is explicit and stays even if finalizing fails afterwards.
  const { receipt } = await store(deps, at, 'handoff-boundary', boundary as JsonObject);
  try {
    const prepared = await prepareHandoff(deps, {
      project_id: at.project_id,
      scope_id: at.scope_id,
      ...handoff([receipt.source_ref]),
    });
    return { ...prepared, boundary_receipt: receipt, boundary, trust: 'untrusted_input' };
  } catch (error) {
    // Something changed between the capture and finalizing (a cited source retracted, say).
    // The spec: the failure does not roll the capture back, and its receipt identifies it.
    if (!isBatonError(error)) throw error;
    throw new BatonError(
      error.code,
      `${error.message}; the boundary ${at.source_id} is stored (details.boundary_receipt)${retry ? `: ${retry}` : ''}`,
      { ...error.data, boundary_receipt: receipt },
    );
  }
}

export const acknowledgeFields = {
  // Exact only; latest is refused with a message that says to Continue first.
  target: exactTargetSchema,
  status: z.enum(receiptStatuses),
  receiver_checks: receiverChecksSchema,
  reason: z.string().max(4000).optional(),
  receiver: z.string().max(200).optional(),
};

const checkNames = ['live_workspace', 'capability', 'authorization'] as const;
const allConfirmed =
  'accepted needs live_workspace, capability and authorization all confirmed; otherwise record needs_clarification or declined with a reason';

/**
 * What an acknowledgement's status asks of the rest: accepted needs all three receiver checks
 * confirmed; needs_clarification and declined need a reason that is not blank. The published
 * schema states both with if/then/else, as the refinement checks them.
 */
export function withAcknowledgeRules<
  S extends z.ZodType<{
    status: string;
    reason?: string | undefined;
    receiver_checks: Record<(typeof checkNames)[number], string>;
  }>,
>(schema: S): S {
  return schema
    .superRefine((input, context) => {
      if (input.status === 'accepted') {
        for (const name of checkNames) {
          if (input.receiver_checks[name] !== 'confirmed')
            context.addIssue({ code: 'custom', path: ['receiver_checks', name], message: allConfirmed });
        }
      } else if (!input.reason?.trim()) {
        context.addIssue({ code: 'custom', path: ['reason'], message: `${input.status} needs a reason` });
      }
    })
    .meta({
      if: { properties: { status: { const: 'accepted' } } },
      then: {
        properties: {
          receiver_checks: {
            properties: Object.fromEntries(checkNames.map((name) => [name, { const: 'confirmed' }])),
          },
        },
      },
      else: { required: ['reason'], properties: { reason: { pattern: '\\S' } } },
    });
}

const acknowledgeInput = withAcknowledgeRules(inputSchema(acknowledgeFields));

/**
 * The stored receipt, as the other three operations answer: its record names the exact
 * revision (or prepared digest) acknowledged and what the evidence checks found. The handoff
 * itself is not echoed: the receiver read it with continue_handoff before acknowledging.
 */
export type AcknowledgeResult = StoredWorkRecord<HandoffReceipt>;

/**
 * Record whether the receiver can take one exact handoff. Its evidence is checked again
 * here (as Continue does; the committed head is not needed): a caller's evidence result is
 * never trusted. accepted needs every citation readable and all three receiver checks
 * confirmed; needs_clarification and declined need a reason.
 */
export async function acknowledgeHandoff(deps: AppDeps, input: unknown): Promise<AcknowledgeResult> {
  const { at, fields } = split(parseRecord(acknowledgeInput, input, 'acknowledgement'));
  // A blank reason of an accepted receipt is no reason.
  const reason = fields.reason?.trim() ? fields.reason : undefined;
  // An empty label is no label: it is not stored, so a retry compares it as absent.
  const receiver = fields.receiver ? fields.receiver : undefined;
  const target = fields.target;
  const request = { ...fields, reason, receiver };
  const answers = (stored: HandoffReceipt) => answersAcknowledgement(stored, request);
  return answeringRetry(deps, at, 'handoff-receipt', answers, async () => {
    const checked = await checkHandoff(deps, { project_id: at.project_id, scope_id: at.scope_id }, target);
    const unavailable = checked.evidence_checks.flatMap((check) =>
      check.status === 'unavailable'
        ? [{ location: check.location, citation: check.citation, reason: check.reason }]
        : [],
    );
    if (fields.status === 'accepted' && unavailable.length > 0) {
      throw new BatonError(
        'precondition_failed',
        `cannot accept: ${unavailable.length} citation(s) of this handoff are unavailable; record needs_clarification with a reason`,
        { unavailable_citations: unavailable },
      );
    }
    const record: HandoffReceipt = {
      schema: 'baton.handoff-receipt/v1',
      target: checked.selection,
      status: fields.status,
      evidence: evidenceOf(checked.evidence_checks),
      citations_checked: checked.evidence_checks.length,
      unavailable_citations: unavailable,
      receiver_checks: fields.receiver_checks,
      ...(reason ? { reason } : {}),
      ...(receiver ? { receiver } : {}),
    };
    const { receipt, trust } = await store(deps, at, 'handoff-receipt', record as JsonObject);
    return { receipt, record, trust };
  });
}

/**
 * Record what happened in one attempt. Verified observations, checks and produced artifacts
 * are validated now; a producer's pass claim stays what it was declared as.
 */
export async function recordTaskOutcome(
  deps: AppDeps,
  input: unknown,
): Promise<StoredWorkRecord<TaskOutcome>> {
  const { at, fields } = split(parseRecord(outcomeInput, input, 'task outcome'));
  const record = { schema: 'baton.task-outcome/v1', ...fields } as TaskOutcome;
  return answeringRetry(deps, at, 'task-outcome', sameRecord(record), () => storeOutcome(deps, at, record));
}

/**
 * A handoff_receipt_ref an outcome may name, once it is known readable: an accepted receipt of
 * a committed exact revision (the only kind that can be covered). `what` names the record refused.
 */
export async function requireAcceptedReceipt(
  deps: AppDeps,
  project_id: string,
  ref: SourceRef,
  what: string,
): Promise<void> {
  const entry = await deps.store.readSource(project_id, ref);
  const kind = entry.metadata?.kind;
  const receipt = kind === 'handoff-receipt' ? readWorkRecord(kind, entry.content) : undefined;
  const problem =
    !receipt || receipt.kind !== 'handoff-receipt'
      ? 'it names no valid handoff receipt'
      : receipt.record.target.kind !== 'exact'
        ? 'it names a receipt for a prepared handoff; only a receipt of a committed exact revision can be covered'
        : receipt.record.status !== 'accepted'
          ? `it names a ${receipt.record.status} receipt; only an accepted receipt can be covered`
          : undefined;
  if (problem) {
    throw new BatonError('invalid_input', `${what} is invalid at handoff_receipt_ref: ${problem}`, {
      issues: [{ path: 'handoff_receipt_ref', message: problem }],
    });
  }
}

async function storeOutcome(
  deps: AppDeps,
  at: { project_id: string; scope_id: string; source_id: string },
  record: TaskOutcome,
): Promise<StoredWorkRecord<TaskOutcome>> {
  const ref = record.handoff_receipt_ref;
  const evidence = locateEvidence(record);
  if (ref) evidence.push({ location: 'handoff_receipt_ref', citation: ref });
  await requireReadableEvidence(deps, at.project_id, at.scope_id, evidence, 'task outcome');
  if (ref) await requireAcceptedReceipt(deps, at.project_id, ref, 'task outcome');
  const { receipt, trust } = await store(deps, at, 'task-outcome', record as JsonObject);
  return { receipt, record, trust };
}

/**
 * record_task_outcome for Baton's own managed-work runtime (src/app/work-outcome.ts): the same
 * rules and retry answers, under a source id of the prefix callers may not use.
 */
export async function recordRuntimeOutcome(
  deps: AppDeps,
  at: { project_id: string; scope_id: string; source_id: string },
  fields: Omit<TaskOutcome, 'schema'>,
): Promise<StoredWorkRecord<TaskOutcome>> {
  const record = parseRecord(outcomeSchema, { schema: 'baton.task-outcome/v1', ...fields }, 'task outcome');
  return answeringRetry(deps, at, 'task-outcome', sameRecord(record), () => storeOutcome(deps, at, record));
}

/**
 * The WorkContinuity of a scope, for its current exact revision, or read through an earlier
 * frozen selection (its revision and journal position).
 */
export async function readContinuity(
  deps: AppDeps,
  input: { project_id: string; scope_id: string; through?: number; position?: number },
  frozen?: Selection,
): Promise<WorkContinuity> {
  const scope = { project_id: input.project_id, scope_id: input.scope_id };
  const selection =
    frozen ?? (await freezeSelection(deps, scope, { revision: input.through, position: input.position }));
  const current =
    selection.revision === 0
      ? null
      : {
          revision: selection.revision,
          digest: (await deps.store.getRevision(scope, selection.revision)).prepared_digest,
        };
  const entries =
    selection.position === 0
      ? []
      : await collectEntries(
          deps.store.readStream(
            { ...scope, kind: 'scope' },
            { to: selection.position, kinds: [...workKinds] },
          ),
        );
  return projectContinuity(scope.scope_id, entries, current);
}

async function collectEntries(entries: AsyncIterable<Entry>): Promise<Entry[]> {
  const all: Entry[] = [];
  for await (const entry of entries) all.push(entry);
  return all;
}
