/**
 * Managed work operations on a session stream: start a session, read its projected work, and
 * every change (create, confirm, revise, transition, attach evidence, request input, retry,
 * cancel, reassign). Each change is decided against the projection at the stream's head,
 * applied to the projector first (so an event it would refuse is never written), appended
 * with the runtime's follow-ups only if the head has not moved, and answered with the new
 * projection.
 */
import { z } from 'zod';
import { canonicalJson } from '../core/canonical.ts';
import { BatonError, isBatonError } from '../core/errors.ts';
import { uuidv7Generator } from '../core/ids.ts';
import type { JsonObject, JsonValue } from '../core/json.ts';
import type { Entry, EntryInput } from '../core/ledger/entry.ts';
import { scopeIdSchema, sessionIdSchema, type StreamKey } from '../core/ledger/names.ts';
import { sourceRefSchema, type SourceRef } from '../core/ledger/source.ts';
import { parseRecord } from '../core/records.ts';
import { nonBlankText } from '../core/text.ts';
import { defaultWorkConfig, type WorkConfig } from '../core/work/config.ts';
import { renderControlBlock } from '../core/work/control.ts';
import {
  assumptionSchema,
  constraintSchema,
  contractBounds,
  evidenceRefSchema,
  workCriterionSchema,
  type EvidenceAvailability,
  workIdSchema,
  workItemDefinitionSchema,
  workItemStatuses,
  workOwnerSchema,
  workContractSchema,
  workEventSchema,
  type Actor,
  type WorkContract,
  type WorkEvent,
  type WorkEventInput,
} from '../core/work/model.ts';
import {
  activeContract,
  WorkProjector,
  type ContractProjection,
  type WorkProjection,
  type TerminalMarker,
  type WorkWarning,
} from '../core/work/projector.ts';
import { isInterruption } from '../core/work/interruption.ts';
import { isEndedContractStatus } from '../core/work/outcome.ts';
import { reconcileEvents, type ChildSessionState } from '../core/work/reconcile.ts';
import { workGate } from '../core/work/gate.ts';
import { goalAuditPurpose, goalAuditSchema } from '../core/work/goal.ts';
import { itemChange, readinessEvents, retryTarget, workEvent } from '../core/work/runtime.ts';
import {
  goalChars,
  sessionCapabilitiesSchema,
  sessionEntrySchemas,
  terminalStatuses,
  workModes,
  interruptionHandoffPurpose,
  type InterruptionHandoff,
  type SessionHeader,
  type TerminalStatus,
} from '../core/work/session.ts';
import { retryFrom } from '../core/work/transitions.ts';
import { checkClaims, checkParallel, holdingClaims } from '../core/work/claims.ts';
import { childCapabilities } from '../core/work/lineage.ts';
import { checkOwner, checkLimits, validateContract, type ValidationContext } from '../core/work/validate.ts';
import type { AppDeps } from './deps.ts';
import { resolveEvidence } from './work-evidence.ts';
import { prepareInterruptionHandoff, recordEndedContracts } from './work-outcome.ts';
import { requireAcceptedReceipt } from './continuity.ts';
import { requireReadableEvidence } from './evidence.ts';
import { checkWorkspaceBoundary, usableWorkspaceCheckpoint, workspaceChecker } from './workspace-paths.ts';

/** Entry kinds the work projection reads from a session stream. */
export const workEntryKinds = ['session_header', 'work_event', 'checkpoint', 'terminal', 'receipt'] as const;

export function sessionStream(project_id: string, session_id: string): StreamKey {
  return { project_id, kind: 'session', session_id };
}

export interface WorkSnapshot {
  readonly session_id: string;
  /** The stream position this snapshot was projected at; live events resume after it. */
  readonly position: number;
  readonly projection: WorkProjection | null;
  /** How the session ended (and the Handoff it prepared), or null: present without any work too. */
  readonly terminal: TerminalMarker | null;
  /** The live contract, or null when none is live. */
  readonly contract: ContractProjection | null;
  readonly warnings: readonly WorkWarning[];
  /** The bounded `<work_contract>` block for the model; null when no contract is live. */
  readonly control_block: string | null;
}

// ---- sessions ----

