/**
 * The managed-work routes: one per endpoint of the work table (src/http/work-api.ts), and the
 * live event stream of a session. Every route authenticates and authorizes before the body is
 * read, runs in the principal's project (a session of another project is simply not found) and
 * acts as the human behind the token. The event stream sends each work event of the session
 * with its ledger position as id: first those after the client's Last-Event-ID, then each new
 * one as the store reports a commit, without a gap or a duplicate. The stream's credential is
 * checked again before each event and at each heartbeat: revoking the token, or ending or
 * outliving the web session, ends the stream.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../app/auth.ts';
import type { AppDeps } from '../app/deps.ts';
import { followWorkEvents, sessionStream } from '../app/work.ts';
import { BatonError } from '../core/errors.ts';
import type { Entry } from '../core/ledger/entry.ts';
import { sessionIdSchema } from '../core/ledger/names.ts';
import { parseRecord } from '../core/records.ts';
import { liveMessage } from '../core/work/live.ts';
import type { Actor } from '../core/work/model.ts';
import { authenticateRequest, guard, requestPrincipal } from './auth.ts';
import { refuseUnknownQuery } from './query.ts';
import { eventStreams, heartbeatMs, type EventStreams, type SseFrame } from './sse.ts';
import { mergeParams, workEndpoints, type WorkEndpoint, type WorkParam } from './work-api.ts';

export const eventsPath = '/v1/sessions/:session_id/events';

/** The event streams one token may hold open at once; one more is refused 429. */
export const defaultMaxStreamsPerToken = 64;

export interface WorkRoutesOptions {
  /** The SSE heartbeat, which is also the interval at which a stream reads again. */
  readonly heartbeatMs?: number;
  /** Open event streams per token (default 64); one more is refused too_many_requests. */
  readonly maxStreamsPerToken?: number;
}

/** The SSE frame of one work_event entry: id = position, event = its live name. */
export function workFrame(entry: Pick<Entry, 'position' | 'recorded_at' | 'content'>): SseFrame {
  const { name, position, recorded_at, event } = liveMessage(entry);
  return { id: String(position), event: name, data: JSON.stringify({ position, recorded_at, event }) };
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
 * The events route. Besides each notification, a stream re-reads from its position every
 * `catchUpMs` (the heartbeat): a notification can be missed (another process wrote to the same
 * SQLite file, or PostgreSQL's LISTEN connection was lost and reconnected), and the stream then
 * catches up within one heartbeat instead of falling silent.
 */
function registerEvents(
  app: FastifyInstance,
  deps: AppDeps,
  streams: EventStreams,
  catchUpMs: number,
  maxPerToken: number,
): void {
  /** Open streams by token id (a web session counts as the token that opened it). */
  const open = new Map<string, number>();
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
      if (request.method === 'HEAD') {
        // The headers a GET would start with, and no stream: a HEAD holds no slot and no subscription.
        await deps.store.getStream(sessionStream(project_id, session_id));
        return reply
          .header('content-type', 'text/event-stream; charset=utf-8')
          .header('cache-control', 'no-cache, no-transform')
          .send();
      }
      const { token_id } = principal;
      const held = open.get(token_id) ?? 0;
      if (held >= maxPerToken) {
        throw new BatonError(
          'too_many_requests',
          `this token holds ${held} open event streams, the most the server allows: close one (or use another token) and retry`,
          { limit: maxPerToken },
        );
      }
      // The slot is taken before any wait, so concurrent requests cannot pass the limit together.
      open.set(token_id, held + 1);
      const release = () => {
        const left = (open.get(token_id) ?? 1) - 1;
        if (left > 0) open.set(token_id, left);
        else open.delete(token_id);
      };
      // Subscribed before the 200: a store that cannot follow is an error answer, not a silent stream.
      const following = new AbortController();
      let entries: Awaited<ReturnType<typeof followWorkEvents>>;
      try {
        entries = await followWorkEvents(deps, project_id, session_id, after, {
          signal: following.signal,
          catchUpMs,
        });
      } catch (error) {
        release();
        throw error;
      }
      const events = streams.open(reply);
      // The credential is asked again before each event and at each heartbeat: a stream is a read
      // like any other, and a revoked token or an ended web session reads nothing more.
      const admitted = async (): Promise<boolean> => {
        try {
          return (await authenticateRequest(deps, request)).token_id === token_id;
        } catch {
          return false;
        }
      };
      const recheck = setInterval(() => {
        void admitted().then((yes) => yes || events.end());
      }, catchUpMs);
      recheck.unref();
      events.onEnd(() => {
        clearInterval(recheck);
        following.abort();
        release();
      });
      void (async () => {
        try {
          for await (const entry of entries) {
            if (!(await admitted())) break;
            if (!(await events.send(workFrame(entry)))) break;
          }
        } catch (error) {
          request.log.warn({ err: error }, 'work event stream failed; the client resumes from its last id');
        } finally {
          events.end();
        }
      })();
      return reply;
    },
  );
}

/** Register every work route and the event stream; open streams end when the app closes. */
export function registerWorkRoutes(
  app: FastifyInstance,
  deps: AppDeps,
  options: WorkRoutesOptions = {},
): void {
  const maxPerToken = options.maxStreamsPerToken ?? defaultMaxStreamsPerToken;
  if (!Number.isSafeInteger(maxPerToken) || maxPerToken < 1) {
    throw new RangeError(`maxStreamsPerToken must be a positive whole number, not ${maxPerToken}`);
  }
  const streams = eventStreams(app, options);
  for (const endpoint of workEndpoints) registerEndpoint(app, deps, endpoint);
  registerEvents(app, deps, streams, options.heartbeatMs ?? heartbeatMs, maxPerToken);
}
