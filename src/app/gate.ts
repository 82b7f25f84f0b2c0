/**
 * The stop gate for an agent's Stop hook: decides allow or block from the projection, the live
 * workspace checkpoint and the child sessions still running, and records each decision as a
 * receipt. Continuation is bounded: after max_blocks consecutive blocks the contract ends
 * unverified (or failed, when a required criterion failed) with the reason, and stopping is
 * allowed; it never ends completed that way.
 */
import { BatonError } from '../core/errors.ts';
import { usableWorkspaceCheckpoint } from './workspace-paths.ts';
import { exhaustedStatus, workGate, type GateDecision } from '../core/work/gate.ts';
import { workEvent } from '../core/work/runtime.ts';
import { sessionEntrySchemas } from '../core/work/session.ts';
import type { AppDeps } from './deps.ts';
import { commitWork, readSessionHeader, sessionStream, type SessionEntryInput } from './work.ts';

export interface StopGateInput {
  readonly session_id: string;
  /** Child sessions the caller knows to be running. */
  readonly live_children?: readonly string[];
  /** Consecutive blocks after which continuation counts as exhausted; default 8. */
  readonly max_blocks?: number;
}

export type StopGateResult = GateDecision & {
  /** Consecutive blocks so far, this one included. */
  readonly blocks: number;
  /** Set when this call ended the contract because continuation was exhausted. */
  readonly exhausted: { readonly to: 'failed' | 'unverified'; readonly reason: string } | null;
};

export const defaultMaxBlocks = 8;
/** The most consecutive blocks a caller may allow: past it, continuation is not bounded in practice. */
export const maxBlocksLimit = 1000;

function gateReceipt(decision: string, blocks: number): SessionEntryInput {
  return {
    type: 'receipt',
    content: {
      schema: 'baton.receipt/v1',
      receipt_id: `stop-gate-${decision}`,
      purpose: 'stop_gate',
      details: { decision, blocks },
    },
  };
}

/** Consecutive blocks recorded at the end of the session's stop-gate receipts. */
async function blocksSoFar(deps: AppDeps, project_id: string, session_id: string): Promise<number> {
  let blocks = 0;
  for await (const entry of deps.store.readStream(sessionStream(project_id, session_id), {
    kinds: ['receipt'],
  })) {
    const parsed = sessionEntrySchemas.receipt.safeParse(entry.content);
    if (!parsed.success || parsed.data.purpose !== 'stop_gate') continue;
    blocks = parsed.data.details.decision === 'block' ? blocks + 1 : 0;
  }
  return blocks;
}

export async function stopGate(
  deps: AppDeps,
  project_id: string,
  input: StopGateInput,
): Promise<StopGateResult> {
  const { session_id } = input;
  const header = await readSessionHeader(deps, project_id, session_id);
  const checkpoint = header?.workspace ? await usableWorkspaceCheckpoint(deps, header.workspace) : null;
  const live = { live_children: input.live_children ?? [], checkpoint };
  const max = input.max_blocks ?? defaultMaxBlocks;
  if (!Number.isSafeInteger(max) || max < 1 || max > maxBlocksLimit) {
    // Zero would end the contract as exhausted before any block: refused, nothing is written.
    throw new BatonError('invalid_input', `max_blocks is a whole number from 1 to ${maxBlocksLimit}`, {
      max_blocks: max,
    });
  }
  const previous = await blocksSoFar(deps, project_id, session_id);
  let result: StopGateResult | undefined;
  await commitWork(deps, sessionStream(project_id, session_id), ({ projection }) => {
    const decision = workGate(projection, live);
    if (decision.decision === 'allow') {
      result = { ...decision, blocks: 0, exhausted: null };
      return previous === 0 ? [] : { entries: [gateReceipt('allow', 0)], events: [] };
    }
    const blocks = previous + 1;
    // The contract that blocks: the newest live one with open reasons (workGate).
    const contract = projection!.contracts.find(
      (candidate) => candidate.contract_id === decision.contract_id,
    )!;
    if (blocks > max) {
      const exhausted = exhaustedStatus(contract, live);
      result = {
        decision: 'allow',
        contract_id: contract.contract_id,
        status: exhausted.to,
        blocks,
        exhausted,
      };
      return {
        entries: [gateReceipt('exhausted', blocks)],
        events: [
          workEvent(
            contract,
            {
              type: 'contract_status_changed',
              from: contract.status,
              to: exhausted.to,
              reason: exhausted.reason,
            },
            { type: 'runtime', id: 'stop-gate' },
          ),
        ],
      };
    }
    result = { ...decision, blocks, exhausted: null };
    return { entries: [gateReceipt('block', blocks)], events: [] };
  });
  return result!;
}
