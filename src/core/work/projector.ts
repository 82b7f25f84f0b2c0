/**
 * The pure work projector: session entries in position order → the work state, with warnings
 * for what it kept but could not read and for runtime state nobody reconciled. It is the only
 * way anything learns work state, and the same function validates a proposed event before it
 * is appended: an event the projector would refuse is never written.
 */
import { canonicalJson } from '../canonical.ts';
import { BatonError } from '../errors.ts';
import type { JsonValue } from '../json.ts';
import {
  terminalContractStatuses,
  workEventSchema,
  type Actor,
  type Assumption,
  type ContractStatus,
  type CriterionResult,
  type EvidenceAvailability,
  type EvidenceRef,
  type WorkContract,
  type WorkCriterion,
  type WorkEvent,
  type WorkEventKind,
  type WorkItemDefinition,
  type WorkItemStatus,
  type WorkOwner,
} from './model.ts';
import {
  interruptionHandoffPurpose,
  interruptionHandoffSchema,
  sessionEntrySchemas,
  type InterruptionHandoff,
  type TerminalStatus,
} from './session.ts';
import { contractTransitionAllowed, isRetry, itemDone, itemTransitionAllowed } from './transitions.ts';
import { validateStructure } from './validate.ts';

/** What the projector needs of a ledger entry. */
export interface ProjectableEntry {
  readonly position: number;
  readonly type: string;
  readonly recorded_at: string;
  readonly content: JsonValue | null;
}

export interface WorkItemState {
  readonly item_id: string;
  readonly status: WorkItemStatus;
  readonly attempt: number;
  readonly owner: WorkOwner;
  readonly child_session_id: string | null;
  readonly started_at: string | null;
  readonly finished_at: string | null;
  readonly blocker: string | null;
  /** The latest evidence, at most `evidenceKept`; evidence_count counts all of it. */
  readonly evidence: readonly EvidenceRef[];
  readonly evidence_count: number;
  /**
   * Whether each of `evidence`, at the same index, resolved in the ledger when it was attached
   * (when attached again, the latest decision).
   */
  readonly evidence_availability: readonly EvidenceAvailability[];
}

export interface CriterionState {
  readonly criterion_id: string;
  readonly result: CriterionResult | null;
  /** Position of the entry that recorded the result. */
  readonly recorded_position: number | null;
  /** The verdict was taken at a checkpoint the workspace has since moved past. */
  readonly stale: boolean;
}

export interface ContractProjection {
  readonly contract_id: string;
  readonly revision: number;
  readonly status: ContractStatus;
  readonly status_reason: string;
  readonly branch: boolean;
  /** The definition at the current revision, with every assumption's resolution. */
  readonly contract: WorkContract;
  readonly items: readonly WorkItemState[];
  readonly criteria: readonly CriterionState[];
  readonly created_position: number;
  readonly updated_position: number;
  readonly events: number;
}

export type WorkWarningCode =
  | 'unreadable_work_event'
  | 'unknown_work_event'
  | 'unreadable_entry'
  | 'interrupted_item'
  | 'unreconciled_running'
  | 'stale_verdict'
  /** A bound session's ended contract whose Task Outcome could not be recorded (src/app/work-outcome.ts). */
  | 'outcome_not_recorded'
  /** A child session ended but its parent's items could not be reconciled with it (src/app/work.ts, endSession). */
  | 'parent_not_reconciled'
  /** An interrupted bound session ended, but its Handoff could not be prepared (src/app/work.ts, endSession). */
  | 'handoff_not_prepared';

export interface WorkWarning {
  readonly code: WorkWarningCode;
  readonly message: string;
  readonly position?: number;
  readonly contract_id?: string;
  readonly item_id?: string;
}

export interface WorkProjection {
  readonly contracts: readonly ContractProjection[];
  /** The newest contract that is not terminal; null when none is live. */
  readonly active_contract_id: string | null;
  /** Position of the last entry projected. */
  readonly position: number;
  readonly latest_checkpoint: string | null;
  readonly terminal: TerminalMarker | null;
}

