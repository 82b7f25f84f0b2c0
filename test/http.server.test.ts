/**
 * The server's life: close() lets a request in flight finish, refuses new ones and leaves the
 * caller's store open, and does not wait for a connection that carries no request; listening beyond loopback warns at start; a taken port fails cleanly.
 */
import { once } from 'node:events';
import { connect } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AppDeps } from '../src/app/deps.ts';
import { BatonError } from '../src/core/errors.ts';
import { startServer } from '../src/http/server.ts';
import { callServer, inputs, seedTokens, type Tokens } from './helpers/http.ts';
import { backends, withOverrides, type OpenedStore } from './helpers/stores.ts';

describe('server lifecycle', () => {
  let opened: OpenedStore;
  let deps: AppDeps;
  let tokens: Tokens;

  beforeEach(async () => {
    opened = await backends[0]!.open();
    ({ deps, tokens } = await seedTokens(opened.store));
  });
  afterEach(() => opened.dispose());

  it('finishes a request in flight on close, refuses new connections, and leaves the store open', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let entered: () => void = () => {};
    const started = new Promise<void>((resolve) => (entered = resolve));
    const store = withOverrides(opened.store, {
      captureSource: async (scope, source) => {
        entered();
        await gate;
        return opened.store.captureSource(scope, source);
      },
    });
    const server = await startServer({ deps: { ...deps, store }, port: 0, logger: false });
    const inFlight = callServer(server.url, tokens.writer, 'POST', '/v1/work/sources/capture', {
      body: inputs.capture('slow'),
    });
    await started;
    const closed = server.close();
    await new Promise((resolve) => setTimeout(resolve, 50));
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
    release();
    const reply = await inFlight;
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ position: 1 });
    await closed;
    expect(
      (await opened.store.getStream({ project_id: 'acme', kind: 'scope', scope_id: 'relay' })).head,
    ).toBe(1);
  });

  it('closes without waiting for a connection that sent no request, or never finished its headers', async () => {
    const server = await startServer({ deps, port: 0, logger: false });
    const port = Number(new URL(server.url).port);
    // A browser's preconnect sends nothing; a slow client may stop in the middle of its headers.
    const sockets = [];
    for (const sent of ['', 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n']) {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => {});
      await once(socket, 'connect');
      if (sent !== '') socket.write(sent);
      sockets.push(socket);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    const ended = sockets.map((socket) => once(socket, 'close'));
    const started = Date.now();
    const closed = await Promise.race([
      server.close().then(() => 'closed'),
      new Promise((resolve) => setTimeout(() => resolve('still open after 5 s'), 5_000)),
    ]);
    for (const socket of sockets) socket.destroy();
    expect(closed).toBe('closed');
    expect(Date.now() - started).toBeLessThan(2_000);
    await Promise.all(ended);
  });

  it('keeps the request timeout while closing: a body that never ends does not hold close() open', async () => {
    const server = await startServer({ deps, port: 0, logger: false, requestTimeoutMs: 500 });
    const port = Number(new URL(server.url).port);
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    await once(socket, 'connect');
    socket.write(
      `POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${tokens.writer}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"session_id":',
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    const ended = once(socket, 'close');
    const started = Date.now();
    const closed = await Promise.race([
      server.close().then(() => 'closed'),
      new Promise((resolve) => setTimeout(() => resolve('still open after 5 s'), 5_000)),
    ]);
    socket.destroy();
    expect(closed).toBe('closed');
    expect(Date.now() - started).toBeLessThan(2_000);
    await ended;
    expect(await opened.store.listStreams('acme')).toEqual([]);
  });

  it('warns at start when it listens beyond loopback', async () => {
    const write = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const server = await startServer({ deps, host: '0.0.0.0', port: 0, logger: false });
      await server.close();
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const warning = write.mock.calls.map((call) => String(call[0])).join('');
      expect(warning).toContain('listening on 0.0.0.0, beyond this machine');
      expect(warning).toContain('requires a project token');
    } finally {
      write.mockRestore();
    }
  });

  it('does not warn on loopback, and fails cleanly on a taken port', async () => {
    const write = vi.spyOn(process.stderr, 'write');
    const first = await startServer({ deps, port: 0, logger: false });
    try {
      expect(write.mock.calls.map((call) => String(call[0])).join('')).not.toContain('beyond this machine');
      const port = Number(new URL(first.url).port);
      const taken = await startServer({ deps, port, logger: false }).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(taken).toBeInstanceOf(BatonError);
      expect(taken).toMatchObject({ code: 'unavailable', data: { host: '127.0.0.1', port } });
      expect((taken as BatonError).message).toContain(`127.0.0.1:${port} is in use by another program`);
    } finally {
      write.mockRestore();
      await first.close();
    }
  });
});
