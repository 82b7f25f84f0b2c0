/**
 * The receiver's forms of one workstream, kept outside the components so that navigating, a
 * locale switch or a refresh never clears them. The receiver's confirmations belong to the
 * revision they were made for: shown another revision, the checks start unticked again.
 */
export interface ReceiverForm {
  /** The revision these confirmations were made for. */
  readonly revision: number;
  readonly live_workspace: boolean;
  readonly capability: boolean;
  readonly authorization: boolean;
  readonly reason: string;
  readonly receiver: string;
  /** The source_id of a choice not yet confirmed, with what it sent: a retry repeats it. */
  readonly pending?: { readonly source_id: string; readonly key: string };
}

export const outcomeStatuses = ['succeeded', 'partial', 'blocked', 'failed', 'cancelled', 'unknown'] as const;
export type OutcomeStatus = (typeof outcomeStatuses)[number];

export interface OutcomeForm {
  readonly status: OutcomeStatus;
  readonly summary: string;
  readonly checks: string;
  readonly remaining: string;
  readonly pending?: { readonly source_id: string; readonly key: string };
}

export interface Forms {
  readonly receiver: ReceiverForm;
  readonly outcome: OutcomeForm;
}

export function emptyReceiver(revision: number, receiver = ''): ReceiverForm {
  return { revision, live_workspace: false, capability: false, authorization: false, reason: '', receiver };
}

export function emptyOutcome(): OutcomeForm {
  return { status: 'succeeded', summary: '', checks: '', remaining: '' };
}

/** The receiver form as it applies to the revision shown: other revisions' checks do not carry over. */
export function receiverFor(form: ReceiverForm, revision: number): ReceiverForm {
  return form.revision === revision
    ? form
    : { ...emptyReceiver(revision, form.receiver), reason: form.reason };
}

export function hasReceiverInput(form: ReceiverForm | undefined, revision: number): boolean {
  if (!form) return false;
  const current = receiverFor(form, revision);
  return (
    current.live_workspace || current.capability || current.authorization || current.reason.trim().length > 0
  );
}

export function hasOutcomeInput(form: OutcomeForm | undefined): boolean {
  return !!form && (form.summary.trim() !== '' || form.checks.trim() !== '' || form.remaining.trim() !== '');
}

export const checkStatuses = [
  'passed',
  'failed',
  'skipped',
  'timed_out',
  'unavailable',
  'cancelled',
  'unknown',
] as const;
export type CheckStatus = (typeof checkStatuses)[number];

/** `name=status` lines as declared checks; the line that cannot be read, if any. */
export function parseChecks(
  text: string,
): { checks: { name: string; status: CheckStatus; basis: 'declared' }[] } | { bad: string } {
  const checks: { name: string; status: CheckStatus; basis: 'declared' }[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line) continue;
    const match = /^(.+?)\s*=\s*([a-z_]+)$/.exec(line);
    const status = match?.[2] as CheckStatus | undefined;
    if (!match || !status || !(checkStatuses as readonly string[]).includes(status)) return { bad: line };
    checks.push({ name: match[1]!.trim(), status, basis: 'declared' });
  }
  return { checks };
}