/** A session's terminal marker as projected: how and where it ended, and the Handoff it prepared. */
export interface TerminalMarker {
  readonly status: TerminalStatus;
  readonly position: number;
  /** Present only when an interrupted bound session prepared one (src/core/work/interruption.ts). */
  readonly handoff?: InterruptionHandoff;
}

export type WorkProjectionResult =
  | {
      readonly ok: true;
      readonly projection: WorkProjection | null;
      readonly warnings: readonly WorkWarning[];
    }
  | { readonly ok: false; readonly error: BatonError; readonly warnings: readonly WorkWarning[] };

export const evidenceKept = 64;

/** Why an event is refused: the stable `rule` a caller reads from error.data. */
export type WorkRule =
  | 'duplicate_contract'
  | 'second_active_contract'
  | 'unknown_contract'
  | 'contract_closed'
  | 'stale_revision'
  | 'revision_not_increasing'
  | 'status_mismatch'
  | 'invalid_transition'
  | 'attempt_mismatch'
  | 'dependencies_pending'
  | 'contract_not_active'
  | 'completion_unverified'
  | 'criteria_not_passed'
  | 'needs_input'
  | 'unknown_item'
  | 'unknown_criterion'
  | 'unknown_assumption'
  | 'removes_running_item'
  | 'verifier_only'
  | 'duplicate_operation'
  | 'review_required'
  | 'flow_owned';

function refuse(rule: WorkRule, message: string, data: Record<string, unknown> = {}): never {
  throw new BatonError(rule === 'stale_revision' ? 'revision_conflict' : 'conflict', message, {
    rule,
    ...data,
  });
}

/** How an item holds one attached reference: decided as it was last attached, in which attempt. */
export interface AttachedEvidence {
  readonly availability: EvidenceAvailability;
  /** The item's attempt when the reference was last attached. */
  readonly attempt: number;
}

interface MutableEvidence {
  readonly key: string;
  readonly ref: EvidenceRef;
  availability: EvidenceAvailability;
  attempt: number;
}

interface MutableItem {
  item_id: string;
  status: WorkItemStatus;
  attempt: number;
  owner: WorkOwner;
  child_session_id: string | null;
  started_at: string | null;
  finished_at: string | null;
  blocker: string | null;
  /** Interrupted after a possible write: only a person retries it. */
  review_required: boolean;
  evidence: MutableEvidence[];
  evidence_keys: Set<string>;
  evidence_count: number;
}

interface MutableCriterion {
  result: CriterionResult | null;
  recorded_position: number | null;
}

interface MutableContract {
  contract_id: string;
  revision: number;
  status: ContractStatus;
  status_reason: string;
  branch: boolean;
  contract: WorkContract;
  definitions: Map<string, WorkItemDefinition>;
  criteria: Map<string, WorkCriterion>;
  items: Map<string, MutableItem>;
  results: Map<string, MutableCriterion>;
  resolutions: Map<string, string>;
  created_position: number;
  updated_position: number;
  events: number;
}

const finishedItem: ReadonlySet<WorkItemStatus> = new Set(['succeeded', 'failed', 'skipped', 'cancelled']);

/** An incremental projector: feed entries in position order, read the state at any point. */
export class WorkProjector {
  private readonly contracts = new Map<string, MutableContract>();
  private position = 0;
  private latestCheckpoint: string | null = null;
  private terminal: TerminalMarker | null = null;
  /** The event each operation id of a retryable effect was recorded with: each may happen once. */
  private readonly operations = new Map<string, WorkEvent>();
  readonly warnings: WorkWarning[] = [];

  /** The event recorded under this operation id, if the ledger holds one. */
  recordedOperation(operation_id: string): WorkEvent | undefined {
    return this.operations.get(operation_id);
  }

  /**
   * The item's latest attach of this reference (canonically equal), while the item keeps it
   * among its latest `evidenceKept`; undefined otherwise.
   */
  attachedEvidence(contract_id: string, item_id: string, ref: EvidenceRef): AttachedEvidence | undefined {
    const item = this.contracts.get(contract_id)?.items.get(item_id);
    const key = canonicalJson(ref);
    if (!item?.evidence_keys.has(key)) return undefined;
    const kept = item.evidence.find((attached) => attached.key === key);
    return kept && { availability: kept.availability, attempt: kept.attempt };
  }

