/** Requests Fastify could trip over before a route runs, and query values that must not coerce. */
import { connect, createServer, type Socket } from 'node:net';
import type { ConnectionError, FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorEnvelopeSchema } from '../src/core/api.ts';
import { answerClientError } from '../src/http/errors.ts';
import { handoffCurrentWork } from '../src/app/continuity.ts';
import { commitHandoff } from '../src/app/handoffs.ts';
import { buildApp } from '../src/http/server.ts';
import { project_id, rawRequest, startHarness, type HttpHarness } from './helpers/http.ts';
import { backends } from './helpers/stores.ts';
import { contractBody, openSse } from './helpers/work-surface.ts';

interface SocketReply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly text: string;
}

/**
 * Bytes written as they are on a fresh connection, for requests node:http will not send; the
 * reply is read until the server closes the connection.
 */
function sendBytes(port: number, bytes: string): Promise<SocketReply> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('the server left the connection open'));
    }, 5000);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      const raw = Buffer.concat(chunks).toString('utf8');
      const [head = '', text = ''] = raw.split(/\r\n\r\n(.*)/s);
      const [statusLine = '', ...lines] = head.split('\r\n');
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1]);
      if (!status) {
        reject(new Error(`no HTTP reply: ${JSON.stringify(raw)}`));
        return;
      }
      const headers = Object.fromEntries(
        lines.map((line) => [
          line.slice(0, line.indexOf(':')).toLowerCase(),
          line.slice(line.indexOf(':') + 1).trim(),
        ]),
      );
      resolve({ status, headers, text });
    });
    socket.write(bytes);
  });
}

