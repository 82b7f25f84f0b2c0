/**
 * `list_sessions`: every managed-work session of a project, newest first, each as a summary
 * of its own projection (src/core/work/summary.ts). A session whose ledger cannot be projected
 * is listed with its error, never left out and never allowed to hide the others.
 */
import { streamName } from '../core/ledger/names.ts';
import { newestFirst, summarizeSession, type SessionSummary } from '../core/work/summary.ts';
import type { Store } from '../store/store.ts';
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

/** Projects whose summaries a store keeps; the least recently listed one goes first. */
const cachedProjects = 64;

/**
 * The summaries of each store's last lists, by project and session: a summary stands for its
 * stream up to `summary.position`. A stream is append-only, so while its head is still that
 * position the summary is the one a projection would compute again. A project keeps only the
 * sessions its last list showed (at most `listedSessionsLimit`); a failed projection is never kept.
 */
const summaries = new WeakMap<Store, Map<string, ReadonlyMap<string, ListedSession>>>();

function projectSummaries(store: Store): Map<string, ReadonlyMap<string, ListedSession>> {
  let projects = summaries.get(store);
  if (projects === undefined) {
    projects = new Map();
    summaries.set(store, projects);
  }
  return projects;
}

export async function listSessions(deps: AppDeps, project_id: string): Promise<ListSessionsResult> {
  const streams = (await deps.store.listStreams(project_id))
    .filter((info) => info.stream.kind === 'session')
    .map((info) => ({
      stream: info.stream,
      session_id: streamName(info.stream),
      created_at: info.created_at,
      head: info.head,
    }))
    .sort(newestFirst);
  const shown = streams.slice(0, listedSessionsLimit);
  const projects = projectSummaries(deps.store);
  const known = projects.get(project_id);
  const kept = new Map<string, ListedSession>();
  const sessions: ListedSession[] = [];
  for (let start = 0; start < shown.length; start += parallel) {
    const batch = shown.slice(start, start + parallel).map(async (info): Promise<ListedSession> => {
      const cached = known?.get(info.session_id);
      if (cached !== undefined && cached.position === info.head) {
        kept.set(info.session_id, cached);
        return cached;
      }
      try {
        const loaded = await loadSession(deps, info.stream);
        const summary = summarizeSession(
          { ...info, position: loaded.head },
          loaded.header,
          loaded.projector.projection(),
          loaded.projector.terminalMarker(),
        );
        const listed = { ...summary, error: null };
        kept.set(info.session_id, listed);
        return listed;
      } catch (error) {
        const { head } = await deps.store.getStream(info.stream);
        return { ...summarizeSession({ ...info, position: head }, null, null), error: entryError(error) };
      }
    });
    sessions.push(...(await Promise.all(batch)));
  }
  projects.delete(project_id);
  projects.set(project_id, kept);
  for (const oldest of projects.keys()) {
    if (projects.size <= cachedProjects) break;
    projects.delete(oldest);
  }
  return { sessions, total: streams.length, limit: listedSessionsLimit };
}
