/**
 * The sender card's draft: prefilled from the current committed handoff, edited in the browser
 * only, and turned into handoff_current_work's input when sent. Pure functions, no I/O.
 *
 * A state item or next action that cited evidence keeps that evidence (and stays verified) only
 * while its text is unchanged: edited text is the sender's new declaration, which the old
 * evidence does not back. The previous boundary source, which handoff_current_work cited first
 * everywhere, is not carried over: the new send cites its own boundary.
 */
import type { BoundaryInput, Disposition, PreparedHandoff, SourceRef } from './types.ts';

export interface DraftItem {
  readonly text: string;
  /** The evidence the committed text cited, kept only while the text stays `original`. */
  readonly evidence: readonly SourceRef[];
  readonly original: string | null;
}

export interface Draft {
  /** The revision the card was prefilled from; 0 when nothing was committed. */
  readonly base: number;
  readonly objective: string;
  readonly state: readonly DraftItem[];
  readonly disposition: Disposition;
  readonly nextAction: DraftItem;
  readonly omissions: string;
  readonly question: string;
  readonly options: string;
  readonly impact: string;
}

function sameRef(a: SourceRef | undefined, b: SourceRef | undefined): boolean {
  return !!a && !!b && a.scope_id === b.scope_id && a.source_id === b.source_id && a.digest === b.digest;
}

/** The boundary source handoff_current_work cited first in every statement and the next action. */
function boundaryOf(handoff: PreparedHandoff): SourceRef | undefined {
  const first = handoff.next_action.citations[0];
  return handoff.statements.every((statement) => sameRef(statement.citations[0], first)) ? first : undefined;
}

function item(text: string, citations: readonly SourceRef[], boundary: SourceRef | undefined): DraftItem {
  const evidence = citations.filter((citation) => !sameRef(citation, boundary));
  return { text, evidence, original: evidence.length > 0 ? text : null };
}

export function emptyItem(): DraftItem {
  return { text: '', evidence: [], original: null };
}

/** The card as the committed handoff says (or empty when none is committed). */
export function prefill(handoff: PreparedHandoff | null, revision: number): Draft {
  if (!handoff) {
    return {
      base: 0,
      objective: '',
      state: [emptyItem()],
      disposition: 'continue',
      nextAction: emptyItem(),
      omissions: '',
      question: '',
      options: '',
      impact: '',
    };
  }
  const boundary = boundaryOf(handoff);
  return {
    base: revision,
    objective: handoff.objective,
    state: handoff.statements.map((statement) => item(statement.text, statement.citations, boundary)),
    disposition: handoff.disposition,
    nextAction: item(handoff.next_action.text, handoff.next_action.citations, boundary),
    omissions: handoff.omissions.join('\n'),
    question: handoff.blocked?.question ?? '',
    options: handoff.blocked?.options.join('\n') ?? '',
    impact: handoff.blocked?.impact ?? '',
  };
}

/** A draft being edited, beside what it was prefilled with. */
export interface CardDraft {
  readonly original: Draft;
  readonly current: Draft;
}

/** Whether the card says something other than what it was prefilled with: an unsent edit. */
export function isEdited(card: CardDraft | undefined): boolean {
  return !!card && JSON.stringify(card.current) !== JSON.stringify(card.original);
}

function lines(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.length > 0);
}

function claim(draftItem: DraftItem) {
  const keeps = draftItem.evidence.length > 0 && draftItem.text === draftItem.original;
  return keeps
    ? { text: draftItem.text, basis: 'verified' as const, evidence: [...draftItem.evidence] }
    : { text: draftItem.text, basis: 'declared' as const };
}

/** handoff_current_work's input for this draft; the server validates every rule again. */
export function boundaryInput(draft: Draft, scope_id: string, source_id: string): BoundaryInput {
  return {
    scope_id,
    source_id,
    objective: draft.objective,
    current_state: draft.state.filter((state) => state.text.trim().length > 0).map(claim),
    disposition: draft.disposition,
    next_action: claim(draft.nextAction),
    omissions: lines(draft.omissions),
    ...(draft.disposition === 'blocked'
      ? { blocked: { question: draft.question, options: lines(draft.options), impact: draft.impact } }
      : {}),
  };
}

/** The identity of what a send attempt sends: the input without its source_id. */
export function sendKey(draft: Draft, scope_id: string): string {
  const { source_id: _unused, ...rest } = boundaryInput(draft, scope_id, '');
  return JSON.stringify(rest);
}

/**
 * The card's field a path of handoff_current_work's input names (`objective`, `state-2`,
 * `next`, …). Blank state items are not sent, so `current_state.N` is the N-th non-blank item.
 */
export function cardField(path: string, draft: Draft): string | undefined {
  const [head, part] = path.split('.');
  switch (head) {
    case 'objective':
    case 'disposition':
    case 'omissions':
      return head;
    case 'next_action':
      return 'next';
    case 'blocked':
      return part === 'question' || part === 'options' || part === 'impact' ? part : undefined;
    case 'current_state': {
      const sent = draft.state.flatMap((item, index) => (item.text.trim() ? [index] : []));
      const index = sent[Number(part)];
      return index === undefined ? undefined : `state-${index}`;
    }
    default:
      return undefined;
  }
}

/** The card's fields in the order they are shown: the first refused one takes the focus. */
export function cardFields(draft: Draft): string[] {
  return [
    'objective',
    ...draft.state.map((_, index) => `state-${index}`),
    'disposition',
    'question',
    'options',
    'impact',
    'next',
    'omissions',
  ];
}
