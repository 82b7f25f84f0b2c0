/**
 * The flow executor (docs/flows.md): runs a static flow's nodes in order in the read-only
 * sandbox, in a session's workspace, and records each node's receipt, then the run's completion
 * marker. Linked to a work item (the spec's "flow execution can carry a contract/item context"),
 * it checks the contract/item/flow owner tuple first, then owns the item while it runs: ready →
 * running, each node's receipt attached as `flow_node` evidence, the marker as `receipt`
 * evidence, and at the end running → ready_for_verification (every node passed), failed, or
 * interrupted (cancelled). It never marks an item succeeded: the verifier does, from the
 * criteria. A standalone run (no item) runs in a session of its own, so no contract can take it
 * for linked work.
 */
import { z } from 'zod';
import { commandOutput, runSandboxed, type SandboxOptions } from '../agent/sandbox.ts';
import { BatonError, isBatonError } from '../core/errors.ts';
import type { JsonValue } from '../core/json.ts';
import { uuidv7Generator } from '../core/ids.ts';
import { sessionIdSchema } from '../core/ledger/names.ts';
import { parseRecord } from '../core/records.ts';
import { scrubSecrets, secretValuesFromEnv } from '../core/secrets.ts';
import { clipText, clipTextStart } from '../core/text.ts';
import {
  blockedBy,
  flowCompletedPurpose,
  flowNodePurpose,
  flowOrder,
  flowRunStatus,
  type FlowCompletedReceipt,
  type FlowNodeReceipt,
  type FlowNodeStatus,
  type FlowRunStatus,
} from '../core/work/flows.ts';
import { workIdSchema, type Actor, type EvidenceRef, type WorkItemStatus } from '../core/work/model.ts';
import { activeContract, type ContractProjection } from '../core/work/projector.ts';
import type { AppDeps } from './deps.ts';
import {
  attachEvidence,
  readSessionHeader,
  readWork,
  sessionStream,
  transitionItem,
  type WorkSnapshot,
} from './work.ts';
import { privateFiles } from './workspace-paths.ts';

export const runFlowFields = {
  session_id: sessionIdSchema,
  flow: workIdSchema,
  /** The item of the session's live contract the run works: it must be owned by this flow. */
  item_id: workIdSchema.optional(),
};

/** Told as each node starts and ends. */
export interface FlowProgress {
  readonly index: number;
  readonly total: number;
  readonly node_id: string;
  /** `running` as it starts; its end otherwise. */
  readonly status: FlowNodeStatus | 'running';
  readonly reason: string;
  readonly duration_ms: number;
}

export interface FlowRunOptions {
  /** The caller's environment, whose values never reach the ledger; default process.env. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Cancels the run: the running node is killed, the others are not started. */
  readonly signal?: AbortSignal;
  readonly onNode?: (progress: FlowProgress) => void;
  readonly sandbox?: SandboxOptions;
}

export interface FlowRunResult {
  readonly session_id: string;
  readonly flow: string;
  readonly run_id: string;
  readonly status: FlowRunStatus;
  readonly contract_id: string | null;
  readonly item_id: string | null;
  readonly nodes: readonly {
    readonly node_id: string;
    readonly status: FlowNodeStatus;
    readonly reason: string;
    readonly duration_ms: number;
  }[];
  /** The linked item's status after the run; null for a standalone run. */
  readonly item_status: WorkItemStatus | null;
  readonly work: WorkSnapshot;
}

/** How much of one node's output its receipt keeps. */
const outputChars = 16 * 1024;

function receiptEntry(receipt_id: string, purpose: string, details: Record<string, JsonValue>) {
  return {
    type: 'receipt',
    content: { schema: 'baton.receipt/v1', receipt_id, purpose, details },
    metadata: { kind: 'receipt' },
  };
}

/** The linked item, checked: live contract, an item owned by this flow, ready to run. */
function linkedItem(contract: ContractProjection | undefined, flow: string, item_id: string) {
  if (contract === undefined) {
    throw new BatonError('conflict', 'the session has no live contract to run the flow for', {
      rule: 'no_live_contract',
    });
  }
  const definition = contract.contract.items.find((item) => item.item_id === item_id);
  const state = contract.items.find((item) => item.item_id === item_id);
  if (definition === undefined || state === undefined) {
    throw new BatonError('not_found', `no item "${item_id}" in contract ${contract.contract_id}`, {
      contract_id: contract.contract_id,
      item_id,
    });
  }
  // Its owner now, as the projector holds it (the one source of truth; a revision that names
  // another owner in the definition does not move an existing item).
  const owner = state.owner;
  if (owner.type !== 'flow' || owner.name !== flow) {
    throw new BatonError(
      'conflict',
      `item "${item_id}" is owned by ${owner.type === 'flow' || owner.type === 'tool' ? `${owner.type}:${owner.name}` : owner.type}, not flow:${flow}: a flow runs only the items it owns`,
      { rule: 'flow_owner_mismatch', contract_id: contract.contract_id, item_id },
    );
  }
  if (state.status !== 'ready') {
    throw new BatonError(
      'conflict',
      `item "${item_id}" is ${state.status}: a flow starts only a ready item`,
      {
        rule: 'item_not_ready',
        contract_id: contract.contract_id,
        item_id,
        status: state.status,
      },
    );
  }
  return contract;
}