  /** The session's latest terminal marker, whether or not it has work. */
  terminalMarker(): TerminalMarker | null {
    return this.terminal;
  }

  /** Apply one entry; throws a conflict BatonError (data.rule) when it breaks an invariant. */
  applyEntry(entry: ProjectableEntry): void {
    this.position = entry.position;
    switch (entry.type) {
      case 'work_event':
        this.applyWorkEntry(entry);
        return;
      case 'checkpoint': {
        const parsed = sessionEntrySchemas.checkpoint.safeParse(entry.content);
        if (parsed.success) this.latestCheckpoint = parsed.data.checkpoint;
        else
          this.warn(
            'unreadable_entry',
            `checkpoint at position ${entry.position} is unreadable`,
            entry.position,
          );
        return;
      }
      case 'terminal': {
        const parsed = sessionEntrySchemas.terminal.safeParse(entry.content);
        if (parsed.success) this.terminal = { status: parsed.data.status, position: entry.position };
        else
          this.warn(
            'unreadable_entry',
            `terminal marker at position ${entry.position} is unreadable`,
            entry.position,
          );
        return;
      }
      case 'receipt': {
        // The Handoff an interrupted bound session prepared: the first one after its marker.
        if (this.terminal === null || this.terminal.handoff !== undefined) return;
        const parsed = sessionEntrySchemas.receipt.safeParse(entry.content);
        if (!parsed.success || parsed.data.purpose !== interruptionHandoffPurpose) return;
        const handoff = interruptionHandoffSchema.safeParse(parsed.data.details);
        if (handoff.success) this.terminal = { ...this.terminal, handoff: handoff.data };
        else
          this.warn(
            'unreadable_entry',
            `the handoff recorded at position ${entry.position} is unreadable`,
            entry.position,
          );
        return;
      }
      default:
        return;
    }
  }

  private applyWorkEntry(entry: ProjectableEntry): void {
    const parsed = workEventSchema.safeParse(entry.content);
    if (!parsed.success) {
      const type = (entry.content as { kind?: { type?: unknown } } | null)?.kind?.type;
      const known = typeof type === 'string' && workEventKindNames.has(type);
      this.warn(
        known ? 'unreadable_work_event' : 'unknown_work_event',
        known
          ? `work event at position ${entry.position} is unreadable; kept in the ledger, not projected`
          : `work event at position ${entry.position} has a kind this Baton does not know (${String(type)}); kept, not projected`,
        entry.position,
      );
      return;
    }
    this.applyEvent(parsed.data, entry.position, entry.recorded_at);
  }

  /** Apply one parsed event as if recorded at `position` and `at`. */
  applyEvent(event: WorkEvent, position: number, at: string): void {
    this.position = Math.max(this.position, position);
    const { kind, operation } = event;
    if (operation) {
      if (this.operations.has(operation.operation_id)) {
        refuse(
          'duplicate_operation',
          `operation ${operation.operation_id} was recorded already; it never happens twice`,
          {
            operation_id: operation.operation_id,
          },
        );
      }
      if (operation.contract_id !== event.contract_id) {
        refuse(
          'unknown_contract',
          `operation ${operation.operation_id} names contract "${operation.contract_id}", not "${event.contract_id}"`,
          {
            contract_id: operation.contract_id,
          },
        );
      }
    }
    if (kind.type === 'contract_created') {
      this.create(event, kind, position);
      if (operation) this.operations.set(operation.operation_id, event);
      return;
    }
    const contract = this.contracts.get(event.contract_id);
    if (!contract)
      refuse('unknown_contract', `no contract "${event.contract_id}" in this session`, {
        contract_id: event.contract_id,
      });
    if (terminalContractStatuses.has(contract.status)) {
      refuse(
        'contract_closed',
        `contract "${contract.contract_id}" is ${contract.status}; it takes no more events`,
        {
          contract_id: contract.contract_id,
          status: contract.status,
        },
      );
    }
    if (kind.type === 'contract_revised') {
      this.revise(contract, event, kind);
    } else {
      if (event.revision !== contract.revision) {
        refuse(
          'stale_revision',
          `event names revision ${event.revision} of "${contract.contract_id}", but the current revision is ${contract.revision}`,
          { contract_id: contract.contract_id, expected: contract.revision, actual: event.revision },
        );
      }
      this.applyToContract(contract, event.actor, kind, at, position);
    }
    contract.updated_position = position;
    contract.events += 1;
    if (operation) this.operations.set(operation.operation_id, event);
  }

