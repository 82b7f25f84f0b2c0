/**
 * The managed-work routes: one per endpoint of the work table (src/http/work-api.ts), and the
 * live event stream of a session. Every route authenticates and authorizes before the body is
 * read, runs in the principal's project (a session of another project is simply not found) and
 * acts as the human behind the token. The event stream sends each work event of the session
 * with its ledger position as id: first those after the client's Last-Event-ID, then each new
 * one as the store reports a commit, without a gap or a duplicate.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../app/auth.ts';
import type { AppDeps } from '../app/deps.ts';
import { sessionStream, workEventsAfter } from '../app/work.ts';
import { BatonError } from '../core/errors.ts';
import type { Entry } from '../core/ledger/entry.ts';
import { sessionIdSchema } from '../core/ledger/names.ts';
import { parseRecord } from '../core/records.ts';
import { liveEventName } from '../core/work/live.ts';
import { workEventSchema, type Actor } from '../core/work/model.ts';
import { guard, requestPrincipal } from './auth.ts';
import { refuseUnknownQuery } from './query.ts';
import { eventStreams, heartbeatMs, type EventStream, type EventStreams, type SseFrame } from './sse.ts';
import { mergeParams, workEndpoints, type WorkEndpoint, type WorkParam } from './work-api.ts';

export const eventsPath = '/v1/sessions/:session_id/events';

/** The SSE event name of an entry this Baton cannot read as a Work Event (kept, not hidden). */
export const unreadableEventName = 'WorkEventUnreadable';

/** The SSE frame of one work_event entry: id = position, event = its live name. */
export function workFrame(entry: Pick<Entry, 'position' | 'recorded_at' | 'content'>): SseFrame {
  const parsed = workEventSchema.safeParse(entry.content);
  return {
    id: String(entry.position),
    event: parsed.success ? liveEventName(parsed.data) : unreadableEventName,
    data: JSON.stringify({ position: entry.position, recorded_at: entry.recorded_at, event: entry.content }),
  };
}

function actorOf(principal: Principal): Actor {
  return { type: 'human', id: principal.token_id };
}

function pathParams(
  request: FastifyRequest,
  names: readonly WorkParam[],
): Partial<Record<WorkParam, string>> {
  const given = request.params as Partial<Record<WorkParam, string>>;
  return Object.fromEntries(names.map((name) => [name, given[name]]));
}

function registerEndpoint(app: FastifyInstance, deps: AppDeps, endpoint: WorkEndpoint): void {
  app.route({
    method: endpoint.method,
    url: endpoint.path,
    config: { operationId: endpoint.operationId },
    onRequest: guard(app, deps, endpoint.access),
    handler: async (request: FastifyRequest) => {
      refuseUnknownQuery(request);
      const principal = requestPrincipal(request);
      const body = endpoint.method === 'GET' ? undefined : request.body;
      const input = mergeParams(pathParams(request, endpoint.params), body);
      return endpoint.run(deps, principal.project_id, input, actorOf(principal));
    },
  });
}

/** Where to resume: the Last-Event-ID header, else ?after=N, else the start. */
function resumeAfter(request: FastifyRequest): number {
  const header = request.headers['last-event-id'];
  const query = (request.query as Record<string, unknown>).after;
  const given = typeof header === 'string' && header !== '' ? header : query;
  if (given === undefined) return 0;
  if (typeof given !== 'string' || !/^\d{1,15}$/.test(given)) {
    throw new BatonError('invalid_input', 'Last-Event-ID (or after) is a ledger position: a whole number', {
      issues: [{ path: 'after', message: 'a whole number' }],
    });
  }
  return Number(given);
}

/**
 * Send the session's work events after `after`, then follow the store: one read in flight at a
 * time, and a notification that arrives during a read makes another read after it, from the
 * last position sent.
 */
function follow(deps: AppDeps, project_id: string, session_id: string, after: number, events: EventStream) {
  let last = after;
  let reading = false;
  let again = false;
  const pump = async (): Promise<void> => {
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    try {
      do {
        again = false;
        for await (const entry of workEventsAfter(deps, project_id, session_id, last)) {
          if (!(await events.send(workFrame(entry)))) return;
          last = entry.position;
        }
      } while (again && !events.closed);
    } finally {
      reading = false;
    }
  };
  return {
    pump,
    notify(head: number): boolean {
      return head > last;
    },
  };
}

/**
 * The events route. Besides each notification, a stream re-reads from its position every
 * `catchUpMs` (the heartbeat): a notification can be missed (another process wrote to the same
 * SQLite file, or PostgreSQL's LISTEN connection was lost and reconnected), and the stream then
 * catches up within one heartbeat instead of falling silent.
 */
function registerEvents(app: FastifyInstance, deps: AppDeps, streams: EventStreams, catchUpMs: number): void {
  app.get(
    eventsPath,
    { onRequest: guard(app, deps, 'read') },
    async (request: FastifyRequest, reply: FastifyReply) => {
      const principal = requestPrincipal(request);
      const { project_id } = principal;
      refuseUnknownQuery(request, ['after']);
      const session_id = parseRecord(
        sessionIdSchema,
        (request.params as { session_id: string }).session_id,
        'session_id',
      );
      const after = resumeAfter(request);
      const { head } = await deps.store.getStream(sessionStream(project_id, session_id));
      if (after > head) {
        throw new BatonError('invalid_input', `position ${after} is past the session's head ${head}`, {
          after,
          head,
          issues: [{ path: 'after', message: `at most ${head}` }],
        });
      }
      // Subscribed before the first read, so no commit falls between the read and the listening.
      const live: { follower?: ReturnType<typeof follow> } = {};
      const run = () => {
        live.follower?.pump().catch((error: unknown) => {
          request.log.warn({ err: error }, 'work event stream failed; the client resumes from its last id');
          events.end();
        });
      };
      const unsubscribe = await deps.store.subscribe(({ stream, head: moved }) => {
        if (
          stream.kind === 'session' &&
          stream.project_id === project_id &&
          stream.session_id === session_id &&
          live.follower?.notify(moved)
        )
          run();
      });
      const events = streams.open(reply);
      const catchUp = setInterval(run, catchUpMs);
      catchUp.unref();
      events.onEnd(() => {
        clearInterval(catchUp);
        void unsubscribe();
      });
      live.follower = follow(deps, project_id, session_id, after, events);
      run();
      return reply;
    },
  );
}

/** Register every work route and the event stream; open streams end when the app closes. */
export function registerWorkRoutes(
  app: FastifyInstance,
  deps: AppDeps,
  options: { heartbeatMs?: number } = {},
): void {
  const streams = eventStreams(app, options);
  for (const endpoint of workEndpoints) registerEndpoint(app, deps, endpoint);
  registerEvents(app, deps, streams, options.heartbeatMs ?? heartbeatMs);
}
