/**
 * The client's live work events: `GET /v1/sessions/{session_id}/events` read as an async
 * iterable of typed messages. The iteration yields every work event after `after`, then each
 * new one as the server sends it, and ends quietly when the caller's signal aborts or the loop
 * breaks. Anything else that ends it is a BatonError: the server's refusal (its code), or
 * `unavailable` when the stream breaks off or falls silent for longer than three heartbeats,
 * with `details.after` set to the last position received, where a new call resumes.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { batonApiHeader, batonApiVersion } from '../core/api-header.ts';
import { BatonError } from '../core/errors.ts';
import type { LiveEventName, WorkEventMessage } from '../core/work/live.ts';
import type { WorkEvent } from '../core/work/model.ts';
import { describeFailure as describe, errorOf, parseJson as parse } from './errors.ts';

export interface WorkEventsInput {
  readonly session_id: string;
  /** Start after this ledger position (a snapshot's `position`); default 0, from the start. */
  readonly after?: number;
}

export interface WorkEventsOptions {
  /** Ends the iteration (quietly) and closes the connection. */
  readonly signal?: AbortSignal;
  /**
   * How long the stream may stay silent before it counts as broken (`unavailable`): default
   * 45,000 ms, three of the server's 15 s heartbeats.
   */
  readonly idleTimeoutMs?: number;
  /** Called once the server has accepted the stream, before any event arrives. */
  readonly onOpen?: () => void;
}

export const defaultIdleTimeoutMs = 45_000;

/** What the events reader needs of its client. */
export interface EventsConnection {
  readonly base: URL;
  /**
   * The headers that authenticate the stream: `authorization` with a bearer token for the typed
   * client; the web page sends its CSRF secret instead, beside its session cookie.
   */
  readonly credentials: Readonly<Record<string, string>>;
  readonly fetch: typeof fetch;
  /** How long the server may take to start answering. */
  readonly timeoutMs: number;
}

function positionOf(after: number | undefined): number {
  const value = after ?? 0;
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new BatonError('invalid_input', `after is a ledger position: a whole number ≥ 0, not ${value}`, {
      issues: [{ path: 'after', message: 'a whole number ≥ 0' }],
    });
  }
  return value;
}

/** One frame as a message, or the reason it is not one. */
function messageOf(frame: EventSourceMessage): WorkEventMessage | string {
  let data: unknown;
  try {
    data = JSON.parse(frame.data);
  } catch {
    return 'its data is not JSON';
  }
  const { position, recorded_at, event } = (data ?? {}) as Record<string, unknown>;
  if (typeof position !== 'number' || !Number.isSafeInteger(position) || String(position) !== frame.id) {
    return 'its position is not its id';
  }
  if (typeof recorded_at !== 'string' || typeof event !== 'object' || event === null) {
    return 'it lacks recorded_at or event';
  }
  return {
    name: (frame.event ?? 'message') as LiveEventName,
    position,
    recorded_at,
    event: event as WorkEvent,
  };
}

/**
 * Follow a session's work events. Connecting sends `Last-Event-ID: after`; the answer's status
 * and error envelope become a BatonError as every other call's do.
 */
export async function* workEvents(
  connection: EventsConnection,
  input: WorkEventsInput,
  options: WorkEventsOptions = {},
): AsyncGenerator<WorkEventMessage, void, undefined> {
  const { base } = connection;
  if (typeof input?.session_id !== 'string' || input.session_id === '') {
    throw new BatonError('invalid_input', 'workEvents needs session_id', {
      issues: [{ path: 'session_id', message: 'required' }],
    });
  }
  let last = positionOf(input.after);
  const idleMs = options.idleTimeoutMs ?? defaultIdleTimeoutMs;
  const url = new URL(`v1/sessions/${encodeURIComponent(input.session_id)}/events`, base);
  const stop = new AbortController();
  const caller = options.signal;
  const onAbort = () => stop.abort();
  caller?.addEventListener('abort', onAbort);
  if (caller?.aborted) return;
  let silence: NodeJS.Timeout | undefined;
  let silent = false;
  const broken = (why: string) =>
    new BatonError(
      'unavailable',
      `the event stream of session ${input.session_id} from ${base.origin} ${why}; resume after position ${last}`,
      { url: url.href, after: last },
    );
  try {
    let response: Response;
    const answerTimeout = AbortSignal.timeout(connection.timeoutMs);
    try {
      response = await connection.fetch(url, {
        signal: AbortSignal.any([stop.signal, answerTimeout]),
        headers: {
          ...connection.credentials,
          accept: 'text/event-stream',
          'last-event-id': String(last),
        },
      });
    } catch (error) {
      if (caller?.aborted) return;
      if (answerTimeout.aborted) throw broken(`did not start within ${connection.timeoutMs} ms`);
      throw new BatonError(
        'unavailable',
        `cannot reach the Baton server at ${base.origin}: ${describe(error)}`,
        {
          url: url.href,
        },
      );
    }
    if (!response.ok) {
      const text = await response.text().catch(() => '');
      throw errorOf(response.status, parse(text));
    }
    if (response.headers.get(batonApiHeader) !== batonApiVersion || response.body === null) {
      await response.body?.cancel().catch(() => undefined);
      throw new BatonError(
        'unavailable',
        `the server at ${base.origin} answered the event stream, but not as a Baton server (no ${batonApiHeader}: ${batonApiVersion} header): check the address`,
        { status: response.status, url: url.href },
      );
    }
    options.onOpen?.();
    const ready: WorkEventMessage[] = [];
    let bad: string | undefined;
    const parser = createParser({
      onEvent(frame) {
        if (bad !== undefined) return;
        const message = messageOf(frame);
        if (typeof message === 'string') bad = `sent a frame that is not a work event (${message})`;
        else ready.push(message);
      },
    });
    const watch = () => {
      clearTimeout(silence);
      silence = setTimeout(() => {
        silent = true;
        stop.abort();
      }, idleMs);
    };
    watch();
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    try {
      for (;;) {
        let chunk: Awaited<ReturnType<typeof reader.read>>;
        try {
          chunk = await reader.read();
        } catch (error) {
          if (silent) throw broken(`was silent for ${idleMs} ms`);
          if (caller?.aborted) return;
          throw broken(`broke off (${describe(error)})`);
        }
        if (chunk.done) throw broken('ended');
        watch();
        parser.feed(chunk.value);
        if (bad !== undefined) throw broken(bad);
        while (ready.length > 0) {
          const message = ready.shift()!;
          // A position at or before the last one would be a repeat: the server never sends one.
          if (message.position <= last) continue;
          yield message;
          last = message.position;
          if (caller?.aborted) return;
        }
      }
    } finally {
      reader.releaseLock();
    }
  } finally {
    clearTimeout(silence);
    caller?.removeEventListener('abort', onAbort);
    // Ends the connection when the loop broke, the caller aborted or the stream failed.
    stop.abort();
  }
}
