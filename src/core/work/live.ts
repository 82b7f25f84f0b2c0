/**
 * The live event names of the work SSE stream, one per Work Event kind. SSE is a live
 * projection only: each event's id is its ledger position, and a client that lost its place
 * rebuilds from the snapshot, whose position says where to resume.
 */
import { workEventSchema, type WorkEvent } from './model.ts';

export const liveEventNames = [
  'WorkContractCreated',
  'WorkContractRevised',
  'WorkContractStatusChanged',
  'WorkItemChanged',
  'WorkEvidenceAttached',
  'WorkVerificationFinished',
  'WorkNeedsInput',
  'WorkAssumptionResolved',
] as const;
export type LiveEventName = (typeof liveEventNames)[number];

export function liveEventName(event: WorkEvent): LiveEventName {
  const { kind } = event;
  switch (kind.type) {
    case 'contract_created':
      return 'WorkContractCreated';
    case 'contract_revised':
      return 'WorkContractRevised';
    case 'contract_status_changed':
      return kind.to === 'awaiting_input' ? 'WorkNeedsInput' : 'WorkContractStatusChanged';
    case 'item_status_changed':
    case 'item_assigned':
      return 'WorkItemChanged';
    case 'evidence_attached':
      return 'WorkEvidenceAttached';
    case 'verification_recorded':
      return 'WorkVerificationFinished';
    case 'assumption_resolved':
      return 'WorkAssumptionResolved';
  }
}

/** The name given to a stored work event this Baton cannot read: it is delivered, never skipped. */
export const unreadableEventName = 'WorkEventUnreadable';

interface LiveMessageBase {
  /** The event's ledger position: increasing, not contiguous. Resume after it. */
  readonly position: number;
  readonly recorded_at: string;
}

/** One work event as live delivery carries it: its live name, position, time and stored event. */
export type WorkEventMessage =
  | (LiveMessageBase & { readonly name: LiveEventName; readonly event: WorkEvent })
  | (LiveMessageBase & { readonly name: typeof unreadableEventName; readonly event: unknown });

/** A work_event entry as a live message; the event is the stored content, exactly. */
export function liveMessage(entry: {
  readonly position: number;
  readonly recorded_at: string;
  readonly content: unknown;
}): WorkEventMessage {
  const parsed = workEventSchema.safeParse(entry.content);
  const { position, recorded_at } = entry;
  return parsed.success
    ? { name: liveEventName(parsed.data), position, recorded_at, event: entry.content as WorkEvent }
    : { name: unreadableEventName, position, recorded_at, event: entry.content };
}
