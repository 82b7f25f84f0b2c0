/**
 * The managed-work tools for agents Baton does not run (Claude Code, Codex, any MCP client):
 * work_get, work_transition, work_revise, work_attach_evidence, work_request_input and
 * work_verify. The model proposes; Baton validates against the projection and appends; the
 * result reports the new state. Every change is recorded with the model as its actor, so the
 * projector refuses any move into succeeded or completed: only work_verify (the verifier) can.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type {
  CallToolResult,
  ServerNotification,
  ServerRequest,
  ToolAnnotations,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { authorize } from '../app/auth.ts';
import { workResultSchemas } from '../app/results.ts';
import type { Access } from '../app/operations.ts';
import { verifyWork, type CriterionProgress } from '../app/verify.ts';
import {
  attachEvidence,
  createContract,
  endSession,
  endSessionFields,
  evidenceFields,
  readWork,
  requestInput,
  requestInputFields,
  reviseContract,
  startSessionFields,
  transitionFields,
  transitionItem,
  createContractFieldsFor,
  previousRevision,
  type WorkLimits,
  type WorkSnapshot,
} from '../app/work.ts';
import { defaultWorkConfig } from '../core/work/config.ts';
import { BatonError, isBatonError } from '../core/errors.ts';
import { sessionIdSchema } from '../core/ledger/names.ts';
import { parseRecord } from '../core/records.ts';
import { workGate } from '../core/work/gate.ts';
import { workIdSchema, type Actor } from '../core/work/model.ts';
import { failure, listedOutputSchema, listedSchema, noAuthority, success } from './results.ts';
import type { McpServerOptions } from './server.ts';

const session = { session_id: sessionIdSchema };

/**
 * work_revise's input as a server with these `[work]` limits lists it; without limits, as any
 * server parses it (the configured limits are checked with the contract).
 */
function reviseInputFor(limits?: WorkLimits) {
  return z.strictObject({
    ...createContractFieldsFor(limits),
    /** Absent when the session has no live contract yet: the proposal then creates revision 1. */
    previous_revision: previousRevision(limits).optional(),
    reason: z.string().max(4000).optional(),
    /** Without previous_revision: the session it starts is bound to this workstream (docs/managed-work.md). */
    scope_id: startSessionFields.scope_id,
    handoff_receipt_ref: startSessionFields.handoff_receipt_ref,
  });
}
const reviseInput = reviseInputFor();

type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

interface WorkTool {
  readonly name: string;
  /** For people: what the tool does, in a few words. */
  readonly title: string;
  readonly summary: string;
  /** When a model should call it, said where the model reads it (as the continuity tools do). */
  readonly when: string;
  readonly access: Access;
  readonly idempotent: boolean;
  readonly input: z.ZodType;
  /** The input as a server with these `[work]` limits lists it, where they bound it. */
  readonly inputFor?: (limits: WorkLimits) => z.ZodType;
  /** What a success answers (with its own trust label). */
  readonly output: z.ZodType;
  run(
    options: McpServerOptions,
    args: Record<string, unknown>,
    actor: Actor,
    progress: (progress: CriterionProgress) => void,
    /** Aborted when the client cancels the call or the session closes. */
    signal: AbortSignal,
  ): Promise<unknown>;
}

/**
 * MCP progress for a request whose caller sent a progressToken: one notification as each
 * criterion starts (progress 0 of n, then 1 of n, …). A client may reset its request timeout
 * on each, so a verification of several long shell criteria is not abandoned. A notification
 * that cannot be sent is dropped: the result still comes.
 */
function progressOf(extra: ToolExtra): (progress: CriterionProgress) => void {
  const progressToken = extra._meta?.progressToken;
  if (progressToken === undefined) return () => {};
  return ({ index, total, criterion_id, kind }) => {
    extra
      .sendNotification({
        method: 'notifications/progress',
        params: {
          progressToken,
          progress: index - 1,
          total,
          message: `checking ${index}/${total}: ${criterion_id} (${kind})`,
        },
      })
      .catch(() => {});
  };
}

/** The snapshot with the completion gate's decision on it, for an agent deciding whether to stop. */
function withGate(snapshot: WorkSnapshot) {
  return {
    ...snapshot,
    gate: workGate(snapshot.projection, { live_children: [], checkpoint: null }),
    trust: 'untrusted_history',
  };
}

