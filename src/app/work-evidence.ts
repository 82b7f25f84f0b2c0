/**
 * Whether an attached evidence reference resolves in this project's ledger, decided as it is
 * attached and recorded with it: a session's entry by position (`ledger_entry`, `receipt`), a
 * `tool_result` entry by its tool_use_id, the `checkpoint` entries a diff spans, a child
 * session by its header's parent, a `flow_node` by the receipt the flow executor recorded for
 * it in the attaching session (src/app/flows.ts). An external operation lies outside the ledger. Session streams only grow and their entries are never retracted, so a reference
 * that resolves here resolves after any restart. Nothing is refused: a reference that does
 * not resolve is recorded unavailable, with the reason.
 */
import { isBatonError } from '../core/errors.ts';
import type { Entry } from '../core/ledger/entry.ts';
import { sessionIdSchema, type StreamKey } from '../core/ledger/names.ts';
import type { EvidenceAvailability, EvidenceRef, EvidenceUnavailableReason } from '../core/work/model.ts';
import { flowNodePurpose, flowNodeReceiptSchema } from '../core/work/flows.ts';
import { sessionEntrySchemas } from '../core/work/session.ts';
import type { AppDeps } from './deps.ts';

/** The session an item belongs to, at the head its change is decided against. */
export interface AttachingSession {
  readonly project_id: string;
  readonly session_id: string;
  readonly head: number;
}

const available: EvidenceAvailability = { status: 'available' };
const unavailable = (reason: EvidenceUnavailableReason): EvidenceAvailability => ({
  status: 'unavailable',
  reason,
});

/** A position as Baton writes an entry_id: a decimal whole number from 1, nothing around it. */
export function positionOf(entry_id: string): number | null {
  if (!/^[1-9][0-9]{0,15}$/.test(entry_id)) return null;
  const position = Number(entry_id);
  return Number.isSafeInteger(position) ? position : null;
}

interface Target {
  readonly stream: StreamKey;
  /** The last position read: the attaching session's decided head, another session's head now. */
  readonly head: number;
}

/** The session a reference names, or null when the project holds no such session. */
async function sessionOf(
  deps: AppDeps,
  attaching: AttachingSession,
  session_id: string,
): Promise<Target | null> {
  if (!sessionIdSchema.safeParse(session_id).success) return null;
  const stream: StreamKey = { project_id: attaching.project_id, kind: 'session', session_id };
  if (session_id === attaching.session_id) return { stream, head: attaching.head };
  try {
    return { stream, head: (await deps.store.getStream(stream)).head };
  } catch (error) {
    if (isBatonError(error, 'not_found')) return null;
    throw error;
  }
}

async function entryAt(deps: AppDeps, target: Target, position: number): Promise<Entry | undefined> {
  if (position > target.head) return undefined;
  for await (const entry of deps.store.readStream(target.stream, { from: position, to: position })) {
    return entry;
  }
  return undefined;
}

/** The entry at an entry_id, judged: missing, retracted, or the entry itself. */
async function positioned(
  deps: AppDeps,
  target: Target,
  entry_id: string,
): Promise<Entry | EvidenceUnavailableReason> {
  const position = positionOf(entry_id);
  const entry = position === null ? undefined : await entryAt(deps, target, position);
  if (!entry) return 'missing_entry';
  return entry.retracted === null ? entry : 'retracted';
}

/** A diff's end: 0 (the session's start) or the position of a checkpoint entry. */
async function checkpointAt(
  deps: AppDeps,
  target: Target,
  position: number,
): Promise<EvidenceUnavailableReason | null> {
  if (position === 0) return null;
  const entry = await entryAt(deps, target, position);
  if (!entry) return 'missing_entry';
  return entry.type === 'checkpoint' ? null : 'not_a_checkpoint';
}

async function toolResultIn(deps: AppDeps, target: Target, tool_use_id: string): Promise<boolean> {
  if (target.head === 0) return false;
  const kinds = ['tool_result'];
  for await (const entry of deps.store.readStream(target.stream, { to: target.head, kinds })) {
    const parsed = sessionEntrySchemas.tool_result.safeParse(entry.content);
    if (parsed.success && parsed.data.tool_use_id === tool_use_id) return true;
  }
  return false;
}

/** Whether the session holds the flow executor's receipt of this node of this run. */
async function flowNodeIn(
  deps: AppDeps,
  target: Target,
  ref: { readonly flow: string; readonly run_id: string; readonly node_id: string },
): Promise<boolean> {
  if (target.head === 0) return false;
  for await (const entry of deps.store.readStream(target.stream, { to: target.head, kinds: ['receipt'] })) {
    const receipt = sessionEntrySchemas.receipt.safeParse(entry.content);
    if (!receipt.success || receipt.data.purpose !== flowNodePurpose || entry.retracted !== null) continue;
    const node = flowNodeReceiptSchema.safeParse(receipt.data.details);
    if (
      node.success &&
      node.data.flow === ref.flow &&
      node.data.run_id === ref.run_id &&
      node.data.node_id === ref.node_id
    ) {
      return true;
    }
  }
  return false;
}

async function parentOf(deps: AppDeps, target: Target): Promise<string | null> {
  if (target.head === 0) return null;
  const kinds = ['session_header'];
  for await (const entry of deps.store.readStream(target.stream, { to: target.head, kinds })) {
    const parsed = sessionEntrySchemas.session_header.safeParse(entry.content);
    if (parsed.success) return parsed.data.parent_session_id;
  }
  return null;
}

/** Decide whether `ref` resolves in the project's ledger, as seen from the attaching session. */
export async function resolveEvidence(
  deps: AppDeps,
  attaching: AttachingSession,
  ref: EvidenceRef,
): Promise<EvidenceAvailability> {
  if (ref.type === 'external_operation') return unavailable('outside_ledger');
  if (ref.type === 'flow_node') {
    const own = await sessionOf(deps, attaching, attaching.session_id);
    return own !== null && (await flowNodeIn(deps, own, ref)) ? available : unavailable('missing_entry');
  }
  const target = await sessionOf(deps, attaching, ref.session_id);
  if (target === null) return unavailable('missing_session');
  switch (ref.type) {
    case 'ledger_entry':
    case 'receipt': {
      const entry = await positioned(deps, target, ref.entry_id);
      if (typeof entry === 'string') return unavailable(entry);
      return ref.type === 'receipt' && entry.type !== 'receipt' ? unavailable('not_a_receipt') : available;
    }
    case 'tool_result':
      return (await toolResultIn(deps, target, ref.tool_use_id)) ? available : unavailable('missing_entry');
    case 'checkpoint_diff': {
      if (ref.from_seq > ref.to_seq) return unavailable('invalid_range');
      const problem =
        (await checkpointAt(deps, target, ref.from_seq)) ?? (await checkpointAt(deps, target, ref.to_seq));
      return problem === null ? available : unavailable(problem);
    }
    case 'child_session':
      return (await parentOf(deps, target)) === attaching.session_id ? available : unavailable('not_a_child');
  }
}
