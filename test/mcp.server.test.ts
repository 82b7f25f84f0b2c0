/**
 * /mcp as `baton serve` mounts it (buildApp): the SDK client works behind the server's Host and
 * Origin guard, and a foreign Host never reaches a session.
 */
import { request as httpRequest } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createToken } from '../src/app/auth.ts';
import { systemClock } from '../src/core/clock.ts';
import { startServer } from '../src/http/server.ts';
import { tempSqliteStore } from './helpers/sqlite.ts';
import { workToolNames } from '../src/mcp/work-tools.ts';
import { ok, toolNames } from './helpers/mcp.ts';

/** A POST whose Host header is sent as given (fetch would replace it). */
function postWithHost(url: URL, host: string, token: string): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      url,
      {
        method: 'POST',
        headers: {
          host,
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
      },
      (response) => {
        response.resume();
        resolve(response.statusCode);
      },
    );
    request.on('error', reject);
    request.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }));
  });
}

describe('MCP on the Baton HTTP server', () => {
  let harness: Awaited<ReturnType<typeof tempSqliteStore>>;
  let server: Awaited<ReturnType<typeof startServer>>;
  let token: string;

  beforeEach(async () => {
    harness = await tempSqliteStore();
    const deps = { store: harness.store, clock: systemClock };
    await deps.store.createProject('acme');
    token = (await createToken(deps, { project_id: 'acme' })).token;
    server = await startServer({ deps, port: 0, logger: false });
  });
  afterEach(async () => {
    await server.close();
    await harness.dispose();
  });

  it('serves the tools at /mcp and refuses a foreign Host with 403', async () => {
    const url = new URL('/mcp', server.url);
    const client = new Client({ name: 'baton-test', version: '0.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(url, {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([...toolNames, ...workToolNames].sort());
    expect(await ok(client, 'get_report', {})).toMatchObject({ result: { project_id: 'acme' } });
    expect(await postWithHost(url, `rebound.example:${url.port}`, token)).toBe(403);
    // The client stays connected: closing the server ends its session.
  });

  it("says in each description when to call the tool, as the spec's Integration rules ask", async () => {
    const client = new Client({ name: 'baton-test', version: '0.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL('/mcp', server.url), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
    const { tools } = await client.listTools();
    const description = (name: string) => tools.find((tool) => tool.name === name)!.description!;
    expect(description('create_work_contract')).toMatch(/new delegation needs a stable baseline/);
    expect(description('handoff_current_work')).toMatch(/asks to transfer the work, or the work must move/);
    expect(description('acknowledge_handoff')).toMatch(
      /only after checking the live workspace, your capability and your authorization/,
    );
    expect(description('acknowledge_handoff')).toMatch(/never latest/);
    expect(description('record_task_outcome')).toMatch(/real completion or interruption/);
    expect(description('record_task_outcome')).toMatch(/not .*session ending/);
    expect(client.getInstructions()).toMatch(/explicit work boundaries/);
    expect(client.getInstructions()).toMatch(/session id is attribution, never the identity of work/i);
    await client.close();
  });

  it("marks every /mcp answer, the SDK's own included, with baton-api: v1", async () => {
    const url = new URL('/mcp', server.url);
    const seen: (string | null)[] = [];
    const fetchAndLook: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      seen.push(response.headers.get('baton-api'));
      return response;
    };
    const client = new Client({ name: 'baton-test', version: '0.0.0' });
    const transport = new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
      fetch: fetchAndLook,
    });
    await client.connect(transport);
    await client.listTools();
    await transport.terminateSession();
    expect(seen.length).toBeGreaterThanOrEqual(3);
    expect(
      seen.every((value) => value === 'v1'),
      JSON.stringify(seen),
    ).toBe(true);
  });
});
