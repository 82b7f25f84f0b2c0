/**
 * Server-Sent Events over a hijacked Fastify reply: frames (`id`, `event`, `data`), a heartbeat
 * comment, backpressure (a send waits for the socket to drain) and an end that is the same
 * whether the client went away or the server is closing. Every open stream of an app is ended
 * by its preClose hook, so app.close() never waits on a stream that would never end by itself.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { hijackWithHeaders } from './hijack.ts';

export const heartbeatMs = 15_000;

export interface SseFrame {
  readonly id?: string;
  readonly event?: string;
  readonly data: string;
}

export interface EventStream {
  /** Write one event; resolves when the socket can take more. False once the stream ended. */
  send(frame: SseFrame): Promise<boolean>;
  readonly closed: boolean;
  /** Called once, when the stream ends for any reason. */
  onEnd(listener: () => void): void;
  end(): void;
}

/** One line per data line, as the format requires; a lone CR or LF never splits a field. */
export function encodeFrame(frame: SseFrame): string {
  const lines: string[] = [];
  if (frame.id !== undefined) lines.push(`id: ${frame.id.replace(/[\r\n]/g, '')}`);
  if (frame.event !== undefined) lines.push(`event: ${frame.event.replace(/[\r\n]/g, '')}`);
  for (const line of frame.data.split(/\r\n|\r|\n/)) lines.push(`data: ${line}`);
  return `${lines.join('\n')}\n\n`;
}

export interface EventStreams {
  /** Take a reply over as an event stream. */
  open(reply: FastifyReply): EventStream;
  /** How many are open now. */
  readonly size: number;
}

/** The event streams of one app: each is ended in the app's preClose hook. */
export function eventStreams(app: FastifyInstance, options: { heartbeatMs?: number } = {}): EventStreams {
  const streams = new Set<EventStream>();
  app.addHook('preClose', async () => {
    for (const stream of [...streams]) stream.end();
  });
  return {
    open: (reply) => openEventStream(reply, streams, options.heartbeatMs ?? heartbeatMs),
    get size() {
      return streams.size;
    },
  };
}

/**
 * Take the reply over and start the event stream: 200, text/event-stream, no caching and no
 * proxy buffering, `Connection: close` so that ending the stream also closes its socket.
 */
function openEventStream(reply: FastifyReply, streams: Set<EventStream>, everyMs: number): EventStream {
  // The headers hooks set on the reply (baton-api among them) go out with the stream's own.
  const raw = hijackWithHeaders(reply);
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    'x-accel-buffering': 'no',
    connection: 'close',
  });
  raw.flushHeaders();
  const listeners: (() => void)[] = [];
  let closed = false;

  const finish = () => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    streams.delete(stream);
    for (const listener of listeners) listener();
  };
  const stream: EventStream = {
    get closed() {
      return closed;
    },
    async send(frame) {
      if (closed) return false;
      if (raw.write(encodeFrame(frame))) return true;
      await new Promise<void>((resolve) => {
        const done = () => {
          raw.off('drain', done);
          raw.off('close', done);
          resolve();
        };
        raw.on('drain', done);
        raw.on('close', done);
      });
      return !closed;
    },
    onEnd(listener) {
      if (closed) listener();
      else listeners.push(listener);
    },
    end() {
      if (closed) return;
      finish();
      raw.end();
    },
  };
  const heartbeat = setInterval(() => {
    if (!closed) raw.write(': heartbeat\n\n');
  }, everyMs);
  heartbeat.unref();
  // The response closes when the client goes away or after end(); either way the stream is over.
  const gone = () => {
    finish();
    // The client went away: let its socket go too, or the server would wait for it on close.
    raw.destroy();
  };
  raw.on('close', gone);
  raw.on('error', gone);
  streams.add(stream);
  raw.write(': connected\n\n');
  return stream;
}
