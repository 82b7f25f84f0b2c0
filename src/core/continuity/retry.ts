/**
 * Whether a stored Handoff Receipt answers an acknowledge_handoff request: the same target,
 * status, receiver checks, reason and receiver. The evidence fields are left out on purpose:
 * they record what was readable when the receipt was stored, and an identical retry after a
 * retraction must get that receipt, not a new verdict.
 */
import { canonicalJson } from '../canonical.ts';
import type { ExactTarget } from '../handoff/resolution.ts';
import type { HandoffReceipt } from './records.ts';

export interface AcknowledgeRequest {
  readonly target: ExactTarget;
  readonly status: HandoffReceipt['status'];
  readonly receiver_checks: HandoffReceipt['receiver_checks'];
  /** The reason as stored: undefined when none or blank. */
  readonly reason: string | undefined;
  readonly receiver: string | undefined;
}

export function answersAcknowledgement(receipt: HandoffReceipt, request: AcknowledgeRequest): boolean {
  const { target } = request;
  const sameTarget =
    'exact' in target
      ? receipt.target.kind === 'exact' && receipt.target.revision === target.exact
      : receipt.target.kind === 'prepared' && receipt.target.digest === target.prepared;
  return (
    sameTarget &&
    receipt.status === request.status &&
    canonicalJson(receipt.receiver_checks) === canonicalJson(request.receiver_checks) &&
    receipt.reason === request.reason &&
    receipt.receiver === request.receiver
  );
}
