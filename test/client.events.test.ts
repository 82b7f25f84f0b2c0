/**
 * The typed client's live work events (`client.workEvents`) against a real Baton server on
 * SQLite: typed messages in ledger order, resumption after a position, a quiet end when the
 * caller aborts or breaks (which also frees the server's stream), the server's refusals as
 * BatonErrors, and `unavailable` with the position to resume after when the stream breaks off
 * or falls silent.
 */
/* eslint-disable @typescript-eslint/no-unsafe-assignment -- expect.any() in toMatchObject */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClient, type BatonClient, type WorkEventMessage } from '../src/client/index.ts';
import type { BatonError } from '../src/core/errors.ts';
import { project_id, startHarness, type HttpHarness } from './helpers/http.ts';
import { rejection } from './helpers/errors.ts';
import { backends } from './helpers/stores.ts';
import { contractBody } from './helpers/work-surface.ts';

let h: HttpHarness;
let client: BatonClient;

beforeEach(async () => {
  h = await startHarness(backends[0]!, { maxStreamsPerToken: 1 });
  client = createClient({ baseUrl: h.url, token: h.tokens.writer });
  await client.startSession({ session_id: 's1' });
});
afterEach(async () => {
  await h.dispose();
});

/** Positions of the session's work events, from the ledger itself. */
async function ledgerPositions(after = 0): Promise<number[]> {
  const positions: number[] = [];
  const stream = { project_id, kind: 'session', session_id: 's1' } as const;
  for await (const entry of h.deps.store.readStream(stream, { kinds: ['work_event'] }))
    if (entry.position > after) positions.push(entry.position);
  return positions;
}

/** Collect messages in the background until `count` arrived (then break) or the iteration ends. */
function collect(iterable: AsyncIterable<WorkEventMessage>, count = Infinity) {
  const received: WorkEventMessage[] = [];
  const done = (async () => {
    if (count === 0) return;
    for await (const message of iterable) {
      received.push(message);
      if (received.length >= count) break;
    }
  })();
  return { received, done };
}

