/**
 * A bound managed session is a completion-aware integration (docs/managed-work.md, "Bound to a
 * workstream"): each of its contracts that ends stores its criterion verdicts in the
 * workstream and records a Task Outcome there whose checks cite them. Both writes use ids
 * derived from the session and the contract, so doing it again (after a crash between the two
 * streams' writes, or on every reconcile) writes nothing new.
 */
import { isBatonError } from '../core/errors.ts';
import type { SourceReceipt } from '../core/ledger/source.ts';
import { managedWorkVerdictsKind } from '../core/continuity/records.ts';
import {
  contractOutcome,
  contractOutcomeSourceIds,
  contractVerdicts,
  isEndedContractStatus,
} from '../core/work/outcome.ts';
import type { ContractProjection, WorkWarning } from '../core/work/projector.ts';
import {
  interruptedBoundary,
  interruptionSourceIds,
  type InterruptionStatus,
} from '../core/work/interruption.ts';
import type { InterruptionHandoff, SessionHeader } from '../core/work/session.ts';
import { prepareRuntimeHandoff, recordRuntimeOutcome } from './continuity.ts';
import type { AppDeps } from './deps.ts';

/** Records the Task Outcome of one ended contract of a bound session; its receipt. */
export async function recordContractOutcome(
  deps: AppDeps,
  project_id: string,
  header: SessionHeader & { readonly scope_id: string },
  contract: ContractProjection,
): Promise<SourceReceipt> {
  const { status } = contract;
  if (!isEndedContractStatus(status)) {
    throw new Error(`contract ${contract.contract_id} has not ended (${status})`);
  }
  const { session_id, scope_id } = header;
  const ids = contractOutcomeSourceIds(session_id, contract.contract_id);
  const verdicts = await deps.store.captureSource(
    { project_id, scope_id },
    {
      source_id: ids.verdicts,
      content: contractVerdicts(session_id, contract),
      metadata: { kind: managedWorkVerdictsKind },
    },
  );
  const outcome = contractOutcome({
    session_id,
    contract: { ...contract, status },
    verdicts: verdicts.source_ref,
    handoff_receipt_ref: header.handoff_receipt_ref ?? null,
  });
  const stored = await recordRuntimeOutcome(deps, { project_id, scope_id, source_id: ids.outcome }, outcome);
  return stored.receipt;
}

/**
 * Records the outcome of each of these ended contracts, when the session is bound. The work's
 * own change is committed already, so a refusal (the receipt it names was retracted since, say)
 * does not undo it: it comes back as a warning, and the next reconcile tries again.
 */
export async function recordEndedContracts(
  deps: AppDeps,
  project_id: string,
  header: SessionHeader | null,
  contracts: readonly ContractProjection[],
): Promise<WorkWarning[]> {
  const scope_id = header?.scope_id;
  if (header === null || scope_id === undefined) return [];
  const warnings: WorkWarning[] = [];
  for (const contract of contracts) {
    if (!isEndedContractStatus(contract.status)) continue;
    try {
      await recordContractOutcome(deps, project_id, { ...header, scope_id }, contract);
    } catch (error) {
      if (!isBatonError(error)) throw error;
      warnings.push({
        code: 'outcome_not_recorded',
        message: `the task outcome of contract ${contract.contract_id} was not recorded in workstream ${scope_id}: ${error.message}`,
        contract_id: contract.contract_id,
      });
    }
  }
  return warnings;
}

/**
 * The Handoff an interrupted bound session prepares for whoever continues (docs/managed-work.md,
 * "An interrupted bound session"): the contract's verdicts stored in the workstream, then the
 * boundary through handoff_current_work's own rules, citing them, and a Prepared Handoff on the
 * workstream's current head. Nothing is committed: commit_handoff publishes it, by its digest.
 */
export async function prepareInterruptionHandoff(
  deps: AppDeps,
  project_id: string,
  end: {
    readonly session_id: string;
    readonly scope_id: string;
    /** The session's head the end is decided on. */
    readonly head: number;
    readonly status: InterruptionStatus;
    readonly reason: string;
  },
  contract: ContractProjection,
): Promise<InterruptionHandoff> {
  const { session_id, scope_id, status, reason } = end;
  const ids = interruptionSourceIds({ ...end, contract_id: contract.contract_id });
  const verdicts = await deps.store.captureSource(
    { project_id, scope_id },
    {
      source_id: ids.verdicts,
      content: contractVerdicts(session_id, contract),
      metadata: { kind: managedWorkVerdictsKind },
    },
  );
  const prepared = await prepareRuntimeHandoff(
    deps,
    { project_id, scope_id, source_id: ids.boundary },
    interruptedBoundary({ session_id, status, reason, contract, verdicts: verdicts.source_ref }),
  );
  return {
    scope_id,
    boundary_ref: prepared.boundary_receipt.source_ref,
    prepared_digest: prepared.digest,
    base_revision: prepared.prepared_handoff.base_revision,
  };
}
