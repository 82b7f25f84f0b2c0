/**
 * `list_sessions`: every managed-work session of a project, newest first, each as a summary
 * of its own projection (src/core/work/summary.ts). A session whose ledger cannot be projected
 * is listed with its error, never left out and never allowed to hide the others.
 */
import { streamName } from '../core/ledger/names.ts';
import { newestFirst, summarizeSession, type SessionSummary } from '../core/work/summary.ts';
import type { AppDeps } from './deps.ts';
import { entryError, type EntryError } from './work-bulk.ts';
import { loadSession } from './work.ts';

/** At most this many sessions in one answer: the newest. */
export const listedSessionsLimit = 200;

export type ListedSession = SessionSummary & {
  /** Why the session could not be projected (its other fields then come from its stream alone), or null. */
  readonly error: EntryError | null;
};

export interface ListSessionsResult {
  /** Newest first, at most `limit`. */
  readonly sessions: readonly ListedSession[];
  /** How many sessions the project has. */
  readonly total: number;
  readonly limit: number;
}

/** Sessions projected at once: PostgreSQL reads them in parallel; SQLite reads one at a time anyway. */
const parallel = 8;

export async function listSessions(deps: AppDeps, project_id: string): Promise<ListSessionsResult> {
  const streams = (await deps.store.listStreams(project_id))
    .filter((info) => info.stream.kind === 'session')
    .map((info) => ({
      stream: info.stream,
      session_id: streamName(info.stream),
      created_at: info.created_at,
    }))
    .sort(newestFirst);
  const shown = streams.slice(0, listedSessionsLimit);
  const sessions: ListedSession[] = [];
  for (let start = 0; start < shown.length; start += parallel) {
    const batch = shown.slice(start, start + parallel).map(async (info): Promise<ListedSession> => {
      try {
        const loaded = await loadSession(deps, info.stream);
        const summary = summarizeSession(
          { ...info, position: loaded.head },
          loaded.header,
          loaded.projector.projection(),
          loaded.projector.terminalMarker(),
        );
        return { ...summary, error: null };
      } catch (error) {
        const { head } = await deps.store.getStream(info.stream);
        return { ...summarizeSession({ ...info, position: head }, null, null), error: entryError(error) };
      }
    });
    sessions.push(...(await Promise.all(batch)));
  }
  return { sessions, total: streams.length, limit: listedSessionsLimit };
}