export const startSessionFields = {
  session_id: sessionIdSchema,
  parent_session_id: sessionIdSchema.optional(),
  contract_id: workIdSchema.optional(),
  work_item_id: workIdSchema.optional(),
  work_mode: z.enum(workModes).optional(),
  workspace: z
    .string()
    .min(1)
    .max(4096)
    .regex(/^\//, 'a session workspace is an absolute path')
    // eslint-disable-next-line no-control-regex -- no folder's name holds a control character (NUL above all)
    .regex(/^[^\u0000-\u001f]*$/, 'a session workspace names a folder: no control characters')
    .optional(),
  capabilities: sessionCapabilitiesSchema.optional(),
  /** Binds the session to this Workstream: each contract that ends records a Task Outcome there. */
  scope_id: scopeIdSchema.optional(),
  /** With scope_id: the accepted receipt of that workstream the session works under. */
  handoff_receipt_ref: sourceRefSchema.optional(),
};
export type StartSessionInput = z.input<z.ZodObject<typeof startSessionFields>>;
const startSessionSchema = z.strictObject(startSessionFields);

/**
 * A bound session's handoff_receipt_ref: in its workstream, readable, and an accepted receipt of
 * a committed exact revision, so the outcomes that name it can cover it.
 */
async function requireSessionReceipt(
  deps: AppDeps,
  project_id: string,
  parsed: { scope_id?: string | undefined; handoff_receipt_ref?: SourceRef | undefined },
): Promise<void> {
  const ref = parsed.handoff_receipt_ref!;
  if (parsed.scope_id === undefined) {
    const message = 'a handoff_receipt_ref needs the scope_id of the workstream the session is bound to';
    throw new BatonError('invalid_input', `session is invalid at handoff_receipt_ref: ${message}`, {
      issues: [{ path: 'handoff_receipt_ref', message }],
    });
  }
  const citation = [{ location: 'handoff_receipt_ref', citation: ref }];
  await requireReadableEvidence(deps, project_id, parsed.scope_id, citation, 'session');
  await requireAcceptedReceipt(deps, project_id, ref, 'session');
}

/**
 * A child's lineage names what its parent holds: the contract (the parent's live one when it
 * names none) and, in it, the work item. Otherwise the child could not be traced from the
 * parent's item to its evidence (the spec's "parent → child → evidence → verdict").
 */
async function requireLineage(
  deps: AppDeps,
  project_id: string,
  child: { parent_session_id?: string; contract_id?: string; work_item_id?: string },
): Promise<void> {
  if (child.contract_id === undefined && child.work_item_id === undefined) return;
  const parent_session_id = child.parent_session_id!;
  const projection = (
    await loadSession(deps, sessionStream(project_id, parent_session_id))
  ).projector.projection();
  const contract =
    child.contract_id === undefined
      ? activeContract(projection)
      : projection?.contracts.find((candidate) => candidate.contract_id === child.contract_id);
  const refuse = (path: string, message: string) => {
    throw new BatonError('not_found', `session's ${path} names nothing: ${message}`, {
      rule: 'unknown_lineage',
      issues: [{ path, message }],
    });
  };
  if (contract === undefined) {
    return child.contract_id === undefined
      ? refuse('work_item_id', `parent session ${parent_session_id} has no live contract to hold the item`)
      : refuse('contract_id', `parent session ${parent_session_id} has no contract ${child.contract_id}`);
  }
  if (
    child.work_item_id !== undefined &&
    !contract.items.some((item) => item.item_id === child.work_item_id)
  ) {
    refuse(
      'work_item_id',
      `contract ${contract.contract_id} of ${parent_session_id} has no item ${child.work_item_id}`,
    );
  }
}

/** The header a session would start with: checked (its parent exists), not written. */
/**
 * What only Baton's own agent loop sets in a header (not start_session's callers): the goal,
 * which only its loop audits (docs/agent.md, "Goal mode").
 */
export interface AgentSessionFields {
  readonly goal?: string;
}

const agentSessionSchema = z.strictObject({
  goal: z
    .string()
    .max(goalChars)
    .refine((goal) => goal.trim() !== '', 'a goal says what must be true when the session ends')
    .refine(
      // eslint-disable-next-line no-control-regex -- a goal is words: no control character but tab and line ends
      (goal) => !/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/.test(goal),
      'a goal holds no control characters',
    )
    .optional(),
});

async function sessionHeaderOf(
  deps: AppDeps,
  project_id: string,
  input: StartSessionInput,
  own: AgentSessionFields = {},
): Promise<SessionHeader> {
  const parsed = parseRecord(startSessionSchema, input, 'session');
  const { goal } = parseRecord(agentSessionSchema, own, 'session');
  if (parsed.workspace !== undefined) checkWorkspaceBoundary(deps, parsed.workspace);
  if (parsed.handoff_receipt_ref !== undefined) await requireSessionReceipt(deps, project_id, parsed);
  let capabilities = parsed.capabilities ?? {};
  let workspace = parsed.workspace ?? null;
  if (parsed.parent_session_id !== undefined) {
    const parent = await firstHeader(deps, sessionStream(project_id, parsed.parent_session_id));
    await requireLineage(deps, project_id, parsed);
    const named = new Set(Object.keys((input as { capabilities?: object }).capabilities ?? {}));
    capabilities = childCapabilities(
      parent ?? {
        session_id: parsed.parent_session_id,
        parent_session_id: null,
        capabilities: sessionCapabilitiesSchema.parse({}),
      },
      parsed.capabilities,
      named,
    );
    // A child works in its parent's workspace, or in a folder inside it.
    if (parent?.workspace != null) {
      if (workspace === null) {
        // Inherited, it must still be one this server lets sessions work in.
        checkWorkspaceBoundary(deps, parent.workspace);
        workspace = parent.workspace;
      } else if (!workspaceChecker(parent.workspace)(workspace)) {
        throw new BatonError(
          'invalid_input',
          `a child session works inside its parent's workspace ${JSON.stringify(parent.workspace)}, not in ${JSON.stringify(workspace)}`,
          { rule: 'path_outside_workspace', workspace, parent_session_id: parent.session_id },
        );
      }
    }
  }
  const header = sessionEntrySchemas.session_header.parse({
    schema: 'baton.session-header/v1',
    session_id: parsed.session_id,
    parent_session_id: parsed.parent_session_id ?? null,
    contract_id: parsed.contract_id ?? null,
    work_item_id: parsed.work_item_id ?? null,
    work_mode: parsed.work_mode ?? (deps.work ?? defaultWorkConfig).default_mode,
    workspace,
    capabilities,
    ...(parsed.scope_id === undefined ? {} : { scope_id: parsed.scope_id }),
    ...(parsed.handoff_receipt_ref === undefined ? {} : { handoff_receipt_ref: parsed.handoff_receipt_ref }),
    ...(goal === undefined ? {} : { goal }),
  });
  return header;
}

/** The header a session stream starts with (null for one started before headers); not_found without the stream. */
async function firstHeader(deps: AppDeps, stream: StreamKey): Promise<SessionHeader | null> {
  await deps.store.getStream(stream);
  for await (const entry of deps.store.readStream(stream, { kinds: ['session_header'] })) {
    const parsed = sessionEntrySchemas.session_header.safeParse(entry.content);
    return parsed.success ? parsed.data : null;
  }
  return null;
}

function headerEntry(header: SessionHeader): EntryInput {
  return {
    type: 'session_header',
    source_id: 'session-header',
    content: header,
    metadata: { kind: 'session_header' },
  };
}

/**
 * Start a session stream with its header; the same header again (as read, its defaults
 * included) is a no-op, another one a conflict. Starting a session that already has entries reopens it: its running items are
 * reconciled (reconcileWork).
 */
export async function startSession(
  deps: AppDeps,
  project_id: string,
  input: StartSessionInput,
  own: AgentSessionFields = {},
): Promise<SessionHeader> {
  const header = await sessionHeaderOf(deps, project_id, input, own);
  const stream = sessionStream(project_id, header.session_id);
  const reopened = await deps.store.getStream(stream).then(
    ({ head }) => head > 0,
    (error: unknown) => {
      if (isBatonError(error, 'not_found')) return false;
      throw error;
    },
  );
  // A header written before some of its fields existed reads with their defaults: the same
  // session asked for again is that header, not a conflict, though its stored bytes differ.
  const stored = reopened ? await firstHeader(deps, stream) : null;
  if (stored === null || canonicalJson(stored) !== canonicalJson(header)) {
    await deps.store.append(stream, [headerEntry(header)]);
  }
  if (reopened) await reconcileWork(deps, project_id, { session_id: header.session_id });
  return header;
}

// ---- reading ----

export interface LoadedSession {
  readonly stream: StreamKey;
  readonly head: number;
  readonly header: SessionHeader | null;
  readonly projector: WorkProjector;
}

/** A session stream read once: its first header and its work projected to the head read first. */
export async function loadSession(deps: AppDeps, stream: StreamKey): Promise<LoadedSession> {
  const { head } = await deps.store.getStream(stream);
  const projector = new WorkProjector();
  let header: SessionHeader | null = null;
  for await (const entry of deps.store.readStream(stream, { to: head, kinds: workEntryKinds })) {
    if (entry.type === 'session_header') {
      const parsed = sessionEntrySchemas.session_header.safeParse(entry.content);
      if (parsed.success && header === null) header = parsed.data;
      continue;
    }
    try {
      projector.applyEntry(entry);
    } catch (error) {
      if (error instanceof BatonError) {
        throw new BatonError(
          'precondition_failed',
          `the work ledger of session ${stream.kind === 'session' ? stream.session_id : ''} breaks an invariant at position ${entry.position}: ${error.message}`,
          { ...error.data, position: entry.position },
        );
      }
      throw error;
    }
  }
  return { stream, head, header, projector };
}

function snapshot(stream: StreamKey, position: number, projector: WorkProjector): WorkSnapshot {
  const projection = projector.projection();
  return {
    session_id: stream.kind === 'session' ? stream.session_id : '',
    position,
    projection,
    terminal: projector.terminalMarker(),
    contract: activeContract(projection) ?? null,
    warnings: projector.finalWarnings(),
    control_block: renderControlBlock(projection),
  };
}

/** The projected work of a session: never a writable view, always rebuilt from the ledger. */
export async function readWork(
  deps: AppDeps,
  project_id: string,
  input: { session_id: string },
): Promise<WorkSnapshot> {
  const session_id = parseRecord(sessionIdSchema, input?.session_id, 'session_id');
  const loaded = await loadSession(deps, sessionStream(project_id, session_id));
  return snapshot(loaded.stream, loaded.head, loaded.projector);
}

/** Work events of a session after a position, for live delivery. */
export async function* workEventsAfter(
  deps: AppDeps,
  project_id: string,
  session_id: string,
  after: number,
): AsyncIterable<Entry> {
  const stream = sessionStream(project_id, session_id);
  for await (const entry of deps.store.readStream(stream, { from: after + 1, kinds: ['work_event'] })) {
    yield entry;
  }
}

export interface FollowOptions {
  /** Ends the following: the iteration returns after the event in hand. */
  readonly signal: AbortSignal;
  /**
   * Read again from the last position this often even without a notification: one can be
   * missed (another process wrote to the same SQLite file, or PostgreSQL's LISTEN connection
   * reconnected), and the follower then catches up within this interval.
   */
  readonly catchUpMs: number;
  /**
   * Keep the process running while following (a CLI, where nothing else holds Node's event
   * loop); a server's sockets hold it already, so by default the follower does not.
   */
  readonly holdProcess?: boolean;
}

/**
 * A session's work events after `after`, then each new one as the store commits it, until the
 * signal aborts. Checked before anything is yielded: the session exists (not_found), `after`
 * is not past its head (invalid_input) and the store can subscribe (else its error). Then
 * one read at a time, each from the last position yielded, so no event is skipped or repeated.
 * The subscription ends with the iteration or the signal.
 */
export async function followWorkEvents(
  deps: AppDeps,
  project_id: string,
  session_id: string,
  after: number,
  options: FollowOptions,
): Promise<AsyncGenerator<Entry, void, undefined>> {
  const { signal } = options;
  const { head: start } = await deps.store.getStream(sessionStream(project_id, session_id));
  if (!Number.isSafeInteger(after) || after < 0 || after > start) {
    const problem = after > start ? `is past the session's head ${start}` : 'is not a ledger position';
    throw new BatonError('invalid_input', `position ${after} ${problem}`, {
      rule: 'past_head',
      after,
      head: start,
      issues: [{ path: 'after', message: `a whole number from 0 to ${start}` }],
    });
  }
  let last = after;
  let due = true;
  let wake: (() => void) | undefined;
  const poke = () => {
    due = true;
    wake?.();
  };
  const unsubscribe = await deps.store.subscribe(({ stream, head }) => {
    if (
      stream.kind === 'session' &&
      stream.project_id === project_id &&
      stream.session_id === session_id &&
      head > last
    )
      poke();
  });
  const catchUp = setInterval(poke, options.catchUpMs);
  if (options.holdProcess !== true) catchUp.unref();
  let ended = false;
  const end = async () => {
    if (ended) return;
    ended = true;
    clearInterval(catchUp);
    signal.removeEventListener('abort', stop);
    await unsubscribe();
  };
  // An iteration that never starts still lets go of its subscription when the signal aborts.
  const stop = () => {
    poke();
    void end();
  };
  signal.addEventListener('abort', stop);
  if (signal.aborted) await end();
  return (async function* () {
    try {
      while (!signal.aborted) {
        if (!due) await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
        due = false;
        for await (const entry of workEventsAfter(deps, project_id, session_id, last)) {
          if (signal.aborted) return;
          yield entry;
          last = entry.position;
        }
      }
    } finally {
      await end();
    }
  })();
}

// ---- changing ----

interface Decision {
  /** The stream's head the change is decided against and appended after. */
  readonly head: number;
  readonly projection: WorkProjection | null;
  readonly header: SessionHeader | null;
  readonly config: WorkConfig;
  /** The event recorded under this operation id, if the ledger holds one. */
  readonly recordedOperation: (operation_id: string) => WorkEvent | undefined;
  /** How the item holds this reference, if it was attached to it (and is still kept). */
  readonly attachedEvidence: WorkProjector['attachedEvidence'];
  /** The session's terminal marker, if it has ended. */
  readonly terminal: ReturnType<WorkProjector['terminalMarker']>;
}

/** Session entries other than work events (a checkpoint, a tool result) to append before the events. */
export interface SessionEntryInput {
  readonly type: 'checkpoint' | 'tool_result' | 'receipt' | 'terminal';
  readonly content: JsonValue;
}

export type Decided =
  WorkEventInput[] | { readonly entries: SessionEntryInput[]; readonly events: WorkEventInput[] };

/**
 * How often a change is decided again when another write moved the session first. Each retry
 * waits a random moment that grows with the attempt, so concurrent writers spread out instead
 * of colliding again; 30 writers at once all land (test/work.app.test.ts).
 */
const commitAttempts = 25;

/**
 * Decide events against the head, apply them and the runtime's follow-ups to the projector
 * (which refuses any that break an invariant), then append them only if the stream has not
 * moved; if it has, decide again on the new head. A decision may read the ledger first (an
 * attached reference is resolved so): what it read of this stream is at most the head, and
 * the append happens only if the head is still there.
 */
export async function commitWork(
  deps: AppDeps,
  stream: StreamKey,
  decide: (state: Decision) => Decided | Promise<Decided>,
  /** When the stream does not exist: the header to start it with, in the same append. */
  newSession?: SessionHeader,
): Promise<WorkSnapshot> {
  const config = deps.work ?? defaultWorkConfig;
  for (let attempt = 1; ; attempt += 1) {
    const loaded = await loadSession(deps, stream).catch((error: unknown) => {
      if (newSession === undefined || !isBatonError(error, 'not_found')) throw error;
      return { stream, head: 0, header: newSession, projector: new WorkProjector(), starts: true };
    });
    const { projector } = loaded;
    const projection = projector.projection();
    // Only a bound session records the outcome of a contract that ends (src/app/work-outcome.ts).
    const endedBefore =
      loaded.header?.scope_id === undefined
        ? undefined
        : new Set(
            (projection?.contracts ?? [])
              .filter((contract) => isEndedContractStatus(contract.status))
              .map((contract) => contract.contract_id),
          );
    const decided = await decide({
      head: loaded.head,
      projection,
      header: loaded.header,
      config,
      recordedOperation: (operation_id) => projector.recordedOperation(operation_id),
      attachedEvidence: (contract_id, item_id, ref) => projector.attachedEvidence(contract_id, item_id, ref),
      terminal: projector.terminalMarker(),
    });
    const { entries, events: primary } = Array.isArray(decided) ? { entries: [], events: decided } : decided;
    if (primary.length === 0 && entries.length === 0) return snapshot(stream, loaded.head, projector);
    const at = deps.clock.now().toISOString();
    const writes: EntryInput[] = 'starts' in loaded ? [headerEntry(newSession!)] : [];
    const add = (type: string, content: JsonValue) => {
      const position = loaded.head + writes.length + 1;
      if (type === 'work_event') {
        projector.applyEvent(parseRecord(workEventSchema, content, 'work event'), position, at);
      } else {
        projector.applyEntry({ position, type, content, recorded_at: at });
      }
      writes.push({ type, content, metadata: { kind: type } });
    };
    for (const entry of entries) add(entry.type, entry.content);
    for (const event of primary) add('work_event', event as JsonValue);
    for (const contract of projector.projection()?.contracts ?? []) {
      for (const event of readinessEvents(contract)) add('work_event', event as JsonValue);
    }
    try {
      await deps.store.append(stream, writes, { expected_head: loaded.head });
    } catch (error) {
      if (!(error instanceof BatonError && error.code === 'revision_conflict')) throw error;
      if (attempt >= commitAttempts) {
        throw new BatonError(
          'revision_conflict',
          `the session kept moving under other writes (${attempt} attempts); nothing was written: retry`,
          { rule: 'contention', attempts: attempt },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 2 * attempt));
      continue;
    }
    const written = snapshot(stream, loaded.head + writes.length, projector);
    if (endedBefore === undefined) return written;
    const ended = (written.projection?.contracts ?? []).filter(
      (contract) => isEndedContractStatus(contract.status) && !endedBefore.has(contract.contract_id),
    );
    const warnings = await recordEndedContracts(deps, stream.project_id, loaded.header, ended);
    return withWarnings(written, warnings);
  }
}

/** The snapshot with warnings the projection cannot know of (an outcome not recorded) added. */
function withWarnings(work: WorkSnapshot, warnings: readonly WorkWarning[]): WorkSnapshot {
  return warnings.length === 0 ? work : { ...work, warnings: [...work.warnings, ...warnings] };
}

/** The header a session started with; null for a session started before headers existed. */
export async function readSessionHeader(
  deps: AppDeps,
  project_id: string,
  session_id: string,
): Promise<SessionHeader | null> {
  return (await loadSession(deps, sessionStream(project_id, session_id))).header;
}

function validationContext(header: SessionHeader | null, config: WorkConfig): ValidationContext {
  const capabilities = header?.capabilities ?? sessionCapabilitiesSchema.parse({});
  return {
    max_items: config.max_items,
    max_revisions: config.max_revisions,
    owners: new Set(capabilities.owners),
    tools: new Set(capabilities.tools),
    flows: new Set(capabilities.flows),
    capabilities: new Set(capabilities.capabilities),
    write: capabilities.write,
    insideWorkspace: workspaceChecker(header?.workspace ?? null),
  };
}

/** The contract a change names, or the live one. */
function target(projection: WorkProjection | null, contract_id: string | undefined): ContractProjection {
  const contract =
    contract_id === undefined
      ? activeContract(projection)
      : projection?.contracts.find((candidate) => candidate.contract_id === contract_id);
  if (!contract) {
    throw new BatonError(
      'not_found',
      contract_id === undefined
        ? 'the session has no live work contract'
        : `no work contract "${contract_id}" in the session`,
      contract_id === undefined ? {} : { contract_id },
    );
  }
  return contract;
}

function requireRevision(contract: ContractProjection, revision: number): void {
  if (revision !== contract.revision) {
    throw new BatonError(
      'revision_conflict',
      `this change was made against revision ${revision} of "${contract.contract_id}", but the current revision is ${contract.revision}; read the work again`,
      {
        rule: 'stale_revision',
        contract_id: contract.contract_id,
        expected: contract.revision,
        actual: revision,
      },
    );
  }
}

function unresolved(contract: Pick<WorkContract, 'assumptions'>): string[] {
  return contract.assumptions
    .filter((assumption) => assumption.requires_confirmation && !assumption.resolution)
    .map((assumption) => assumption.assumption_id);
}

/** Whether no two entries are the same, read through `name`. */
function distinct<T>(entries: readonly T[], name: (entry: T) => unknown): boolean {
  return new Set(entries.map(name)).size === entries.length;
}

/**
 * An array of which no two entries name the same `key`, refused before anything is read (as
 * contract validation's duplicate_id would be), and published as `x-baton-unique-by`: JSON
 * Schema's uniqueItems compares whole entries.
 */
function uniqueBy<T extends Record<string, unknown>>(schema: z.ZodArray<z.ZodType<T>>, key: string) {
  return schema
    .refine((entries) => distinct(entries, (entry) => entry[key]), `no two entries have the same ${key}`)
    .meta({ description: `No two entries have the same ${key}.`, 'x-baton-unique-by': key });
}

/** Ids that appear at most once. */
const uniqueIds = (max: number) =>
  z
    .array(workIdSchema)
    .max(max)
    .refine((ids) => distinct(ids, (id) => id), 'each id appears at most once')
    .meta({ uniqueItems: true })
    .default([]);

const base = { session_id: sessionIdSchema };
const which = { contract_id: workIdSchema.optional() };
const revision = z.number().int().min(1);
const reason = z.string().max(4000);

/**
 * What a server's `[work]` configuration bounds in a request: how many items a contract holds,
 * and how far its revisions go. Its OpenAPI document and MCP tool list state them.
 */
export type WorkLimits = Pick<WorkConfig, 'max_items' | 'max_revisions'>;

/**
 * The items of a contract: at most the limits' max_items. Without limits (a schema for no
 * server in particular), the bound no configuration passes, and the configured one in words.
 */
function contractItems(limits: WorkLimits | undefined) {
  return uniqueBy(
    z
      .array(
        workItemDefinitionSchema.extend({
          title: nonBlankText(400, 'an item needs a title'),
          dependencies: uniqueIds(256),
          criterion_ids: uniqueIds(64),
        }),
      )
      .min(1, 'a contract holds at least one item')
      .max(limits?.max_items ?? contractBounds.items),
    'item_id',
  ).meta({
    description:
      (limits === undefined
        ? `At least one item, and at most the server's [work] max_items (${defaultWorkConfig.max_items} unless ` +
          `configured, never more than ${contractBounds.items}): more is refused (too_many_items). `
        : `At least one item, and at most ${limits.max_items} (this server's [work] max_items): more is ` +
          'refused (too_many_items). ') + 'No two items have the same item_id.',
    'x-baton-unique-by': 'item_id',
  });
}

/**
 * The revision a revise follows: one before the limits' max_revisions, the last revision there
 * is. Without limits, one before the bound no configuration passes.
 */
export function previousRevision(limits: WorkLimits | undefined) {
  const last = limits?.max_revisions ?? contractBounds.revisions;
  return revision.max(last - 1).meta({
    description:
      limits === undefined
        ? `The contract's current revision. A contract has at most the server's [work] max_revisions ` +
          `(${defaultWorkConfig.max_revisions} unless configured, never more than ${contractBounds.revisions}): ` +
          'a revise past it is refused (too_many_revisions).'
        : `The contract's current revision. A contract has at most ${last} revisions (this server's ` +
          '[work] max_revisions): a revise past it is refused (too_many_revisions).',
  });
}

/**
 * A contract's definition as callers send it, held to the contract's own bounds from the start;
 * its items come with the limits they are stated under (contractItems).
 */
const definitionFields = {
  objective: nonBlankText(8000, 'the objective is empty'),
  constraints: uniqueBy(
    z.array(constraintSchema).max(contractBounds.constraints),
    'constraint_id',
  ).optional(),
  assumptions: uniqueBy(
    z.array(assumptionSchema).max(contractBounds.assumptions),
    'assumption_id',
  ).optional(),
  criteria: uniqueBy(z.array(workCriterionSchema).max(contractBounds.criteria), 'criterion_id').optional(),
  source_entry_id: z.string().max(200).optional(),
};

/**
 * A new contract's fields, as a server with these limits states them (its items at most its
 * max_items); without limits, as any server takes them, which is how every server parses them:
 * the configured bound is checked with the contract (too_many_items).
 */
export function createContractFieldsFor(limits?: WorkLimits) {
  return {
    ...base,
    contract_id: workIdSchema.optional(),
    ...definitionFields,
    items: contractItems(limits),
    /** Start beside a live contract on purpose instead of being refused. */
    branch: z.boolean().optional(),
  };
}
export const createContractFields = createContractFieldsFor();
export const confirmFields = {
  ...base,
  ...which,
  revision,
  resolutions: z
    .array(z.strictObject({ assumption_id: workIdSchema, resolution: z.string().min(1).max(4000) }))
    .max(256)
    .refine(
      (answers) => new Set(answers.map((answer) => answer.assumption_id)).size === answers.length,
      'each assumption is answered at most once',
    )
    .meta({
      description:
        'Each assumption is answered at most once: no two resolutions name the same assumption_id.',
      'x-baton-unique-by': 'assumption_id',
    })
    .optional(),
};
/** A revision's fields, as a server with these limits states them (see createContractFieldsFor). */
export function reviseFieldsFor(limits?: WorkLimits) {
  return {
    ...base,
    ...which,
    previous_revision: previousRevision(limits),
    ...definitionFields,
    items: contractItems(limits),
    reason,
  };
}
export const reviseFields = reviseFieldsFor();
export const transitionFields = {
  ...base,
  ...which,
  revision,
  item_id: workIdSchema,
  to: z.enum(workItemStatuses),
  reason: reason.optional(),
  /** An idempotency key: the same change under it again appends nothing; another change under it is refused. */
  operation_id: z.string().min(1).max(200).optional(),
};
export const evidenceFields = {
  ...base,
  ...which,
  revision,
  item_id: workIdSchema,
  evidence: evidenceRefSchema,
  operation_id: z.string().min(1).max(200).optional(),
};
export const requestInputFields = { ...base, ...which, revision, question: z.string().min(1).max(4000) };
export const itemFields = { ...base, ...which, item_id: workIdSchema, reason: reason.optional() };
export const reassignFields = {
  ...base,
  ...which,
  item_id: workIdSchema,
  owner: workOwnerSchema,
  child_session_id: sessionIdSchema.optional(),
};

type Input<F extends z.ZodRawShape> = z.output<z.ZodObject<F>>;

/** The strict object schema of each field set, built once: zod compiles a schema on its first use. */
const strictSchemas = new WeakMap<z.ZodRawShape, z.ZodType>();

function parse<F extends z.ZodRawShape>(fields: F, input: unknown, what: string): Input<F> {
  let schema = strictSchemas.get(fields);
  if (!schema) {
    schema = z.strictObject(fields);
    strictSchemas.set(fields, schema);
  }
  return parseRecord(schema, input, what) as Input<F>;
}

/** Create a validated contract; it waits for input when an assumption needs confirmation. */
export async function createContract(
  deps: AppDeps,
  project_id: string,
  input: unknown,
  actor: Actor,
  options: {
    /**
     * Start the session with this header if it does not exist, in the contract's own append:
     * a contract that is refused leaves no session behind.
     */
    readonly startSession?: Omit<StartSessionInput, 'session_id'>;
  } = {},
): Promise<WorkSnapshot> {
  const parsed = parse(createContractFields, input, 'work contract');
  const contract_id = parsed.contract_id ?? `work-${uuidv7Generator(deps.clock)()}`;
  const newSession =
    options.startSession === undefined
      ? undefined
      : await sessionHeaderOf(deps, project_id, { ...options.startSession, session_id: parsed.session_id });
  const decide = ({ header, config }: Decision): Decided => {
    if (newSession?.scope_id !== undefined && header !== newSession) requireSameBinding(header, newSession);
    const { session_id: _session, branch: _branch, contract_id: _id, ...definition } = parsed;
    const contract = parseRecord(
      workContractSchema,
      { ...definition, contract_id, revision: 1 },
      'work contract',
    );
    validateContract(contract, validationContext(header, config));
    const created = { contract_id, revision: 1 };
    const events = [
      workEvent(created, { type: 'contract_created', contract, branch: parsed.branch ?? false }, actor),
    ];
    const open = unresolved(contract);
    if (open.length > 0) {
      events.push(statusChange(created, 'draft', 'awaiting_input', `needs input on ${open.join(', ')}`));
    } else if (config.confirmation !== 'always') {
      events.push(statusChange(created, 'draft', 'active', 'no assumption needs confirmation'));
    }
    return events;
  };
  return commitWork(deps, sessionStream(project_id, parsed.session_id), decide, newSession);
}

/**
 * A contract that asks to bind its session to a workstream, where the session exists already:
 * only the binding it has. Another would be dropped without a word, so it is refused.
 */
function requireSameBinding(header: SessionHeader | null, asked: SessionHeader): void {
  const binding = (of: SessionHeader | null) =>
    canonicalJson({ scope_id: of?.scope_id ?? null, handoff_receipt_ref: of?.handoff_receipt_ref ?? null });
  if (binding(header) === binding(asked)) return;
  throw new BatonError(
    'conflict',
    header?.scope_id === undefined
      ? `session ${asked.session_id} exists and is not bound to a workstream; a session is bound when it starts, so start a new session to bind it`
      : `session ${asked.session_id} is bound to workstream ${header.scope_id}${header.handoff_receipt_ref ? ` under receipt ${header.handoff_receipt_ref.source_id}` : ''}, not as this call asks`,
    { rule: 'session_binding', scope_id: header?.scope_id ?? null },
  );
}

function stripSession<T extends { session_id: string }>(value: T): Omit<T, 'session_id'> {
  const { session_id: _session_id, ...rest } = value;
  return rest;
}

function statusChange(
  contract: Pick<ContractProjection, 'contract_id' | 'revision'>,
  from: ContractProjection['status'],
  to: ContractProjection['status'],
  why: string,
): WorkEventInput {
  return workEvent(
    contract,
    { type: 'contract_status_changed', from, to, reason: why },
    { type: 'runtime', id: 'baton' },
  );
}

/** Answer assumptions and, for a draft or a contract awaiting input, start the work. */
export async function confirmWork(
  deps: AppDeps,
  project_id: string,
  input: unknown,
  actor: Actor,
): Promise<WorkSnapshot> {
  const parsed = parse(confirmFields, input, 'confirmation');
  return commitWork(deps, sessionStream(project_id, parsed.session_id), ({ projection }) => {
    const contract = target(projection, parsed.contract_id);
    requireRevision(contract, parsed.revision);
    const events = (parsed.resolutions ?? []).map((answer) =>
      workEvent(contract, { type: 'assumption_resolved', ...answer }, actor),
    );
    if (
      contract.status === 'draft' ||
      contract.status === 'awaiting_input' ||
      contract.status === 'blocked'
    ) {
      events.push(
        workEvent(
          contract,
          { type: 'contract_status_changed', from: contract.status, to: 'active', reason: 'confirmed' },
          actor,
        ),
      );
    }
    if (events.length === 0) {
      throw new BatonError(
        'conflict',
        `contract "${contract.contract_id}" is ${contract.status}; there is nothing to confirm`,
        {
          rule: 'nothing_to_confirm',
          status: contract.status,
        },
      );
    }
    return events;
  });
}

/** Publish the next revision of the live contract; items keep their state by id. */
export async function reviseContract(
  deps: AppDeps,
  project_id: string,
  input: unknown,
  actor: Actor,
): Promise<WorkSnapshot> {
  const parsed = parse(reviseFields, input, 'revision');
  return commitWork(deps, sessionStream(project_id, parsed.session_id), ({ projection, header, config }) => {
    const current = target(projection, parsed.contract_id);
    // A revision past the limits is refused as such, whatever the current revision is.
    const counts = { revision: parsed.previous_revision + 1, items: parsed.items.length };
    checkLimits(current.contract_id, counts, config);
    if (parsed.previous_revision !== current.revision) requireRevision(current, parsed.previous_revision);
    const { reason: why, previous_revision, contract_id: _id, ...definition } = stripSession(parsed);
    const contract = parseRecord(
      workContractSchema,
      { ...definition, contract_id: current.contract_id, revision: previous_revision + 1 },
      'work contract',
    );
    validateContract(contract, validationContext(header, config));
    const next = { contract_id: current.contract_id, revision: contract.revision };
    const events = [
      workEvent(next, { type: 'contract_revised', previous_revision, contract, reason: why }, actor),
    ];
    const open = unresolved(contract);
    if (open.length > 0 && current.status === 'active') {
      events.push(statusChange(next, 'active', 'awaiting_input', `needs input on ${open.join(', ')}`));
    }
    return events;
  });
}

/** Move an item to another status, as the actor; the projector decides whether it may. */
export async function transitionItem(
  deps: AppDeps,
  project_id: string,
  input: unknown,
  actor: Actor,
): Promise<WorkSnapshot> {
  const parsed = parse(transitionFields, input, 'transition');
  return commitWork(
    deps,
    sessionStream(project_id, parsed.session_id),
    ({ projection, header, config, recordedOperation }) => {
      const replay = operationReplay(
        parsed,
        recordedOperation,
        (kind) =>
          kind.type === 'item_status_changed' && kind.item_id === parsed.item_id && kind.to === parsed.to,
      );
      if (replay) return [];
      const contract = target(projection, parsed.contract_id);
      requireRevision(contract, parsed.revision);
      const item = findItem(contract, parsed.item_id);
      if (parsed.to === 'running' && !holdingClaims.has(item.status)) {
        checkParallel(projection!, contract.contract_id, item.item_id, config.max_parallel);
        checkClaims(projection!, contract.contract_id, item.item_id, header?.workspace ?? null);
      }
      return [itemChange(contract, item, parsed.to, parsed.reason ?? '', actor, parsed.operation_id)];
    },
  );
}

/**
 * Whether a change is the replay of the operation its id was recorded with: the same change
 * again appends nothing. An id names one change: under another change it is refused
 * (operation_reused) with the change it was recorded for, so a reused id never looks like a success.
 */
function operationReplay(
  request: { readonly contract_id?: string | undefined; readonly operation_id?: string | undefined },
  recordedOperation: Decision['recordedOperation'],
  sameChange: (kind: WorkEvent['kind']) => boolean,
): boolean {
  if (request.operation_id === undefined) return false;
  const recorded = recordedOperation(request.operation_id);
  if (recorded === undefined) return false;
  const { kind } = recorded;
  if (sameChange(kind) && (request.contract_id ?? recorded.contract_id) === recorded.contract_id) return true;
  throw new BatonError(
    'conflict',
    `operation ${request.operation_id} was recorded for another change (${kind.type} of "${recorded.operation?.item_id ?? ''}"); an operation id names one change: use a new one`,
    {
      rule: 'operation_reused',
      operation_id: request.operation_id,
      recorded: {
        contract_id: recorded.contract_id,
        item_id: recorded.operation?.item_id ?? null,
        type: kind.type,
        ...(kind.type === 'item_status_changed' ? { to: kind.to } : {}),
      },
    },
  );
}

function operationOf(
  contract_id: string,
  item_id: string,
  attempt: number,
  operation_id: string | undefined,
) {
  return operation_id === undefined ? null : { contract_id, item_id, attempt, operation_id };
}

function findItem(contract: ContractProjection, item_id: string) {
  const item = contract.items.find((candidate) => candidate.item_id === item_id);
  if (!item) {
    throw new BatonError(
      'not_found',
      `no item "${item_id}" in revision ${contract.revision} of "${contract.contract_id}"`,
      {
        contract_id: contract.contract_id,
        item_id,
      },
    );
  }
  return item;
}

/**
 * Attach a typed evidence reference to an item, recorded with whether it resolves in this
 * project's ledger (work-evidence.ts); a reference that does not is kept, marked unavailable.
 * An identical attach again (the reference the item's current attempt holds, resolving as it
 * did, under no new operation id) writes nothing and answers the work as it is, so a retry
 * after a lost answer is safe. Attached evidence completes nothing.
 */
export async function attachEvidence(
  deps: AppDeps,
  project_id: string,
  input: unknown,
  actor: Actor,
): Promise<WorkSnapshot> {
  const parsed = parse(evidenceFields, input, 'evidence');
  const { session_id } = parsed;
  return commitWork(
    deps,
    sessionStream(project_id, session_id),
    async ({ head, projection, recordedOperation, attachedEvidence }) => {
      const replay = operationReplay(
        parsed,
        recordedOperation,
        (kind) =>
          kind.type === 'evidence_attached' &&
          kind.item_id === parsed.item_id &&
          canonicalJson(kind.evidence) === canonicalJson(parsed.evidence),
      );
      if (replay) return [];
      const contract = target(projection, parsed.contract_id);
      // Decided at each attempt: in this session, against the head the event is appended after.
      const resolve = () => resolveEvidence(deps, { project_id, session_id, head }, parsed.evidence);
      const current = contract.items.find((candidate) => candidate.item_id === parsed.item_id);
      const held = attachedEvidence(contract.contract_id, parsed.item_id, parsed.evidence);
      let availability: EvidenceAvailability | undefined;
      // A retry names a revision it read: one the contract has not reached is no retry.
      if (
        parsed.operation_id === undefined &&
        held !== undefined &&
        held.attempt === current?.attempt &&
        parsed.revision <= contract.revision
      ) {
        availability = await resolve();
        // Identical: whatever earlier revision it names, the change it asks for is in the ledger.
        if (canonicalJson(availability) === canonicalJson(held.availability)) return [];
      }
      requireRevision(contract, parsed.revision);
      const item = findItem(contract, parsed.item_id);
      availability ??= await resolve();
      return [
        workEvent(
          contract,
          { type: 'evidence_attached', item_id: parsed.item_id, evidence: parsed.evidence, availability },
          actor,
          operationOf(contract.contract_id, item.item_id, item.attempt, parsed.operation_id),
        ),
      ];
    },
  );
}

/** Pause the live contract for an answer; confirm with the answers resumes it. */
export async function requestInput(
  deps: AppDeps,
  project_id: string,
  input: unknown,
  actor: Actor,
): Promise<WorkSnapshot> {
  const parsed = parse(requestInputFields, input, 'input request');
  return commitWork(deps, sessionStream(project_id, parsed.session_id), ({ projection }) => {
    const contract = target(projection, parsed.contract_id);
    requireRevision(contract, parsed.revision);
    return [
      workEvent(
        contract,
        {
          type: 'contract_status_changed',
          from: contract.status,
          to: 'awaiting_input',
          reason: parsed.question,
        },
        actor,
      ),
    ];
  });
}

/**
 * Start a new attempt of a failed, interrupted or cancelled item: ready, or proposed while a
 * dependency is not done (`retryTarget`).
 */
export async function retryItem(
  deps: AppDeps,
  project_id: string,
  input: unknown,
  actor: Actor,
): Promise<WorkSnapshot> {
  const parsed = parse(itemFields, input, 'retry');
  return commitWork(deps, sessionStream(project_id, parsed.session_id), ({ projection }) => {
    const contract = target(projection, parsed.contract_id);
    const item = findItem(contract, parsed.item_id);
    if (!retryFrom.has(item.status)) {
      throw new BatonError(
        'conflict',
        `item "${item.item_id}" is ${item.status}; only a failed, interrupted or cancelled item is retried`,
        {
          rule: 'invalid_transition',
          item_id: item.item_id,
          from: item.status,
          to: 'ready',
        },
      );
    }
    return [itemChange(contract, item, retryTarget(contract, item), parsed.reason ?? 'retry', actor)];
  });
}

/**
 * The state of an item's child session: whether it exists as a child of `parent_session_id`, and
 * its first terminal marker if it has one. A session whose header names another parent (or none)
 * is no child of this one, whatever it recorded; one without a header (started before headers
 * existed) is taken at its word.
 */
async function childSessionState(
  deps: AppDeps,
  project_id: string,
  session_id: string,
  parent_session_id: string,
): Promise<ChildSessionState> {
  const stream = sessionStream(project_id, session_id);
  let header: SessionHeader | null;
  try {
    header = await firstHeader(deps, stream);
  } catch (error) {
    if (isBatonError(error, 'not_found') || isBatonError(error, 'invalid_input')) return { exists: false };
    throw error;
  }
  if (header !== null && header.parent_session_id !== parent_session_id) return { exists: false };
  let terminal: TerminalStatus | null = null;
  for await (const entry of deps.store.readStream(stream, { kinds: ['terminal'] })) {
    const parsed = sessionEntrySchemas.terminal.safeParse(entry.content);
    if (parsed.success) {
      terminal = parsed.data.status;
      break;
    }
  }
  return { exists: true, terminal };
}

export const reconcileFields = { session_id: sessionIdSchema };

/**
 * Reconcile every running item of the session's live contracts with what its child session
 * recorded (docs/managed-work.md, "Reconciliation"): the runtime's events, committed like any
 * change, so a second reconcile finds nothing running to decide and appends nothing.
 */
export async function reconcileWork(
  deps: AppDeps,
  project_id: string,
  input: { session_id: string },
): Promise<WorkSnapshot> {
  const { session_id } = parse(reconcileFields, input, 'reconcile');
  let bound: SessionHeader | null = null;
  const reconciled = await commitWork(
    deps,
    sessionStream(project_id, session_id),
    async ({ head, projection, header }) => {
      bound = header;
      const events: WorkEventInput[] = [];
      for (const contract of projection?.contracts ?? []) {
        const children = new Map<string, ChildSessionState>();
        const availability = new Map<string, EvidenceAvailability>();
        for (const item of contract.items) {
          const child = item.child_session_id;
          if (item.status !== 'running' || child === null || children.has(child)) continue;
          const state = await childSessionState(deps, project_id, child, session_id);
          children.set(child, state);
          if (state.exists && state.terminal === 'completed') {
            const ref = { type: 'child_session' as const, session_id: child };
            availability.set(child, await resolveEvidence(deps, { project_id, session_id, head }, ref));
          }
        }
        events.push(...reconcileEvents(contract, children, (child) => availability.get(child)!));
      }
      return events;
    },
  );
  // A bound session's ended contracts whose outcome a crash or a refusal left unrecorded.
  const warnings = await recordEndedContracts(
    deps,
    project_id,
    bound,
    reconciled.projection?.contracts ?? [],
  );
  return withWarnings(reconciled, warnings);
}

export const endSessionFields = {
  session_id: sessionIdSchema,
  status: z.enum(terminalStatuses),
  reason: z.string().max(4000).optional(),
};

/**
 * Let a parent observe a child that just ended: the parent's running items delegated to that
 * child are reconciled with its terminal marker (completed → attached and ready for
 * verification, anything else → failed), and nothing else of the parent is touched.
 */
export async function observeChild(
  deps: AppDeps,
  project_id: string,
  parent_session_id: string,
  child_session_id: string,
): Promise<void> {
  await commitWork(deps, sessionStream(project_id, parent_session_id), async ({ head, projection }) => {
    const events: WorkEventInput[] = [];
    for (const contract of projection?.contracts ?? []) {
      const delegated = contract.items.some(
        (item) => item.status === 'running' && item.child_session_id === child_session_id,
      );
      if (!delegated) continue;
      const state = await childSessionState(deps, project_id, child_session_id, parent_session_id);
      const ref = { type: 'child_session' as const, session_id: child_session_id };
      const availability =
        state.exists && state.terminal === 'completed'
          ? await resolveEvidence(deps, { project_id, session_id: parent_session_id, head }, ref)
          : undefined;
      events.push(
        ...reconcileEvents(
          contract,
          new Map([[child_session_id, state]]),
          () => availability ?? { status: 'available' },
          child_session_id,
        ),
      );
    }
    return events;
  });
}

/**
 * The Handoff an interrupted bound session prepares for whoever continues (docs/managed-work.md,
 * "An interrupted bound session"), after its terminal marker is in the ledger: prepared from the
 * state the marker was appended to, then recorded in the session by a `receipt` entry (purpose
 * `interruption_handoff`) that the projection reads as the marker's `handoff`. Once: a session
 * whose marker already names one prepares nothing; one whose preparation was refused prepares it
 * when it is ended the same way again.
 */
async function recordInterruptionHandoff(
  deps: AppDeps,
  project_id: string,
  header: SessionHeader | null,
  ended: WorkSnapshot,
  end: { readonly status: TerminalStatus; readonly reason: string },
): Promise<{ snapshot: WorkSnapshot; warnings: WorkWarning[] }> {
  const scope_id = header?.scope_id;
  const live = ended.contract;
  const terminal = ended.terminal;
  if (
    !isInterruption(end.status) ||
    scope_id === undefined ||
    live === null ||
    terminal === null ||
    terminal.status !== end.status ||
    terminal.handoff !== undefined
  ) {
    return { snapshot: ended, warnings: [] };
  }
  let handoff: InterruptionHandoff;
  try {
    handoff = await prepareInterruptionHandoff(
      deps,
      project_id,
      {
        session_id: ended.session_id,
        scope_id,
        head: ended.position,
        status: end.status,
        reason: end.reason,
      },
      live,
    );
  } catch (error) {
    if (!isBatonError(error)) throw error;
    const warning: WorkWarning = {
      code: 'handoff_not_prepared',
      message: `no handoff was prepared in workstream ${scope_id} for whoever continues: ${error.message}; ending the session ${end.status} again prepares it`,
      contract_id: live.contract_id,
    };
    return { snapshot: ended, warnings: [warning] };
  }
  const snapshot = await commitWork(deps, sessionStream(project_id, ended.session_id), ({ terminal: now }) =>
    now?.handoff !== undefined
      ? []
      : {
          entries: [
            {
              type: 'receipt',
              content: {
                schema: 'baton.receipt/v1',
                receipt_id: handoff.boundary_ref.source_id,
                purpose: interruptionHandoffPurpose,
                details: handoff as unknown as JsonObject,
              },
            },
          ],
          events: [],
        },
  );
  return { snapshot, warnings: [] };
}

/**
 * End a session: append its terminal marker (completed, failed, aborted or max_turns), once
 * (docs/managed-work.md, "Ending a session"). The same end again writes nothing; another one is
 * refused `conflict`, rule `session_ended`. `completed` is refused, rule `work_incomplete`, while
 * the session's own completion gate blocks: a run that leaves its contract open did not complete
 * (end it `aborted` or `failed`). A child session's parent then observes the end at once: its
 * items delegated to this child are reconciled, and a failure to do so is a warning
 * (`parent_not_reconciled`) beside the end, which stands; reconciling the parent again repeats it.
 * A bound session that ends interrupted with a live contract then prepares its Handoff
 * (recordInterruptionHandoff); the same end again prepares it if it was refused.
 */
/**
 * Whether the session's latest goal audit (src/app/goal.ts) passed, on the workspace as it is
 * now: a pass the workspace has since moved past (by its checkpoint) is no pass.
 */
async function goalStillMet(
  deps: AppDeps,
  stream: StreamKey,
  head: number,
  workspace: string | null,
): Promise<boolean> {
  let latest: { verdict: string; checkpoint: string | null } | null = null;
  if (head === 0) return false;
  for await (const entry of deps.store.readStream(stream, { to: head, kinds: ['receipt'] })) {
    const receipt = sessionEntrySchemas.receipt.safeParse(entry.content);
    if (!receipt.success || receipt.data.purpose !== goalAuditPurpose) continue;
    const audit = goalAuditSchema.safeParse(receipt.data.details);
    latest = audit.success ? audit.data : { verdict: 'unknown', checkpoint: null };
  }
  if (latest?.verdict !== 'passed') return false;
  if (latest.checkpoint === null || workspace === null) return true;
  const now = await usableWorkspaceCheckpoint(deps, workspace).catch(() => null);
  return now === latest.checkpoint;
}

export async function endSession(deps: AppDeps, project_id: string, input: unknown): Promise<WorkSnapshot> {
  const parsed = parse(endSessionFields, input, 'session end');
  const stream = sessionStream(project_id, parsed.session_id);
  /** The session's header, as read when the end was decided. */
  const decided: { header: SessionHeader | null } = { header: null };
  const marked = await commitWork(deps, stream, async ({ head, projection, header, terminal }) => {
    decided.header = header;
    if (terminal !== null) {
      if (terminal.status === parsed.status) return [];
      throw new BatonError(
        'conflict',
        `session ${parsed.session_id} already ended ${terminal.status} (ledger position ${terminal.position}); a session ends once`,
        { rule: 'session_ended', status: terminal.status, position: terminal.position },
      );
    }
    if (parsed.status === 'completed') {
      const gate = workGate(projection, { live_children: [], checkpoint: null });
      if (gate.decision === 'block') {
        throw new BatonError(
          'conflict',
          `session ${parsed.session_id} cannot end completed while contract "${gate.contract_id}" is ${gate.status}: finish and verify it, or end the session aborted or failed`,
          {
            rule: 'work_incomplete',
            contract_id: gate.contract_id,
            status: gate.status,
            reasons: gate.reasons,
          },
        );
      }
      // Goal mode: completed only after the judge found the goal met (docs/agent.md), whoever
      // ends the session.
      if (header?.goal !== undefined && !(await goalStillMet(deps, stream, head, header.workspace))) {
        throw new BatonError(
          'conflict',
          `session ${parsed.session_id} has a goal the judge has not found met on the workspace as it is: it ends completed only after a passing goal audit; end it aborted or failed`,
          { rule: 'goal_unaudited' },
        );
      }
    }
    const content = { schema: 'baton.terminal/v1', status: parsed.status, reason: parsed.reason ?? '' };
    return { entries: [{ type: 'terminal', content }], events: [] };
  });
  const { snapshot: ended, warnings } = await recordInterruptionHandoff(
    deps,
    project_id,
    decided.header,
    marked,
    {
      status: parsed.status,
      reason: parsed.reason ?? '',
    },
  );
  const parent = decided.header?.parent_session_id ?? null;
  if (parent === null) return withWarnings(ended, warnings);
  try {
    await observeChild(deps, project_id, parent, parsed.session_id);
    return withWarnings(ended, warnings);
  } catch (error) {
    if (!(error instanceof BatonError)) throw error;
    return withWarnings(ended, [
      ...warnings,
      {
        code: 'parent_not_reconciled',
        message: `parent session ${parent} did not take this end in: ${error.message}; baton work reconcile ${parent} tries again`,
      },
    ]);
  }
}

export async function cancelItem(
  deps: AppDeps,
  project_id: string,
  input: unknown,
  actor: Actor,
): Promise<WorkSnapshot> {
  const parsed = parse(itemFields, input, 'cancellation');
  return commitWork(deps, sessionStream(project_id, parsed.session_id), ({ projection }) => {
    const contract = target(projection, parsed.contract_id);
    const item = findItem(contract, parsed.item_id);
    return [itemChange(contract, item, 'cancelled', parsed.reason ?? 'cancelled', actor)];
  });
}

export async function reassignItem(
  deps: AppDeps,
  project_id: string,
  input: unknown,
  actor: Actor,
): Promise<WorkSnapshot> {
  const parsed = parse(reassignFields, input, 'reassignment');
  return commitWork(deps, sessionStream(project_id, parsed.session_id), ({ projection, header, config }) => {
    const contract = target(projection, parsed.contract_id);
    const item = findItem(contract, parsed.item_id);
    checkOwner(item.item_id, parsed.owner, validationContext(header, config));
    return [
      workEvent(
        contract,
        {
          type: 'item_assigned',
          item_id: item.item_id,
          owner: parsed.owner,
          child_session_id: parsed.child_session_id ?? null,
        },
        actor,
      ),
    ];
  });
}