  private create(
    event: WorkEvent,
    kind: Extract<WorkEventKind, { type: 'contract_created' }>,
    position: number,
  ): void {
    const { contract } = kind;
    if (this.contracts.has(contract.contract_id)) {
      refuse('duplicate_contract', `contract "${contract.contract_id}" exists already`, {
        contract_id: contract.contract_id,
      });
    }
    if (contract.contract_id !== event.contract_id || contract.revision !== 1 || event.revision !== 1) {
      refuse('revision_not_increasing', `a new contract starts at revision 1 under its own id`, {
        contract_id: contract.contract_id,
      });
    }
    const live = [...this.contracts.values()].find((other) => !terminalContractStatuses.has(other.status));
    if (live && !kind.branch) {
      refuse(
        'second_active_contract',
        `contract "${live.contract_id}" is still ${live.status}; end it or create the new one as a branch`,
        { contract_id: contract.contract_id, active_contract_id: live.contract_id },
      );
    }
    validateStructure(contract);
    const created: MutableContract = {
      contract_id: contract.contract_id,
      revision: 1,
      status: 'draft',
      status_reason: '',
      branch: kind.branch,
      contract,
      definitions: new Map(),
      criteria: new Map(),
      items: new Map(),
      results: new Map(),
      resolutions: new Map(),
      created_position: position,
      updated_position: position,
      events: 1,
    };
    installDefinition(created, contract);
    this.contracts.set(contract.contract_id, created);
  }

  private revise(
    contract: MutableContract,
    event: WorkEvent,
    kind: Extract<WorkEventKind, { type: 'contract_revised' }>,
  ): void {
    const next = kind.contract;
    if (
      kind.previous_revision !== contract.revision ||
      next.revision !== contract.revision + 1 ||
      event.revision !== next.revision ||
      next.contract_id !== contract.contract_id
    ) {
      refuse(
        kind.previous_revision < contract.revision ? 'stale_revision' : 'revision_not_increasing',
        `a revision of "${contract.contract_id}" must follow revision ${contract.revision} with revision ${contract.revision + 1}`,
        { contract_id: contract.contract_id, expected: contract.revision, actual: kind.previous_revision },
      );
    }
    validateStructure(next);
    const kept = new Set(next.items.map((item) => item.item_id));
    for (const item of contract.items.values()) {
      if (!kept.has(item.item_id) && (item.status === 'running' || item.status === 'waiting_approval')) {
        refuse(
          'removes_running_item',
          `revision ${next.revision} drops item "${item.item_id}" while it is ${item.status}`,
          {
            contract_id: contract.contract_id,
            item_id: item.item_id,
          },
        );
      }
    }
    installDefinition(contract, next);
    contract.revision = next.revision;
  }

