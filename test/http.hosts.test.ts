/**
 * DNS-rebinding protection over a real socket, through node:http (fetch will not send a custom
 * Host): a foreign Host or a present, foreign Origin is 403 on /v1 routes, on /mcp and on
 * unknown paths, before authentication; the loopback names at the listening port pass.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowedHosts } from '../src/http/hosts.ts';
import { rawRequest, startHarness, type HttpHarness } from './helpers/http.ts';
import { backends } from './helpers/stores.ts';

const initialize = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'host-test', version: '1' },
  },
});

describe('Host and Origin checks', () => {
  let h: HttpHarness;

  beforeAll(async () => {
    h = await startHarness(backends[0]!, { allowedHosts: ['baton.lan'] });
  });
  afterAll(() => h.dispose());

  function send(path: string, headers: Record<string, string>, method = 'GET', body?: string) {
    return rawRequest({
      port: h.port,
      method,
      path,
      body,
      headers: { authorization: `Bearer ${h.tokens.writer}`, ...headers },
    });
  }

  function mcp(headers: Record<string, string>) {
    return send(
      '/mcp',
      { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      'POST',
      initialize,
    );
  }

  function expectForbidden(reply: { status: number; text: string }): void {
    expect(reply.status, reply.text).toBe(403);
    const body = JSON.parse(reply.text) as { error: { code: string; message: string; details: object } };
    expect(body).toEqual({ error: { code: 'forbidden', message: body.error.message, details: {} } });
    expect(body.error.message).toContain('DNS-rebinding');
  }

  it('serves the loopback names at the listening port and the configured names', async () => {
    for (const host of [
      `127.0.0.1:${h.port}`,
      `localhost:${h.port}`,
      `[::1]:${h.port}`,
      `LOCALHOST:${h.port}`,
      `baton.lan:${h.port}`,
    ]) {
      expect((await send('/v1/work/metrics', { host })).status, host).toBe(200);
    }
    const origin = await send('/v1/work/metrics', {
      host: `127.0.0.1:${h.port}`,
      origin: `http://localhost:${h.port}`,
    });
    expect(origin.status).toBe(200);
  });

  it('refuses a foreign Host on a /v1 route, on /mcp, on /healthz and on unknown paths, before authentication', async () => {
    for (const host of [
      'evil.example',
      `evil.example:${h.port}`,
      `127.0.0.1:${h.port + 1}`,
      '127.0.0.1',
      `localhost.evil.example:${h.port}`,
    ]) {
      expectForbidden(await send('/v1/work/metrics', { host }));
      expectForbidden(await send('/v1/work/metrics', { host, authorization: '' }));
      expectForbidden(await mcp({ host }));
      expectForbidden(await send('/healthz', { host }));
      expectForbidden(await send('/nowhere', { host }));
    }
  });

  it('refuses a foreign Origin on a /v1 route and on /mcp, even with a valid token', async () => {
    const host = `127.0.0.1:${h.port}`;
    for (const origin of [
      'http://evil.example',
      `http://evil.example:${h.port}`,
      `https://127.0.0.1:${h.port + 1}`,
      'null',
      `file://127.0.0.1:${h.port}`,
      `ftp://127.0.0.1:${h.port}`,
    ]) {
      expectForbidden(await send('/v1/work/metrics', { host, origin }));
      expectForbidden(
        await send(
          '/v1/work/sources/capture',
          { host, origin, 'content-type': 'application/json' },
          'POST',
          '{}',
        ),
      );
      expectForbidden(await mcp({ host, origin }));
    }
  });

  it('lets an MCP client with an allowed Host and Origin through to the MCP endpoint', async () => {
    const reply = await mcp({ host: `127.0.0.1:${h.port}`, origin: `http://127.0.0.1:${h.port}` });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.headers['mcp-session-id']).toEqual(expect.any(String));
  });
});

describe('allowedHosts', () => {
  it('names loopback at the port, a specific listening host, extra names, and bare names at port 80', () => {
    expect([...allowedHosts('127.0.0.1', 4680)]).toEqual(['127.0.0.1:4680', 'localhost:4680', '[::1]:4680']);
    expect([...allowedHosts('0.0.0.0', 4680, ['baton.lan', 'other:9000'])]).toEqual([
      '127.0.0.1:4680',
      'localhost:4680',
      '[::1]:4680',
      'baton.lan:4680',
      'other:9000',
    ]);
    expect(allowedHosts('192.168.1.5', 4680).has('192.168.1.5:4680')).toBe(true);
    expect(allowedHosts('::', 80).has('localhost')).toBe(true);
  });
});
