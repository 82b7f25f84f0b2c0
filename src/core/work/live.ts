/**
 * The live event names of the work SSE stream, one per Work Event kind. SSE is a live
 * projection only: each event's id is its ledger position, and a client that lost its place
 * rebuilds from the snapshot, whose position says where to resume.
 */
import type { WorkEvent } from './model.ts';

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
