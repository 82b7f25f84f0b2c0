/** Requests Fastify could trip over before a route runs, and query values that must not coerce. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest, startHarness, type HttpHarness } from './helpers/http.ts';
import { backends } from './helpers/stores.ts';

describe('edges of the HTTP surface', () => {
  let h: HttpHarness;

  beforeAll(async () => {
    h = await startHarness(backends[0]!);
  });
  afterAll(() => h.dispose());

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

  it('does not echo the body back in a JSON syntax error', async () => {
    const reply = await send('/v1/work/sources/capture', 'POST', '{"scope_id": baton_secret_value}');
    expect(reply.status).toBe(400);
    expect(reply.text).not.toContain('baton_secret_value');
  });
});