async function until(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('client.workEvents', () => {
  it('yields typed work events in ledger order, live, until the caller aborts; resumes after a position', async () => {
    const stop = new AbortController();
    const live = collect(client.workEvents({ session_id: 's1' }, { signal: stop.signal }));
    await client.createWork({ session_id: 's1', ...contractBody });
    await until(() => live.received.length === 2);
    await client.confirmWork({
      session_id: 's1',
      revision: 1,
      resolutions: [{ assumption_id: 'db', resolution: 'staging' }],
    });
    await until(() => live.received.length === 5);
    stop.abort();
    await live.done;

    expect(live.received.map((message) => message.name)).toEqual([
      'WorkContractCreated',
      'WorkNeedsInput',
      'WorkAssumptionResolved',
      'WorkContractStatusChanged',
      'WorkItemChanged',
    ]);
    expect(live.received.map((message) => message.position)).toEqual(await ledgerPositions());
    const [created] = live.received;
    expect(created).toMatchObject({
      recorded_at: expect.any(String),
      event: { schema: 'baton.work-event/v1', kind: { type: 'contract_created' }, actor: { type: 'human' } },
    });

    const snapshot = await client.getWork({ session_id: 's1' });
    await client.cancelWorkItem({ session_id: 's1', item_id: 'docs' });
    const resumed = collect(client.workEvents({ session_id: 's1', after: snapshot.position }), 1);
    await resumed.done;
    expect(resumed.received.map((message) => [message.name, message.position])).toEqual([
      ['WorkItemChanged', (await ledgerPositions(snapshot.position))[0]],
    ]);
  });

  it('closes its connection when the loop breaks, so the server frees the stream', async () => {
    await client.createWork({ session_id: 's1', ...contractBody });
    // The server allows this token one stream: each call below needs the one before it closed.
    for (let round = 0; round < 3; round += 1) {
      let opened: WorkEventMessage[] | undefined;
      for (let tries = 0; opened === undefined; tries += 1) {
        try {
          opened = [];
          for await (const message of client.workEvents({ session_id: 's1' })) {
            opened.push(message);
            break;
          }
        } catch (error) {
          opened = undefined;
          if ((error as BatonError).code !== 'too_many_requests' || tries > 100) throw error;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
      expect(opened.map((message) => message.name)).toEqual(['WorkContractCreated']);
    }
  });

  it("turns the server's refusals into BatonErrors with their codes", async () => {
    const first = async (iterable: AsyncIterable<WorkEventMessage>) => {
      for await (const message of iterable) return message;
      return undefined;
    };
    expect((await rejection(first(client.workEvents({ session_id: 'nobody' })))).code).toBe('not_found');
    const rival = createClient({ baseUrl: h.url, token: h.tokens.rival });
    expect((await rejection(first(rival.workEvents({ session_id: 's1' })))).code).toBe('not_found');
    const past = await rejection(first(client.workEvents({ session_id: 's1', after: 99 })));
    expect(past.code).toBe('invalid_input');
    expect(past.data).toMatchObject({ after: 99, head: 1 });
    for (const after of [-1, 1.5]) {
      expect((await rejection(first(client.workEvents({ session_id: 's1', after })))).code).toBe(
        'invalid_input',
      );
    }
    expect((await rejection(first(client.workEvents({ session_id: '' })))).code).toBe('invalid_input');

    const stop = new AbortController();
    const held = collect(client.workEvents({ session_id: 's1' }, { signal: stop.signal }));
    await client.createWork({ session_id: 's1', ...contractBody });
    await until(() => held.received.length === 2);
    const refused = await rejection(first(client.workEvents({ session_id: 's1' })));
    expect(refused.code).toBe('too_many_requests');
    expect(refused.data).toEqual({ limit: 1 });
    stop.abort();
    await held.done;
  });

  it('fails as unavailable with the position to resume after when the server goes away', async () => {
    await client.createWork({ session_id: 's1', ...contractBody });
    const received: WorkEventMessage[] = [];
    const ended = (async () => {
      for await (const message of client.workEvents({ session_id: 's1' })) received.push(message);
    })();
    await until(() => received.length === 2);
    await h.dispose();
    const error = await rejection(ended);
    expect(error.code).toBe('unavailable');
    expect(error.data).toMatchObject({ after: received[1]!.position });
    expect(error.message).toContain(`resume after position ${received[1]!.position}`);
  });
});

describe('client.workEvents against other servers', () => {
  let other: Server | undefined;
  const responses: ServerResponse[] = [];
  afterEach(async () => {
    for (const response of responses.splice(0)) response.destroy();
    await new Promise((resolve) => other?.close(resolve));
    other = undefined;
  });

  async function serve(answer: (response: ServerResponse) => void): Promise<string> {
    other = createServer((_request, response) => {
      responses.push(response);
      answer(response);
    });
    await new Promise<void>((resolve) => other!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
  }

  const drain = async (iterable: AsyncIterable<WorkEventMessage>) => {
    const received: WorkEventMessage[] = [];
    for await (const message of iterable) received.push(message);
    return received;
  };

  it('gives up on a stream that stays silent past its idle timeout', async () => {
    const url = await serve((response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream', 'baton-api': 'v1' });
      response.write(': connected\n\n');
    });
    const silent = createClient({ baseUrl: url, token: h.tokens.writer });
    const error = await rejection(
      drain(silent.workEvents({ session_id: 's1', after: 4 }, { idleTimeoutMs: 200 })),
    );
    expect(error.code).toBe('unavailable');
    expect(error.message).toContain('was silent for 200 ms; resume after position 4');
    expect(error.data).toMatchObject({ after: 4 });
  });

  it('refuses a stream that does not come from Baton, and a frame that is not a work event', async () => {
    const foreign = createClient({
      baseUrl: await serve((response) =>
        response.writeHead(200, { 'content-type': 'text/event-stream' }).end(),
      ),
      token: h.tokens.writer,
    });
    const error = await rejection(drain(foreign.workEvents({ session_id: 's1' })));
    expect(error.code).toBe('unavailable');
    expect(error.message).toContain('not as a Baton server');
    await new Promise((resolve) => other!.close(resolve));

    const garbled = createClient({
      baseUrl: await serve((response) => {
        response.writeHead(200, { 'content-type': 'text/event-stream', 'baton-api': 'v1' });
        response.write('id: 7\nevent: WorkItemChanged\ndata: {"position": 8}\n\n');
      }),
      token: h.tokens.writer,
    });
    const bad = await rejection(drain(garbled.workEvents({ session_id: 's1' })));
    expect(bad.code).toBe('unavailable');
    expect(bad.message).toContain('sent a frame that is not a work event (its position is not its id)');
  });
});