const workTools: readonly WorkTool[] = [
  {
    name: 'work_get',
    title: 'Read managed work',
    when: 'Call it at the start of a turn in a managed session and before you stop: it says what is ready, blocked or unverified, and whether stopping is allowed.',
    summary:
      "Read the session's managed work: the contract, each item's status, criteria, evidence and whether stopping is allowed.",
    access: 'read',
    idempotent: true,
    input: z.strictObject(session),
    output: workResultSchemas.gatedWorkSnapshot,
    run: async (options, args) =>
      withGate(await readWork(options.deps, options.principal.project_id, args as { session_id: string })),
  },
  {
    name: 'work_transition',
    title: 'Move a work item',
    when: 'Call it as you start, block on or finish an item; finishing is ready_for_verification, never success you declare yourself.',
    summary:
      'Propose an item status change: ready → running, running → blocked, running → ready_for_verification, blocked → ready, and interrupted → ready to retry read-only work (→ proposed while a dependency is not done; one that may have written waits for a person). Only work_verify reaches succeeded. A start is refused (path_claim_held) while another running item claims an overlapping path, and (max_parallel) while the session already runs as many items as [work] max_parallel allows: start it after one finishes.',
    access: 'write',
    idempotent: true,
    input: z.strictObject(transitionFields),
    output: workResultSchemas.gatedWorkSnapshot,
    run: async (options, args, actor) =>
      withGate(await transitionItem(options.deps, options.principal.project_id, args, actor)),
  },
  {
    name: 'work_revise',
    title: 'Propose a work contract',
    when: 'Call it when a task needs several verifiable steps, or when the agreed work must change; not for a one-step answer.',
    summary:
      'Propose the work contract: without previous_revision it creates revision 1 (starting the session if needed; scope_id binds that session to the workstream whose handoff you accepted, handoff_receipt_ref to your accepted receipt, so each contract that ends records its Task Outcome there); with it, the next revision. Baton validates it first.',
    access: 'write',
    idempotent: false,
    input: reviseInput,
    inputFor: reviseInputFor,
    output: workResultSchemas.gatedWorkSnapshot,
    run: async (options, args, actor) => {
      const { previous_revision, reason, scope_id, handoff_receipt_ref, ...rest } = parseRecord(
        reviseInput,
        args,
        'work_revise input',
      );
      const project_id = options.principal.project_id;
      if (previous_revision === undefined) {
        // A session that does not exist starts in the server's workspace, in the contract's own
        // append: a proposal Baton refuses leaves no session behind.
        const startSession = {
          work_mode: 'managed',
          ...(options.workspace === undefined ? {} : { workspace: options.workspace }),
          ...(scope_id === undefined ? {} : { scope_id }),
          ...(handoff_receipt_ref === undefined ? {} : { handoff_receipt_ref }),
        } as const;
        return withGate(await createContract(options.deps, project_id, rest, actor, { startSession }));
      }
      // The contract it names is the one revised (the live one when it names none), as over HTTP.
      const { branch, ...definition } = rest;
      const startsOnly = Object.entries({ branch, scope_id, handoff_receipt_ref }).find(
        ([, value]) => value !== undefined,
      );
      if (startsOnly !== undefined) {
        const [field] = startsOnly;
        throw new BatonError(
          'invalid_input',
          `work_revise input is invalid at ${field}: ${field === 'branch' ? 'branch starts a new contract beside the live one' : `${field} binds the session a first proposal starts`}; a revision (previous_revision) revises the contract it names and starts none`,
          { issues: [{ path: field, message: 'only without previous_revision' }] },
        );
      }
      return withGate(
        await reviseContract(
          options.deps,
          project_id,
          { ...definition, previous_revision, reason: reason ?? '' },
          actor,
        ),
      );
    },
  },
  {
    name: 'work_attach_evidence',
    title: 'Attach evidence to an item',
    when: 'Call it when a tool result, receipt or child session shows where an item stands; attached evidence completes nothing, only work_verify verdicts do.',
    summary:
      "Attach a typed evidence reference (tool result, receipt, child session, …) to an item; whether it resolves in Baton's ledger is recorded with it (evidence_availability, with the reason when it does not). Prose is not evidence.",
    access: 'write',
    idempotent: true,
    input: z.strictObject(evidenceFields),
    output: workResultSchemas.gatedWorkSnapshot,
    run: async (options, args, actor) =>
      withGate(await attachEvidence(options.deps, options.principal.project_id, args, actor)),
  },
  {
    name: 'work_request_input',
    title: 'Ask a person for input',
    when: 'Call it only when a decision needs a person (the objective, accepting a risk, an authorization), never for facts you can read yourself.',
    summary: 'Pause the contract for an answer from a person; work resumes when they confirm.',
    access: 'write',
    idempotent: false,
    input: z.strictObject(requestInputFields),
    output: workResultSchemas.gatedWorkSnapshot,
    run: async (options, args, actor) =>
      withGate(await requestInput(options.deps, options.principal.project_id, args, actor)),
  },
  {
    name: 'work_end',
    title: 'End the session',
    when: 'Call it when your run ends, once: completed only after work_get allows stopping; aborted, failed or max_turns when you stop without finishing. A child session ending tells its parent at once.',
    summary:
      "Record the session's terminal marker (completed, failed, aborted or max_turns), once. completed is refused (work_incomplete) while the contract is open. When the session is a child, the parent's item delegated to it goes up for verification (completed) or fails (anything else). A session bound to a workstream that stops with its contract open prepares a Handoff there for whoever continues (terminal.handoff: its prepared_digest and base_revision); nothing is committed.",
    access: 'write',
    idempotent: true,
    input: z.strictObject(endSessionFields),
    output: workResultSchemas.gatedWorkSnapshot,
    run: async (options, args) =>
      withGate(await endSession(options.deps, options.principal.project_id, args)),
  },
  {
    name: 'work_verify',
    title: 'Verify managed work',
    when: 'Call it after moving items to ready_for_verification and before you stop; one verification of a session runs at a time.',
    summary:
      "Run the contract's criteria (shell criteria in a read-only sandbox) and record each verdict; items succeed and the contract completes only when every required criterion passed.",
    access: 'write',
    idempotent: false,
    input: z.strictObject({ ...session, contract_id: workIdSchema.optional() }),
    output: workResultSchemas.verification,
    run: async (options, args, _actor, progress, signal) => {
      const report = await verifyWork(
        options.deps,
        options.principal.project_id,
        args as { session_id: string; contract_id?: string },
        { onCriterion: progress, signal },
      );
      return { ...report, snapshot: withGate(report.snapshot), trust: 'untrusted_observation' };
    },
  },
];

