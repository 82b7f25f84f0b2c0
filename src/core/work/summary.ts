/**
 * One line per session for a list of a project's managed work (`list_sessions`): who the
 * session is, where it stands and its contract at a glance, computed from the projection alone.
 * A summary is a view, never a way back: it cannot be written, and it carries no evidence.
 */
import { prefix } from '../text.ts';
import type { ContractStatus, Verdict, WorkItemStatus } from './model.ts';
import {
  activeContract,
  type ContractProjection,
  type TerminalMarker,
  type WorkProjection,
} from './projector.ts';
import type { SessionHeader, WorkMode } from './session.ts';

/** How much of an objective a summary repeats, in UTF-16 units, before its ellipsis. */
export const summaryObjectiveLength = 280;

export interface ContractSummary {
  readonly contract_id: string;
  readonly revision: number;
  readonly status: ContractStatus;
  /** The objective, cut to `summaryObjectiveLength` with a trailing `…` when longer. */
  readonly objective: string;
  readonly items: {
    readonly total: number;
    /** Items per status; a status no item has is left out. */
    readonly by_status: Readonly<Partial<Record<WorkItemStatus, number>>>;
  };
  readonly criteria: {
    readonly total: number;
    /** Criteria whose latest verdict is passed (a stale one included, as the projection says). */
    readonly passed: number;
    /** Verdicts per value; criteria with none are not counted. */
    readonly by_verdict: Readonly<Partial<Record<Verdict, number>>>;
  };
}

export interface SessionSummary {
  readonly session_id: string;
  /** When the session's stream was created. */
  readonly created_at: string;
  /** The session stream's last position. */
  readonly position: number;
  /** From the session's header; null (and `work_mode` null) for a session started without one. */
  readonly parent_session_id: string | null;
  readonly work_mode: WorkMode | null;
  /** The Workstream the session is bound to, or null. */
  readonly scope_id: string | null;
  /** Goal mode: what must be true when the session ends (cut as the objective is), or null. */
  readonly goal: string | null;
  /** How it ended, and the Handoff an interrupted bound session prepared. */
  readonly terminal: TerminalMarker | null;
  /** How many contracts the session has had. */
  readonly contracts: number;
  /** The live contract, else the newest one; null when the session has had none. */
  readonly contract: ContractSummary | null;
}

function clipObjective(text: string): string {
  return text.length > summaryObjectiveLength ? `${prefix(text, summaryObjectiveLength)}…` : text;
}

function counts<K extends string>(keys: Iterable<K>): Partial<Record<K, number>> {
  const out: Partial<Record<K, number>> = {};
  for (const key of keys) out[key] = (out[key] ?? 0) + 1;
  return out;
}

export function summarizeContract(contract: ContractProjection): ContractSummary {
  const { objective } = contract.contract;
  const verdicts = contract.criteria.flatMap((criterion) =>
    criterion.result ? [criterion.result.verdict] : [],
  );
  return {
    contract_id: contract.contract_id,
    revision: contract.revision,
    status: contract.status,
    objective: clipObjective(objective),
    items: {
      total: contract.items.length,
      by_status: counts(contract.items.map((item) => item.status)),
    },
    criteria: {
      total: contract.criteria.length,
      passed: verdicts.filter((verdict) => verdict === 'passed').length,
      by_verdict: counts(verdicts),
    },
  };
}

/** The contract a list shows: the live one, else the one created last. */
function shownContract(projection: WorkProjection | null): ContractProjection | undefined {
  if (projection === null) return undefined;
  return (
    activeContract(projection) ??
    projection.contracts.reduce<ContractProjection | undefined>(
      (newest, contract) =>
        newest === undefined || contract.created_position > newest.created_position ? contract : newest,
      undefined,
    )
  );
}

export function summarizeSession(
  stream: { readonly session_id: string; readonly created_at: string; readonly position: number },
  header: SessionHeader | null,
  projection: WorkProjection | null,
  /** The session's terminal marker (a session without work has no projection to carry it). */
  terminal: SessionSummary['terminal'] = projection?.terminal ?? null,
): SessionSummary {
  const shown = shownContract(projection);
  return {
    session_id: stream.session_id,
    created_at: stream.created_at,
    position: stream.position,
    parent_session_id: header?.parent_session_id ?? null,
    work_mode: header?.work_mode ?? null,
    scope_id: header?.scope_id ?? null,
    goal: header?.goal === undefined ? null : clipObjective(header.goal),
    terminal,
    contracts: projection?.contracts.length ?? 0,
    contract: shown ? summarizeContract(shown) : null,
  };
}

/** Newest first: by creation time, then by session id, so equal times list the same way every time. */
export function newestFirst(
  a: { readonly created_at: string; readonly session_id: string },
  b: { readonly created_at: string; readonly session_id: string },
): number {
  if (a.created_at !== b.created_at) return a.created_at < b.created_at ? 1 : -1;
  return a.session_id < b.session_id ? -1 : a.session_id > b.session_id ? 1 : 0;
}

/**
 * A session's summary in a few lines of text: how it ended, and its contract's items and
 * criteria, as a judge reads a delegated item's child session (src/app/verify.ts).
 */
export function sessionSummaryText(summary: SessionSummary): string {
  const tally = (entries: Partial<Record<string, number>>) =>
    Object.entries(entries)
      .map(([name, count]) => `${count} ${name}`)
      .join(', ') || 'none';
  const { contract } = summary;
  return [
    `session ${summary.session_id}: ${summary.terminal === null ? 'not ended' : `ended ${summary.terminal.status}`}`,
    contract === null
      ? 'no contract'
      : [
          `contract ${contract.contract_id} revision ${contract.revision}: ${contract.status}`,
          `objective: ${contract.objective}`,
          `items (${contract.items.total}): ${tally(contract.items.by_status)}`,
          `criteria (${contract.criteria.total}): ${contract.criteria.passed} passed; verdicts: ${tally(contract.criteria.by_verdict)}`,
        ].join('\n'),
  ].join('\n');
}
