/**
 * Managed-work fixtures for the surface tests: a contract with an assumption to confirm, two
 * items (one required and verified by a criterion, one optional depending on it), and a small
 * Server-Sent Events reader over node:http (one socket per stream, no pooling, so closing it
 * closes exactly that connection).
 */
import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import type { CreateWorkInput, ReviseWorkInput } from '../../src/client/index.ts';

export const contractBody: Omit<CreateWorkInput, 'session_id'> & { contract_id: string } = {
  contract_id: 'c1',
  objective: 'Fix the login form (acme-private)',
  constraints: [{ constraint_id: 'no-db', text: 'no schema change' }],
  assumptions: [
    { assumption_id: 'db', text: 'Tests run against the staging database', requires_confirmation: true },
  ],
  criteria: [
    {
      criterion_id: 'tests',
      statement: 'the login tests pass',
      kind: { type: 'shell', command: 'npm test' },
    },
    {
      criterion_id: 'style',
      statement: 'the form reads well',
      kind: { type: 'semantic', statement: 'the form reads well' },
      required: false,
    },
  ],
  items: [
    { item_id: 'code', title: 'Change the form', criterion_ids: ['tests', 'style'] },
    { item_id: 'docs', title: 'Document the change', required: false, dependencies: ['code'] },
  ],
};

/** The second revision: the same items and a third, optional one. */
export const revisedBody: Omit<ReviseWorkInput, 'session_id' | 'previous_revision'> = {
  objective: 'Fix the login form and its error message',
  criteria: contractBody.criteria,
  assumptions: [
    {
      assumption_id: 'db',
      text: 'Tests run against the staging database',
      requires_confirmation: true,
      resolution: 'staging',
    },
  ],
  items: [...contractBody.items, { item_id: 'copy', title: 'Reword the error message', required: false }],
  reason: 'the error message is part of it',
};

export interface SseEvent {
  readonly id: string | undefined;
  readonly event: string | undefined;
  readonly data: string;
}

export interface SseConnection {
  readonly status: number;
  readonly headers: IncomingMessage['headers'];
  /** The raw body when the answer is not an event stream (an error envelope). */
  readonly body: string;
  /** Comments seen so far (`: connected`, `: heartbeat`). */
  readonly comments: string[];
  /** The next n events, waiting at most timeoutMs for them. */
  take(n: number, timeoutMs?: number): Promise<SseEvent[]>;
  /**
   * Resolves once `holds` is true of what arrived (checked now and at each arrival), waiting at
   * most timeoutMs: a condition to wait for, where a fixed sleep would race a loaded machine.
   */
  until(holds: () => boolean, timeoutMs?: number): Promise<void>;
  /** Events received and not yet taken. */
  pending(): SseEvent[];
  /** Resolves when the server ends the stream. */
  readonly ended: Promise<void>;
  close(): void;
}

/** Open GET <path> as an event stream with the given headers. */
export function openSse(url: string, path: string, headers: Record<string, string>): Promise<SseConnection> {
  return new Promise((resolve, reject) => {
    const events: SseEvent[] = [];
    const comments: string[] = [];
    let wake: (() => void) | undefined;
    let endedResolve!: () => void;
    const ended = new Promise<void>((done) => (endedResolve = done));
    let buffer = '';
    /** Wait for `holds`, woken by each arrival; `what` says what was awaited when it times out. */
    const arrival = async (holds: () => boolean, timeoutMs: number, what: () => string) => {
      const deadline = Date.now() + timeoutMs;
      while (!holds()) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`waited ${timeoutMs} ms for ${what()}`);
        await new Promise<void>((done) => {
          const timer = setTimeout(done, left);
          wake = () => {
            clearTimeout(timer);
            done();
          };
        });
      }
    };
    const parse = () => {
      for (let at = buffer.indexOf('\n\n'); at >= 0; at = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        let id: string | undefined;
        let event: string | undefined;
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) comments.push(line.slice(1).trim());
          else if (line.startsWith('id: ')) id = line.slice(4);
          else if (line.startsWith('event: ')) event = line.slice(7);
          else if (line.startsWith('data: ')) data.push(line.slice(6));
        }
        if (data.length > 0) events.push({ id, event, data: data.join('\n') });
      }
      wake?.();
    };
    const client: ClientRequest = request(`${url}${path}`, { agent: false, headers }, (response) => {
      response.setEncoding('utf8');
      const stream = response.headers['content-type']?.startsWith('text/event-stream') ?? false;
      let body = '';
      const connection: SseConnection = {
        status: response.statusCode ?? 0,
        headers: response.headers,
        get body() {
          return body;
        },
        comments,
        async take(n, timeoutMs = 10_000) {
          await arrival(
            () => events.length >= n,
            timeoutMs,
            () => `${n} events, got ${events.length}: ${JSON.stringify(events)}`,
          );
          return events.splice(0, n);
        },
        until: (holds, timeoutMs = 10_000) =>
          arrival(
            holds,
            timeoutMs,
            () =>
              `a condition, got comments ${JSON.stringify(comments)} and events ${JSON.stringify(events)}`,
          ),
        pending: () => [...events],
        ended,
        close: () => client.destroy(),
      };
      response.on('data', (chunk: string) => {
        if (!stream) {
          body += chunk;
          return;
        }
        buffer += chunk;
        parse();
      });
      response.on('end', endedResolve);
      response.on('close', endedResolve);
      if (stream) resolve(connection);
      else response.on('end', () => resolve(connection));
    });
    client.on('error', (error) => {
      endedResolve();
      reject(error);
    });
    client.end();
  });
}

/** The parsed data of a work event frame. */
export interface WorkFrameData {
  readonly position: number;
  readonly recorded_at: string;
  readonly event: unknown;
}

export function frameData(event: SseEvent): WorkFrameData {
  return JSON.parse(event.data) as WorkFrameData;
}