function annotations(tool: WorkTool): ToolAnnotations {
  return {
    title: tool.title,
    readOnlyHint: tool.access === 'read',
    destructiveHint: false,
    idempotentHint: tool.idempotent,
    openWorldHint: false,
  };
}

async function call(
  tool: WorkTool,
  options: McpServerOptions,
  args: unknown,
  extra: ToolExtra,
): Promise<CallToolResult> {
  try {
    authorize(options.principal, tool.access);
    parseRecord(tool.input, args, `${tool.name} input`);
    const actor: Actor = { type: 'model', id: `token:${options.principal.token_id}` };
    const result = await tool.run(
      options,
      args as Record<string, unknown>,
      actor,
      progressOf(extra),
      extra.signal,
    );
    return success(result, 'untrusted_history');
  } catch (error) {
    if (isBatonError(error)) return failure(error.code, error.message, error.data);
    try {
      options.onError?.(error, tool.name);
    } catch {
      // A failing reporter must not turn a tool error into a crash.
    }
    return failure(
      'internal',
      `${tool.name} failed unexpectedly; nothing more is reported to the caller`,
      {},
    );
  }
}

export const workToolNames = workTools.map((tool) => tool.name);

/** Registers the work tools, listing the `[work]` limits of the server's configuration. */
export function registerWorkTools(server: McpServer, options: McpServerOptions): void {
  const limits = options.deps.work ?? defaultWorkConfig;
  for (const tool of workTools) {
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: `${tool.summary} ${tool.when} ${noAuthority}`,
        inputSchema: listedSchema(tool.inputFor?.(limits) ?? tool.input),
        outputSchema: listedOutputSchema(tool.output, 'untrusted_history'),
        annotations: annotations(tool),
      },
      (args, extra) => call(tool, options, args, extra),
    );
  }
}