  private applyToContract(
    contract: MutableContract,
    actor: Actor,
    kind: WorkEventKind,
    at: string,
    position: number,
  ): void {
    const data = { contract_id: contract.contract_id };
    switch (kind.type) {
      case 'contract_status_changed': {
        if (kind.from !== contract.status) {
          refuse('status_mismatch', `contract is ${contract.status}, not ${kind.from}`, {
            ...data,
            status: contract.status,
          });
        }
        if (!contractTransitionAllowed(actor.type, kind.from, kind.to)) {
          refuse(
            'invalid_transition',
            `${actor.type} may not move a contract from ${kind.from} to ${kind.to}`,
            {
              ...data,
              actor: actor.type,
              from: kind.from,
              to: kind.to,
            },
          );
        }
        if (kind.to === 'active') {
          const open = unresolvedAssumptions(contract);
          if (open.length > 0) {
            refuse('needs_input', `assumption ${open.join(', ')} needs an answer before the work starts`, {
              ...data,
              assumption_ids: open,
            });
          }
        }
        if (kind.to === 'completed') {
          const blockers = completionBlockers(this.contractView(contract));
          if (blockers.length > 0) {
            refuse('completion_unverified', `contract cannot complete: ${blockers[0]!.message}`, {
              ...data,
              blockers,
            });
          }
        }
        contract.status = kind.to;
        contract.status_reason = kind.reason;
        return;
      }
      case 'item_status_changed': {
        const item = requireItem(contract, kind.item_id);
        this.transitionItem(contract, item, actor, kind, at);
        return;
      }
      case 'item_assigned': {
        const item = requireItem(contract, kind.item_id);
        if (item.owner.type === 'flow' && actor.type === 'model') {
          // The flow owns it: the model may not take it away, nor hand it to a worker.
          refuse(
            'flow_owned',
            `item "${item.item_id}" is owned by flow:${item.owner.name}: the model may not reassign it`,
            {
              ...data,
              item_id: item.item_id,
            },
          );
        }
        item.owner = kind.owner;
        item.child_session_id = kind.child_session_id;
        return;
      }
      case 'evidence_attached': {
        const item = requireItem(contract, kind.item_id);
        const key = canonicalJson(kind.evidence);
        if (item.evidence_keys.has(key)) {
          // The same reference again is the same evidence, decided anew.
          const kept = item.evidence.find((attached) => attached.key === key);
          if (kept) {
            kept.availability = kind.availability;
            kept.attempt = item.attempt;
          }
          return;
        }
        item.evidence_keys.add(key);
        item.evidence.push({
          key,
          ref: kind.evidence,
          availability: kind.availability,
          attempt: item.attempt,
        });
        item.evidence_count += 1;
        if (item.evidence.length > evidenceKept) {
          const dropped = item.evidence.shift()!;
          item.evidence_keys.delete(dropped.key);
        }
        return;
      }
      case 'assumption_resolved': {
        if (
          !contract.contract.assumptions.some((assumption) => assumption.assumption_id === kind.assumption_id)
        ) {
          refuse(
            'unknown_assumption',
            `no assumption "${kind.assumption_id}" in revision ${contract.revision}`,
            {
              ...data,
              assumption_id: kind.assumption_id,
            },
          );
        }
        contract.resolutions.set(kind.assumption_id, kind.resolution);
        return;
      }
      case 'verification_recorded': {
        if (!contract.criteria.has(kind.criterion_id)) {
          refuse(
            'unknown_criterion',
            `no criterion "${kind.criterion_id}" in revision ${contract.revision}`,
            {
              ...data,
              criterion_id: kind.criterion_id,
            },
          );
        }
        if (actor.type !== 'verifier' && actor.type !== 'runtime') {
          refuse('verifier_only', `only the verifier records a verdict, not ${actor.type}`, {
            ...data,
            actor: actor.type,
          });
        }
        contract.results.set(kind.criterion_id, { result: kind.result, recorded_position: position });
        return;
      }
      default:
        return;
    }
  }