/**
 * Run a configured flow in a session's workspace; see the module comment. Refused, writing
 * nothing, for a flow not configured (not_found), a session without a workspace or not granted
 * the flow (`capabilities.flows`), or a linked item that is not the flow's or not ready.
 */
export async function runFlow(
  deps: AppDeps,
  project_id: string,
  input: unknown,
  options: FlowRunOptions = {},
): Promise<FlowRunResult> {
  const { session_id, flow, item_id } = parseRecord(z.strictObject(runFlowFields), input, 'flow run');
  const definition = deps.flows?.[flow];
  if (definition === undefined) {
    throw new BatonError(
      'not_found',
      `no flow "${flow}" is configured: declare it as [flows.${flow}] in baton.toml`,
      {
        flow,
        configured: Object.keys(deps.flows ?? {}),
      },
    );
  }
  const header = await readSessionHeader(deps, project_id, session_id).catch((error: unknown) => {
    if (isBatonError(error, 'not_found')) return null;
    throw error;
  });
  if (header === null) throw new BatonError('not_found', `no session "${session_id}"`, { session_id });
  if (header.workspace === null) {
    throw new BatonError(
      'precondition_failed',
      `session "${session_id}" has no workspace to run flow ${flow} in`,
      {
        session_id,
      },
    );
  }
  if (!header.capabilities.flows.includes(flow)) {
    throw new BatonError(
      'forbidden',
      `session "${session_id}" may not run flow ${flow}: its capabilities.flows does not list it`,
      {
        session_id,
        flow,
        flows: header.capabilities.flows,
      },
    );
  }
  const actor: Actor = { type: 'runtime', id: `flow:${flow}` };
  const run_id = `flow-${uuidv7Generator(deps.clock)()}`;
  let contract_id: string | null = null;
  /** The linked item moved, as the flow, against the revision read. */
  const move = (revision: number, to: WorkItemStatus, reason: string) =>
    transitionItem(
      deps,
      project_id,
      { session_id, contract_id, revision, item_id, to, reason: clipText(reason, 4000) },
      actor,
    );
  const before = await readWork(deps, project_id, { session_id });
  if (
    item_id === undefined &&
    (header.work_mode !== 'direct' || (before.projection?.contracts.length ?? 0) > 0)
  ) {
    // Its receipts would sit beside the contract's as if linked: a standalone run has a session
    // of its own (the CLI makes one).
    throw new BatonError(
      'conflict',
      `a run in a session with managed work runs for an item: name the item flow ${flow} owns, or run it standalone in a session of its own`,
      { rule: 'flow_unlinked', session_id, flow },
    );
  }
  if (item_id !== undefined) {
    const contract = linkedItem(activeContract(before.projection), flow, item_id);
    contract_id = contract.contract_id;
    await move(contract.revision, 'running', `flow ${flow} run ${run_id}`);
  }
  const stream = sessionStream(project_id, session_id);
  const secrets = secretValuesFromEnv(options.env ?? process.env);
  const scrub = (text: string) => scrubSecrets(text, { values: secrets }).text;
  const hidden = privateFiles(deps);

  /** The linked item's contract, while the item is still this run's to work; else why not. */
  const stillOurs = async (): Promise<ContractProjection | string> => {
    const contract = activeContract((await readWork(deps, project_id, { session_id })).projection);
    const item = contract?.items.find((candidate) => candidate.item_id === item_id);
    if (contract === undefined || contract.contract_id !== contract_id)
      return `contract ${contract_id} is no longer live`;
    if (item?.status !== 'running') return `item "${item_id}" is ${item?.status ?? 'gone'}`;
    return contract;
  };
  const attach = async (evidence: EvidenceRef): Promise<void> => {
    const contract = await stillOurs();
    if (typeof contract === 'string') return;
    await attachEvidence(
      deps,
      project_id,
      { session_id, contract_id, revision: contract.revision, item_id, evidence },
      actor,
    ).catch((error: unknown) => {
      if (!isBatonError(error)) throw error;
    });
  };

  const order = flowOrder(definition);
  const byId = new Map(definition.nodes.map((node) => [node.node_id, node]));
  const statuses = new Map<string, FlowNodeStatus>();
  const nodes: FlowRunResult['nodes'][number][] = [];
  let stopped: string | null = null;
  /** A node's receipt when it ran nothing. */
  const notRun = (node_id: string, status: FlowNodeStatus, reason: string): FlowNodeReceipt => ({
    flow,
    run_id,
    node_id,
    status,
    reason,
    exit_code: null,
    duration_ms: 0,
    output: '',
  });
  try {
    for (const [at, node_id] of order.entries()) {
      const node = byId.get(node_id)!;
      const progress = { index: at + 1, total: order.length, node_id };
      if (stopped === null && options.signal?.aborted) stopped = 'the run was cancelled';
      if (stopped === null && item_id !== undefined) {
        const ours = await stillOurs();
        if (typeof ours === 'string') stopped = ours;
      }
      let receipt: FlowNodeReceipt;
      const blocker = blockedBy(node, statuses);
      if (stopped !== null) {
        receipt = notRun(node_id, 'cancelled', `not run: ${stopped}`);
      } else if (blocker !== null) {
        receipt = notRun(node_id, 'skipped', `not run: it needs ${blocker}, which did not pass`);
      } else {
        options.onNode?.({ ...progress, status: 'running', reason: '', duration_ms: 0 });
        const result = await runSandboxed(
          {
            command: node.command,
            workspace: header.workspace,
            hidden,
            timeout_ms: node.timeout_ms,
            output_limit_bytes: 64 * 1024,
          },
          { ...options.sandbox, ...(options.signal ? { signal: options.signal } : {}) },
        );
        if (result.status === 'unavailable') {
          receipt = notRun(node_id, 'unavailable', `sandbox_unavailable: ${result.detail}`);
        } else {
          const output = commandOutput(node.command, result);
          const cancelled = result.status === 'timed_out' && options.signal?.aborted === true;
          receipt = {
            flow,
            run_id,
            node_id,
            status: cancelled ? 'cancelled' : result.status,
            reason:
              result.status === 'timed_out'
                ? cancelled
                  ? 'killed: the run was cancelled'
                  : `killed after ${node.timeout_ms} ms`
                : `exit code ${result.exit_code}`,
            exit_code: result.status === 'timed_out' ? null : result.exit_code,
            duration_ms: Math.round(result.duration_ms),
            // The end of the output says most about a failure: the tail is kept.
            output: clipTextStart(scrub(output), outputChars),
          };
          if (cancelled) stopped = 'the run was cancelled';
        }
      }
      receipt = { ...receipt, reason: scrub(receipt.reason) };
      statuses.set(node_id, receipt.status);
      await deps.store.append(stream, [
        receiptEntry(
          `${run_id}.${node_id}`,
          flowNodePurpose,
          receipt as unknown as Record<string, JsonValue>,
        ),
      ]);
      if (item_id !== undefined && receipt.status !== 'cancelled' && receipt.status !== 'skipped') {
        await attach({ type: 'flow_node', flow, run_id, node_id });
      }
      nodes.push({
        node_id,
        status: receipt.status,
        reason: receipt.reason,
        duration_ms: receipt.duration_ms,
      });
      options.onNode?.({
        ...progress,
        status: receipt.status,
        reason: receipt.reason,
        duration_ms: receipt.duration_ms,
      });
    }
    return await finish();
  } catch (error) {
    // A fault of its own (the store, the sandbox's setup, a caller's callback): the item does not
    // stay running for a run that is not there any more; the fault goes on to the caller.
    if (item_id !== undefined) {
      const contract = await stillOurs().catch(() => 'unknown');
      if (typeof contract !== 'string') {
        await move(
          contract.revision,
          'interrupted',
          `flow ${flow} run ${run_id} broke down: ${String(error)}`,
        ).catch(() => undefined);
      }
    }
    throw error;
  }

  /** The completion marker, then the item's end (linked): after every node ran or was passed over. */
  async function finish(): Promise<FlowRunResult> {
    const status = flowRunStatus(statuses.values());
    const marker: FlowCompletedReceipt = {
      flow,
      run_id,
      status,
      contract_id,
      item_id: item_id ?? null,
      nodes: Object.fromEntries(statuses),
    };
    const [written] = await deps.store.append(stream, [
      receiptEntry(run_id, flowCompletedPurpose, marker as unknown as Record<string, JsonValue>),
    ]);
    let item_status: WorkItemStatus | null = null;
    if (item_id !== undefined) {
      await attach({ type: 'receipt', session_id, entry_id: String(written!.position) });
      const contract = await stillOurs();
      if (typeof contract !== 'string') {
        // A node that failed or ran out of time fails the item; a run cut short (cancelled, or a
        // node the sandbox could not start: the machine's fault, not the work's) interrupts it,
        // retry-safe, since a flow never writes.
        const failing = nodes.some((node) => node.status === 'failed' || node.status === 'timed_out');
        const to = status === 'completed' ? 'ready_for_verification' : failing ? 'failed' : 'interrupted';
        const failedNode = nodes.find((node) => node.status !== 'passed');
        await move(
          contract.revision,
          to,
          `flow ${flow} run ${run_id} ${status}${failedNode ? `: node ${failedNode.node_id} ${failedNode.status} (${failedNode.reason})` : ''}`,
        );
      }
      const now = (await readWork(deps, project_id, { session_id })).projection?.contracts.find(
        (candidate) => candidate.contract_id === contract_id,
      );
      item_status = now?.items.find((item) => item.item_id === item_id)?.status ?? null;
    }
    return {
      session_id,
      flow,
      run_id,
      status,
      contract_id,
      item_id: item_id ?? null,
      nodes,
      item_status,
      work: await readWork(deps, project_id, { session_id }),
    };
  }
}
