/**
 * Structured logs never contain a credential: with every request logged at trace level, even a
 * request serializer that writes all headers, no line holds the bearer token, the session
 * secret or the CSRF secret, while the lines themselves are there and parse as JSON.
 */
/* eslint-disable @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access -- reply bodies are parsed JSON, read only in assertions */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inputs, seedWorkstream, startHarness, traceLogging, type HttpHarness } from './helpers/http.ts';
import { backends } from './helpers/stores.ts';

describe('logs', () => {
  const lines: string[] = [];
  let h: HttpHarness;

  beforeAll(async () => {
    h = await startHarness(backends[0]!, traceLogging(lines));
  });
  afterAll(() => h.dispose());

  it('redacts the Authorization header, cookies and the CSRF token in every line', async () => {
    await seedWorkstream(h.call);
    await h.call('GET', '/v1/work/metrics', { token: h.tokens.reader });
    await h.call('POST', '/v1/work/sources/capture', { token: h.tokens.reader, body: inputs.capture('x') });
    await h.call('GET', '/v1/work/metrics', { token: `${h.tokens.writer}0` });
    await h.call('POST', '/v1/work/sources/capture', { body: '{"broken' });
    const login = await h.call('POST', '/v1/session');
    const session = login.headers.get('set-cookie')!.split(';')[0]!;
    const secret = session.split('=')[1]!;
    await h.call('POST', '/v1/work/sources/capture', {
      token: null,
      headers: { cookie: session, 'x-csrf-token': login.body.csrf },
      body: inputs.capture('from-page'),
    });
    await h.call('POST', '/v1/work/sources/capture', {
      token: null,
      headers: { cookie: session, 'x-csrf-token': 'wrong-csrf' },
      body: inputs.capture('from-page-2'),
    });
    await h.call('DELETE', '/v1/session', { token: null, headers: { cookie: session } });

    expect(lines.length).toBeGreaterThan(30);
    const parsed = lines.map((line) => JSON.parse(line) as { req?: { headers?: Record<string, unknown> } });
    const logged = parsed.filter((line) => line.req?.headers);
    expect(logged.length).toBeGreaterThan(10);
    expect(logged.some((line) => line.req!.headers!.authorization === '[redacted]')).toBe(true);
    expect(logged.some((line) => line.req!.headers!.cookie === '[redacted]')).toBe(true);
    expect(logged.some((line) => line.req!.headers!['x-csrf-token'] === '[redacted]')).toBe(true);
    const all = lines.join('\n');
    for (const credential of [
      h.tokens.writer,
      h.tokens.reader,
      h.tokens.writer.slice('baton_'.length),
      secret,
      login.body.csrf as string,
      'wrong-csrf',
    ]) {
      expect(all).not.toContain(credential);
    }
    expect(all).toContain('"statusCode":403');
    expect(all).toContain('request refused');
  });
});