  private transitionItem(
    contract: MutableContract,
    item: MutableItem,
    actor: Actor,
    kind: Extract<WorkEventKind, { type: 'item_status_changed' }>,
    at: string,
  ): void {
    const data = { contract_id: contract.contract_id, item_id: item.item_id };
    if (kind.from !== item.status) {
      refuse('status_mismatch', `item "${item.item_id}" is ${item.status}, not ${kind.from}`, {
        ...data,
        status: item.status,
      });
    }
    if (!itemTransitionAllowed(actor.type, kind.from, kind.to)) {
      refuse(
        'invalid_transition',
        `${actor.type} may not move item "${item.item_id}" from ${kind.from} to ${kind.to}`,
        {
          ...data,
          actor: actor.type,
          from: kind.from,
          to: kind.to,
        },
      );
    }
    const retry = isRetry(kind.from, kind.to);
    // A flow-owned item is run by its flow alone (docs/flows.md): the model may take it up again
    // after an interruption or a blocker, never start, stop or finish it by hand.
    if (item.owner.type === 'flow' && actor.type === 'model' && !retry && kind.to !== 'ready') {
      refuse(
        'flow_owned',
        `item "${item.item_id}" is owned by flow:${item.owner.name}: only its flow moves it (the flow tool runs it)`,
        {
          ...data,
          actor: actor.type,
        },
      );
    }
    if (item.review_required && retry && actor.type !== 'human') {
      refuse(
        'review_required',
        `item "${item.item_id}" was interrupted after a possible write: a person reviews it before any retry`,
        { ...data, actor: actor.type },
      );
    }
    const attempt = retry ? item.attempt + 1 : item.attempt;
    if (kind.attempt !== attempt) {
      refuse(
        'attempt_mismatch',
        `item "${item.item_id}" is on attempt ${item.attempt}; this change needs attempt ${attempt}`,
        {
          ...data,
          expected: attempt,
          actual: kind.attempt,
        },
      );
    }
    const definition = contract.definitions.get(item.item_id)!;
    if (kind.to === 'ready' || kind.to === 'running') {
      const pending = definition.dependencies.filter(
        (dependency) => !itemDone.has(contract.items.get(dependency)!.status),
      );
      if (pending.length > 0) {
        refuse('dependencies_pending', `item "${item.item_id}" waits for ${pending.join(', ')}`, {
          ...data,
          pending,
        });
      }
    }
    if (kind.to === 'running' && contract.status !== 'active') {
      refuse('contract_not_active', `contract is ${contract.status}; no item runs until it is active`, {
        ...data,
        status: contract.status,
      });
    }
    if (kind.to === 'succeeded') {
      const failing = itemCriteriaBlockers(contract, definition, this.latestCheckpoint);
      if (failing.length > 0) {
        refuse('criteria_not_passed', `item "${item.item_id}" cannot succeed: ${failing.join('; ')}`, {
          ...data,
          failing,
        });
      }
    }
    item.status = kind.to;
    item.attempt = attempt;
    item.blocker = kind.to === 'blocked' || kind.to === 'waiting_approval' ? kind.reason : null;
    item.review_required = kind.to === 'interrupted' && kind.review_required === true;
    if (kind.to === 'running' && kind.from !== 'waiting_approval' && kind.from !== 'blocked') {
      item.started_at = at;
      item.finished_at = null;
    }
    // Back to work, or a new attempt waiting for its dependencies: nothing has finished.
    if (kind.to === 'ready' || retry) item.finished_at = null;
    // A new attempt has not started yet: the last one's start is not its own.
    if (retry) item.started_at = null;
    if (finishedItem.has(kind.to)) item.finished_at = at;
  }

  private warn(
    code: WorkWarningCode,
    message: string,
    position?: number,
    extra: Partial<WorkWarning> = {},
  ): void {
    this.warnings.push({ code, message, ...(position === undefined ? {} : { position }), ...extra });
  }

  private contractView(contract: MutableContract): ContractProjection {
    const assumptions = contract.contract.assumptions.map((assumption) => ({
      ...assumption,
      resolution: contract.resolutions.get(assumption.assumption_id) ?? assumption.resolution,
    }));
    return {
      contract_id: contract.contract_id,
      revision: contract.revision,
      status: contract.status,
      status_reason: contract.status_reason,
      branch: contract.branch,
      contract: { ...contract.contract, assumptions },
      items: contract.contract.items.map((definition) => {
        const {
          evidence_keys: _keys,
          review_required: _review,
          evidence,
          ...item
        } = contract.items.get(definition.item_id)!;
        return {
          ...item,
          evidence: evidence.map((attached) => attached.ref),
          evidence_availability: evidence.map((attached) => attached.availability),
        };
      }),
      criteria: contract.contract.criteria.map((criterion) => {
        const state = contract.results.get(criterion.criterion_id);
        const result = state?.result ?? null;
        return {
          criterion_id: criterion.criterion_id,
          result,
          recorded_position: state?.recorded_position ?? null,
          stale: isStale(result, this.latestCheckpoint),
        };
      }),
      created_position: contract.created_position,
      updated_position: contract.updated_position,
      events: contract.events,
    };
  }