describe('edges of the HTTP surface', () => {
  let h: HttpHarness;

  beforeAll(async () => {
    h = await startHarness(backends[0]!);
  });
  afterAll(() => h.dispose());

  it("says baton-api: v1 on every answer, refusals before routing and by Node's parser included", async () => {
    const host = `127.0.0.1:${h.port}`;
    const replies = [
      await sendBytes(h.port, `GET /healthz HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n`),
      await sendBytes(
        h.port,
        `GET /healthz HTTP/1.1\r\nHost: ${host}\r\nOrigin: null\r\nConnection: close\r\n\r\n`,
      ),
      await sendBytes(
        h.port,
        `GET /v1/sessions/%zz/work HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
      ),
      await sendBytes(h.port, `GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n`),
      await sendBytes(
        h.port,
        `POST /healthz HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab`,
      ),
    ];
    expect(replies.map((reply) => reply.status)).toEqual([403, 403, 400, 400, 400]);
    for (const reply of replies) {
      expect(reply.headers['baton-api']).toBe('v1');
      expect(errorEnvelopeSchema.safeParse(JSON.parse(reply.text)).success, reply.text).toBe(true);
    }
  });

  it('treats an Expect it does not know like any request: the Host guard, then the route, never a bare 417', async () => {
    const host = `127.0.0.1:${h.port}`;
    const foreign = await sendBytes(
      h.port,
      `GET /healthz HTTP/1.1\r\nHost: evil.example\r\nExpect: 200-ok\r\nConnection: close\r\n\r\n`,
    );
    expect(foreign.status).toBe(403);
    expect(errorEnvelopeSchema.parse(JSON.parse(foreign.text)).error.code).toBe('forbidden');
    const unauthenticated = await sendBytes(
      h.port,
      `GET /v1/work/metrics HTTP/1.1\r\nHost: ${host}\r\nExpect: 200-ok\r\nConnection: close\r\n\r\n`,
    );
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers['baton-api']).toBe('v1');
    const served = await sendBytes(
      h.port,
      `GET /v1/work/metrics HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${h.tokens.writer}\r\nExpect: 200-ok\r\nConnection: close\r\n\r\n`,
    );
    expect(served.status, served.text).toBe(200);
    expect(served.headers['baton-api']).toBe('v1');
  });

  it('answers HEAD on an event stream with its headers only, holding no stream open', async () => {
    const auth = `Authorization: Bearer ${h.tokens.writer}\r\n`;
    await h.call('POST', '/v1/sessions', { body: { session_id: 'heads' } });
    const head = await sendBytes(
      h.port,
      `HEAD /v1/sessions/heads/events HTTP/1.1\r\nHost: 127.0.0.1:${h.port}\r\n${auth}Connection: close\r\n\r\n`,
    );
    expect(head.status).toBe(200);
    expect(head.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(head.text).toBe('');
    const unknown = await sendBytes(
      h.port,
      `HEAD /v1/sessions/nobody/events HTTP/1.1\r\nHost: 127.0.0.1:${h.port}\r\n${auth}Connection: close\r\n\r\n`,
    );
    expect(unknown.status).toBe(404);
  });

  const send = (path: string, method = 'GET', body?: string) =>
    rawRequest({
      port: h.port,
      method,
      path,
      body,
      headers: {
        host: `127.0.0.1:${h.port}`,
        authorization: `Bearer ${h.tokens.writer}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
    });

  /** GET the report with this query and, when given, this Accept header. */
  const markdownReport = (query: string, accept?: string) =>
    rawRequest({
      port: h.port,
      method: 'GET',
      path: `/v1/work/report?${query}`,
      headers: {
        host: `127.0.0.1:${h.port}`,
        authorization: `Bearer ${h.tokens.writer}`,
        ...(accept === undefined ? {} : { accept }),
      },
    });

  /** The reply is the error envelope with this status and code, as JSON, on a closing connection. */
  function expectEnvelope(reply: SocketReply, status: number, code: string): void {
    expect(reply.status, reply.text).toBe(status);
    expect(reply.headers['content-type']).toMatch(/^application\/json/);
    const body = errorEnvelopeSchema.parse(JSON.parse(reply.text));
    expect(body.error.code).toBe(code);
    expect(body.error.details).toEqual({});
  }

  it('answers a malformed URL with 400 in the error shape', async () => {
    const reply = await send('/v1/%zz');
    expect(reply.status).toBe(400);
    expect(JSON.parse(reply.text)).toMatchObject({ error: { code: 'invalid_input' } });
  });

  it('refuses an empty or non-numeric revision in a query instead of reading revision 0', async () => {
    for (const through of ['', '%20', 'x', '-1', '1.5']) {
      const reply = await send(`/v1/work/report?scope_id=relay&through=${through}`);
      expect(reply.status, through).toBe(422);
      expect(JSON.parse(reply.text)).toMatchObject({ error: { code: 'invalid_input' } });
    }
  });

  it('refuses through or position without scope_id, as the CLI does, instead of ignoring them', async () => {
    for (const field of ['through', 'position']) {
      const reply = await send(`/v1/work/report?${field}=1`);
      expect(reply.status, field).toBe(422);
      expect(JSON.parse(reply.text)).toMatchObject({
        error: { code: 'invalid_input', details: { issues: [{ path: field }] } },
      });
    }
    expect((await send('/v1/work/report?scope_id=relay&through=0')).status).toBe(200);
  });

  it('refuses a body that is not valid UTF-8 with 400, writing nothing', async () => {
    const body = (text: Buffer) =>
      Buffer.concat([
        Buffer.from('{"scope_id":"utf8","source_id":"u1","content":"'),
        text,
        Buffer.from('"}'),
      ]);
    const post = (bytes: Buffer) =>
      fetch(`http://127.0.0.1:${h.port}/v1/work/sources/capture`, {
        method: 'POST',
        headers: { authorization: `Bearer ${h.tokens.writer}`, 'content-type': 'application/json' },
        body: bytes,
      });
    for (const bad of [
      Buffer.from([0xff, 0xfe]),
      Buffer.from([0xc3, 0x28]),
      Buffer.from([0xed, 0xa0, 0x80]),
    ]) {
      const refused = await post(body(bad));
      expect(refused.status).toBe(400);
      expect(await refused.json()).toEqual({
        error: {
          code: 'invalid_input',
          message: 'the body is not valid UTF-8; send JSON in UTF-8',
          details: {},
        },
      });
    }
    // The same source_id with other content is no conflict: nothing was captured.
    const captured = await post(body(Buffer.from('fine \u00e9', 'utf8')));
    expect(captured.status).toBe(200);
    expect(await captured.json()).toMatchObject({ source_ref: { source_id: 'u1' } });
  });

  it('refuses a POST without a body with 400, with or without a content type', async () => {
    for (const headers of [{}, { 'content-type': 'application/json' }] as Record<string, string>[]) {
      const reply = await rawRequest({
        port: h.port,
        method: 'POST',
        path: '/v1/work/sources/capture',
        headers: { host: `127.0.0.1:${h.port}`, authorization: `Bearer ${h.tokens.writer}`, ...headers },
      });
      expect(reply.status).toBe(400);
      expect(JSON.parse(reply.text)).toEqual({
        error: { code: 'invalid_input', message: 'the body is empty; send a JSON object', details: {} },
      });
    }
  });

  it('refuses a query parameter a route does not take, and a malformed escape in a query value', async () => {
    expect((await h.call('POST', '/v1/sessions', { body: { session_id: 'q1' } })).status).toBe(200);
    for (const path of [
      '/v1/sessions/q1/work?foo=1',
      '/v1/sessions/q1/work?__proto__=1',
      '/v1/sessions/q1/events?foo=1',
      '/v1/work/metrics?x=1',
    ]) {
      const reply = await send(path);
      expect({ path, status: reply.status }).toEqual({ path, status: 422 });
      expect(JSON.parse(reply.text)).toMatchObject({ error: { code: 'invalid_input' } });
    }
    for (const path of [
      '/v1/work/report?scope_id=%FF',
      '/v1/work/report?scope_id=%zz',
      '/v1/work/report?%FF=1',
    ]) {
      const reply = await send(path);
      expect({ path, status: reply.status }).toEqual({ path, status: 400 });
      expect(JSON.parse(reply.text)).toMatchObject({ error: { code: 'invalid_input' } });
    }
    expect((await send('/v1/sessions/q1/work')).status).toBe(200);
    expect((await send('/v1/work/report?scope_id=re%6Cay+')).status).toBe(422); // "relay ": decoded, then validated
    expect((await send('/v1/work/report?scope_id=re%6Cay')).status).toBe(200);
  });

  it('sends Markdown only to an Accept that takes text/markdown, by media-type rules, and says it varies', async () => {
    const report = (accept?: string) => markdownReport('format=markdown', accept);
    const cases: [string | undefined, string][] = [
      [undefined, 'application/json'],
      ['text/markdown', 'text/markdown'],
      ['TEXT/Markdown', 'text/markdown'],
      ['application/json, text/markdown;q=0.5', 'application/json'],
      ['text/markdown, application/json;q=0.5', 'text/markdown'],
      ['text/markdown;q=0', 'application/json'],
      ['*/*', 'application/json'],
      ['text/*', 'text/markdown'],
      ['application/xml', 'application/json'],
      ['text/markdown; charset=utf-8', 'text/markdown'],
      ['text/markdown; variant=GFM; q=0.9, application/json; q=0.5', 'text/markdown'],
      ['application/json; charset=utf-8, text/markdown; charset=utf-8; q=0.5', 'application/json'],
    ];
    for (const [accept, type] of cases) {
      const reply = await report(accept);
      expect({ accept, status: reply.status, type: reply.headers['content-type']?.split(';')[0] }).toEqual({
        accept,
        status: 200,
        type,
      });
      expect(reply.headers.vary).toMatch(/accept/i);
    }
  });

  it('shows control sequences in stored text as escapes in the Markdown view, and keeps them in JSON', async () => {
    const hostile = 'Deploy \u001b[31mnow\u001b[0m \u001b]52;c;cm0gLXJmIH4=\u0007 safe\rdone \u202eevil';
    const prepared = await handoffCurrentWork(h.deps, {
      project_id,
      scope_id: 'hostile',
      source_id: 'hostile-boundary',
      objective: hostile,
      current_state: [],
      disposition: 'continue',
      next_action: { text: hostile, basis: 'declared' },
    });
    await commitHandoff(h.deps, {
      project_id,
      scope_id: 'hostile',
      prepared: prepared.digest,
      expected_head: 0,
    });
    const markdown = await markdownReport('scope_id=hostile&format=markdown', 'text/markdown');
    expect(markdown.status).toBe(200);
    // eslint-disable-next-line no-control-regex -- the control characters a terminal would act on
    expect(markdown.text).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
    // Markdown escapes the stored punctuation (the escape's backslash, the bracket) to show it literally.
    expect(markdown.text).toContain('Deploy \\\\u001b\\[31mnow');
    const json = await send('/v1/work/report?scope_id=hostile');
    expect(JSON.stringify(JSON.parse(json.text))).toContain(JSON.stringify(hostile).slice(1, -1));
  });

  it('does not echo the body back in a JSON syntax error', async () => {
    const reply = await send('/v1/work/sources/capture', 'POST', '{"scope_id": baton_secret_value}');
    expect(reply.status).toBe(400);
    expect(reply.text).not.toContain('baton_secret_value');
  });

  describe('requests the HTTP parser refuses, answered in the error envelope on a closing connection', () => {
    const host = () => `Host: 127.0.0.1:${h.port}\r\n`;

    it('431 payload_too_large for headers over the limit', async () => {
      const reply = await sendBytes(
        h.port,
        `GET /healthz HTTP/1.1\r\n${host()}X-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      );
      expectEnvelope(reply, 431, 'payload_too_large');
      expect(reply.headers.connection).toBe('close');
    });

    it('400 invalid_input for a malformed request line, naming the parser error only', async () => {
      const reply = await sendBytes(h.port, `NOT A REQUEST\r\n${host()}\r\n`);
      expectEnvelope(reply, 400, 'invalid_input');
      expect(reply.headers.connection).toBe('close');
      expect(reply.text).toContain('HPE_');
    });

    it('400 invalid_input for a bad chunked body', async () => {
      const reply = await sendBytes(
        h.port,
        `POST /v1/work/sources/capture HTTP/1.1\r\n${host()}authorization: Bearer ${h.tokens.writer}\r\n` +
          'content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
      );
      expectEnvelope(reply, 400, 'invalid_input');
      expect(reply.headers.connection).toBe('close');
      expect(reply.text).not.toContain(h.tokens.writer);
    });

    it('400 invalid_input for a request without a Host header, HTTP/1.1 or 1.0', async () => {
      for (const version of ['1.1', '1.0']) {
        const reply = await sendBytes(h.port, `GET /healthz HTTP/${version}\r\nConnection: close\r\n\r\n`);
        expectEnvelope(reply, 400, 'invalid_input');
        expect(errorEnvelopeSchema.parse(JSON.parse(reply.text)).error.message).toContain('Host');
      }
    });

    it('still serves the next connection', async () => {
      await sendBytes(h.port, 'NOT A REQUEST\r\n\r\n');
      expect((await send('/healthz')).status).toBe(200);
    });
  });
});

describe('a request that arrives too slowly', () => {
  let h: HttpHarness;

  beforeAll(async () => {
    h = await startHarness(backends[0]!, { requestTimeoutMs: 300 });
  });
  afterAll(() => h.dispose());

  /** The connection is answered 408 in the error envelope and closed, within the test's 5 s. */
  async function expectTimedOut(bytes: string): Promise<void> {
    const reply = await sendBytes(h.port, bytes);
    expect(reply.status, reply.text).toBe(408);
    expect(reply.headers.connection).toBe('close');
    const body = errorEnvelopeSchema.parse(JSON.parse(reply.text));
    expect(body.error.code).toBe('invalid_input');
    expect(reply.text).not.toContain(h.tokens.writer);
  }

  it('408 for a body that stops short of its length, writing nothing', async () => {
    const body = JSON.stringify({ scope_id: 'slow', source_id: 'trickled', content: 'never finished' });
    await expectTimedOut(
      `POST /v1/work/sources/capture HTTP/1.1\r\nHost: 127.0.0.1:${h.port}\r\n` +
        `authorization: Bearer ${h.tokens.writer}\r\ncontent-type: application/json\r\n` +
        `content-length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
    );
    const streams = await h.deps.store.listStreams(project_id);
    expect(streams.map((info) => info.stream)).not.toContainEqual(
      expect.objectContaining({ scope_id: 'slow' }),
    );
  });

  it('408 for headers that never end', async () => {
    await expectTimedOut(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${h.port}\r\nX-Slow: a`);
  });

  it('serves a request that arrives in time on the same server', async () => {
    const reply = await rawRequest({
      port: h.port,
      method: 'GET',
      path: '/healthz',
      headers: { host: `127.0.0.1:${h.port}` },
    });
    expect(reply.status).toBe(200);
  });

  it('does not bound an answer: an event stream stays open past the request timeout', async () => {
    expect((await h.call('POST', '/v1/sessions', { body: { session_id: 'slow-s' } })).status).toBe(200);
    const stream = await openSse(h.url, '/v1/sessions/slow-s/events', {
      authorization: `Bearer ${h.tokens.writer}`,
    });
    try {
      expect(stream.status).toBe(200);
      const ended = await Promise.race([
        stream.ended.then(() => true),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 1_500)),
      ]);
      expect(ended).toBe(false);
      expect(
        (await h.call('POST', '/v1/sessions/slow-s/work/contracts', { body: contractBody })).status,
      ).toBe(200);
      expect((await stream.take(1)).length).toBe(1);
    } finally {
      stream.close();
    }
  });

  it('bounds every request by default: 30 s to arrive whole, headers included', async () => {
    const app = await buildApp({ deps: h.deps, logger: false });
    try {
      expect(app.server.requestTimeout).toBe(30_000);
      expect(app.server.headersTimeout).toBe(30_000);
    } finally {
      await app.close();
    }
  });

  it('takes a bound longer than the 5 minutes Node allows by default, headers then at most 1 minute', async () => {
    const app = await buildApp({ deps: h.deps, logger: false, requestTimeoutMs: 600_000 });
    try {
      expect(app.server.requestTimeout).toBe(600_000);
      expect(app.server.headersTimeout).toBe(60_000);
    } finally {
      await app.close();
    }
    await expect(buildApp({ deps: h.deps, logger: false, requestTimeoutMs: 0 })).rejects.toThrow(
      /requestTimeoutMs/,
    );
  });
});

describe('answerClientError on a socket that cannot take an answer', () => {
  const app = { log: { info: () => undefined } } as unknown as FastifyInstance;
  const answer = answerClientError.bind(app);
  const parseError = Object.assign(new Error('Parse Error'), {
    code: 'HPE_INVALID_METHOD',
  }) as ConnectionError;

  /** A connected pair: the server's end, and what the client end received until it closed. */
  async function pair(): Promise<{ server: Socket; received: Promise<string>; close: () => void }> {
    const listener = createServer();
    const accepted = new Promise<Socket>((resolve) => listener.once('connection', resolve));
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const { port } = listener.address() as { port: number };
    const client = connect({ host: '127.0.0.1', port });
    let text = '';
    client.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    client.on('error', () => undefined);
    const received = new Promise<string>((resolve) => client.on('close', () => resolve(text)));
    const server = await accepted;
    return { server, received, close: () => listener.close() };
  }

  it('does nothing to a destroyed socket, and does not throw', async () => {
    const { server, received, close } = await pair();
    server.destroy();
    expect(() => answer(parseError, server)).not.toThrow();
    expect(await received).toBe('');
    close();
  });

  it('closes a socket that is no longer writable without writing to it', async () => {
    const { server, received, close } = await pair();
    server.end();
    expect(() => answer(parseError, server)).not.toThrow();
    expect(await received).toBe('');
    expect(server.destroyed).toBe(true);
    close();
  });

  it('closes a socket whose response is already under way instead of writing a second one into it', async () => {
    const { server, received, close } = await pair();
    server.write('HTTP/1.1 200 OK\r\n');
    Object.assign(server, { _httpMessage: { headersSent: true } });
    answer(parseError, server);
    expect(await received).toBe('HTTP/1.1 200 OK\r\n');
    close();
  });

  it('answers a writable socket once, then closes it', async () => {
    const { server, received, close } = await pair();
    answer(parseError, server);
    answer(parseError, server);
    const text = await received;
    expect(text.match(/HTTP\/1\.1/g)).toHaveLength(1);
    expect(text).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    close();
  });
});