  /** The state after every entry applied so far; null when the session has no contract. */
  projection(): WorkProjection | null {
    if (this.contracts.size === 0) return null;
    const contracts = [...this.contracts.values()].map((contract) => this.contractView(contract));
    const live = contracts.filter((contract) => !terminalContractStatuses.has(contract.status));
    return {
      contracts,
      active_contract_id: live.at(-1)?.contract_id ?? null,
      position: this.position,
      latest_checkpoint: this.latestCheckpoint,
      terminal: this.terminal,
    };
  }

  /** Warnings about runtime state at the end of the entries: interruptions nobody reconciled. */
  finalWarnings(): WorkWarning[] {
    const warnings = [...this.warnings];
    for (const contract of this.contracts.values()) {
      for (const item of contract.items.values()) {
        const where = { contract_id: contract.contract_id, item_id: item.item_id };
        if (item.status === 'interrupted') {
          warnings.push({
            code: 'interrupted_item',
            message: item.review_required
              ? `item "${item.item_id}" was interrupted after a possible write and awaits a person's review before retry`
              : `item "${item.item_id}" was interrupted and awaits retry or review`,
            ...where,
          });
        }
        if (item.status === 'running' && this.terminal) {
          warnings.push({
            code: 'unreconciled_running',
            message: `item "${item.item_id}" is still running although the session ended (${this.terminal.status})`,
            ...where,
          });
        }
      }
      for (const [criterion_id, state] of contract.results) {
        if (contract.criteria.has(criterion_id) && isStale(state.result, this.latestCheckpoint)) {
          warnings.push({
            code: 'stale_verdict',
            message: `the verdict on "${criterion_id}" predates the latest workspace checkpoint`,
            contract_id: contract.contract_id,
          });
        }
      }
    }
    return warnings;
  }
}

const workEventKindNames: ReadonlySet<string> = new Set([
  'contract_created',
  'contract_revised',
  'contract_status_changed',
  'item_status_changed',
  'item_assigned',
  'evidence_attached',
  'assumption_resolved',
  'verification_recorded',
]);

function installDefinition(contract: MutableContract, definition: WorkContract): void {
  const previousCriteria = contract.criteria;
  const previousAssumptions = new Map(
    contract.contract.assumptions.map((assumption) => [assumption.assumption_id, assumption]),
  );
  contract.contract = definition;
  contract.definitions = new Map(definition.items.map((item) => [item.item_id, item]));
  contract.criteria = new Map(definition.criteria.map((criterion) => [criterion.criterion_id, criterion]));
  const items = new Map<string, MutableItem>();
  for (const item of definition.items) {
    items.set(
      item.item_id,
      contract.items.get(item.item_id) ?? {
        item_id: item.item_id,
        status: 'proposed',
        attempt: 1,
        owner: item.owner,
        child_session_id: null,
        started_at: null,
        finished_at: null,
        blocker: null,
        review_required: false,
        evidence: [],
        evidence_keys: new Set(),
        evidence_count: 0,
      },
    );
  }
  contract.items = items;
  // A verdict holds across a revision only for a criterion whose definition did not change.
  for (const criterion_id of [...contract.results.keys()]) {
    const before = previousCriteria.get(criterion_id);
    const after = contract.criteria.get(criterion_id);
    if (!before || !after || canonicalJson(before) !== canonicalJson(after)) {
      contract.results.delete(criterion_id);
    }
  }
  // An answer holds across a revision only for an assumption that still says the same: a
  // stale answer never settles a newer question.
  const assumptions = new Map(
    definition.assumptions.map((assumption) => [assumption.assumption_id, assumption]),
  );
  for (const assumption_id of [...contract.resolutions.keys()]) {
    const before = previousAssumptions.get(assumption_id);
    const after = assumptions.get(assumption_id);
    if (!before || !after || !sameQuestion(before, after)) contract.resolutions.delete(assumption_id);
  }
  // An answer the definition states itself is an answer like any other.
  for (const assumption of definition.assumptions) {
    if (assumption.resolution) contract.resolutions.set(assumption.assumption_id, assumption.resolution);
  }
}

/** Whether two definitions of an assumption ask the same, whatever answer each carries. */
export function sameQuestion(a: Assumption, b: Assumption): boolean {
  return canonicalJson({ ...a, resolution: null }) === canonicalJson({ ...b, resolution: null });
}

function requireItem(contract: MutableContract, item_id: string): MutableItem {
  const item = contract.items.get(item_id);
  if (!item) {
    refuse(
      'unknown_item',
      `no item "${item_id}" in revision ${contract.revision} of "${contract.contract_id}"`,
      {
        contract_id: contract.contract_id,
        item_id,
      },
    );
  }
  return item;
}

function unresolvedAssumptions(contract: MutableContract): string[] {
  return contract.contract.assumptions
    .filter(
      (assumption) =>
        assumption.requires_confirmation &&
        !assumption.resolution &&
        !contract.resolutions.has(assumption.assumption_id),
    )
    .map((assumption) => assumption.assumption_id);
}

function isStale(result: CriterionResult | null, latest: string | null): boolean {
  return result !== null && result.checkpoint !== null && latest !== null && result.checkpoint !== latest;
}

function itemCriteriaBlockers(
  contract: MutableContract,
  definition: WorkItemDefinition,
  latest: string | null,
): string[] {
  const failing: string[] = [];
  for (const criterion_id of definition.criterion_ids) {
    const criterion = contract.criteria.get(criterion_id);
    if (!criterion?.required) continue;
    const result = contract.results.get(criterion_id)?.result ?? null;
    if (result?.verdict !== 'passed')
      failing.push(`criterion "${criterion_id}" has ${result ? result.verdict : 'no verdict'}`);
    else if (isStale(result, latest))
      failing.push(`criterion "${criterion_id}" passed before the latest workspace change`);
  }
  return failing;
}

export interface CompletionBlocker {
  readonly reason: 'item_unfinished' | 'criterion_unpassed' | 'criterion_stale';
  readonly id: string;
  readonly message: string;
}

/** Everything that stands between a contract and completion; empty when it may complete. */
export function completionBlockers(contract: ContractProjection): CompletionBlocker[] {
  const blockers: CompletionBlocker[] = [];
  const definitions = new Map(contract.contract.items.map((item) => [item.item_id, item]));
  for (const item of contract.items) {
    if (definitions.get(item.item_id)?.required && item.status !== 'succeeded') {
      blockers.push({
        reason: 'item_unfinished',
        id: item.item_id,
        message: `required item "${item.item_id}" is ${item.status}`,
      });
    }
  }
  const required = new Set(
    contract.contract.criteria
      .filter((criterion) => criterion.required)
      .map((criterion) => criterion.criterion_id),
  );
  for (const criterion of contract.criteria) {
    if (!required.has(criterion.criterion_id)) continue;
    if (criterion.result?.verdict !== 'passed') {
      blockers.push({
        reason: 'criterion_unpassed',
        id: criterion.criterion_id,
        message: `required criterion "${criterion.criterion_id}" has ${criterion.result ? criterion.result.verdict : 'no verdict'}`,
      });
    } else if (criterion.stale) {
      blockers.push({
        reason: 'criterion_stale',
        id: criterion.criterion_id,
        message: `required criterion "${criterion.criterion_id}" passed before the latest workspace change`,
      });
    }
  }
  return blockers;
}

/** Project entries in position order. Never throws: an invariant broken in the ledger is the error result. */
export function projectWork(entries: Iterable<ProjectableEntry>): WorkProjectionResult {
  const projector = new WorkProjector();
  for (const entry of entries) {
    try {
      projector.applyEntry(entry);
    } catch (error) {
      if (error instanceof BatonError) {
        const located = new BatonError(error.code, `entry at position ${entry.position}: ${error.message}`, {
          ...error.data,
          position: entry.position,
        });
        return { ok: false, error: located, warnings: projector.warnings };
      }
      throw error;
    }
  }
  return { ok: true, projection: projector.projection(), warnings: projector.finalWarnings() };
}

/** The live contract of a projection, if any. */
export function activeContract(projection: WorkProjection | null): ContractProjection | undefined {
  return projection?.contracts.find((contract) => contract.contract_id === projection.active_contract_id);
}
