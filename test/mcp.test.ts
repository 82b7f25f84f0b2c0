/**
 * The MCP server end to end with the official SDK client: over stdio (a child process, as
 * `baton mcp` runs) and over Streamable HTTP at /mcp on Fastify, plus the tool-error contract.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { authenticateToken, createToken } from '../src/app/auth.ts';
import type { AppDeps } from '../src/app/deps.ts';
import { findOperation } from '../src/app/operations.ts';
import { systemClock } from '../src/core/clock.ts';
import { installJsonParser } from '../src/http/body.ts';
import { registerMcpRoutes } from '../src/mcp/http.ts';
import { createMcpServer } from '../src/mcp/server.ts';
import { workToolNames } from '../src/mcp/work-tools.ts';
import { withOverrides } from './helpers/stores.ts';
import { tempSqliteStore } from './helpers/sqlite.ts';
import {
  confirmed,
  fail,
  noAuthorityPattern,
  ok,
  rawInitialize,
  readTools,
  runContinuityLoop,
  toolNames,
} from './helpers/mcp.ts';

const entry = join(import.meta.dirname, 'helpers', 'mcp-stdio-entry.ts');

function newClient(): Client {
  return new Client({ name: 'baton-test', version: '0.0.0' });
}

/** One committed revision in scope_id, so acknowledgements have something to name. */
async function commitOne(client: Client, scope_id: string): Promise<void> {
  const prepared = await ok<{ digest: string }>(client, 'handoff_current_work', {
    scope_id,
    source_id: 'boundary-1',
    objective: 'Ship it',
    disposition: 'continue',
    next_action: { text: 'Run the tests', basis: 'declared' },
  });
  await ok(client, 'commit_handoff', { scope_id, prepared: prepared.digest, expected_head: 0 });
}

describe('MCP over stdio', () => {
  let dir: string;
  let client: Client;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-mcp-'));
    client = newClient();
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [entry, join(dir, 'baton.db')],
        stderr: 'inherit',
      }),
    );
  });
  afterAll(async () => {
    await client.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists exactly the nine continuity tools and the six work tools, each saying it grants no authority, with annotations', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([...toolNames, ...workToolNames].sort());
    for (const tool of tools) {
      expect(tool.description).toMatch(noAuthorityPattern);
      if (workToolNames.includes(tool.name)) continue;
      expect(tool.annotations).toEqual({
        title: expect.any(String) as string,
        readOnlyHint: readTools.includes(tool.name),
        destructiveHint: false,
        idempotentHint: findOperation(tool.name)!.idempotent,
        openWorldHint: false,
      });
      // The project comes from the principal, never from the arguments.
      expect(tool.inputSchema.properties ?? {}).not.toHaveProperty('project_id');
      expect(tool.inputSchema).toMatchObject({ type: 'object', additionalProperties: false });
    }
    const acknowledge = tools.find((tool) => tool.name === 'acknowledge_handoff')!;
    expect(acknowledge.inputSchema.required).toEqual(
      expect.arrayContaining(['scope_id', 'source_id', 'target', 'status', 'receiver_checks']),
    );
    // An exact target only: the listed schema offers no latest.
    expect(JSON.stringify(acknowledge.inputSchema.properties!.target)).not.toContain('latest');
    expect(client.getInstructions()).toMatch(/untrusted/);
  });

  it('runs a whole continuity loop through the tools, to covered', async () => {
    await runContinuityLoop(client, 'stdio-loop');
  });

  it('declares every tool’s output schema, and the SDK client holds each result to it', async () => {
    const { tools } = await client.listTools();
    const schemas = new Map(tools.map((tool) => [tool.name, tool.outputSchema]));
    for (const [name, schema] of schemas) expect(schema, name).toMatchObject({ type: 'object' });
    // listTools armed the client: it checks each result below against its tool's schema itself.
    await runContinuityLoop(client, 'stdio-output');
    // And the schemas say something: a value outside its set, or a missing label, fails them.
    const validator = new AjvJsonSchemaValidator();
    const valid = (name: string, value: unknown) => validator.getValidator(schemas.get(name)!)(value).valid;
    const continued = await ok(client, 'continue_handoff', { scope_id: 'stdio-output', selection: 'latest' });
    expect(valid('continue_handoff', continued)).toBe(true);
    expect(valid('continue_handoff', { ...continued, evidence: 'probably' })).toBe(false);
    const { trust: _trust, ...unlabelled } = continued;
    expect(valid('continue_handoff', unlabelled)).toBe(false);
    // A project report is wrapped with the tool's label, and only that label.
    const report = await ok(client, 'get_report', {});
    expect(report.trust).toBe('untrusted_history');
    expect(valid('get_report', report)).toBe(true);
    expect(valid('get_report', { ...report, trust: 'untrusted_input' })).toBe(false);
    const committed = await ok<{ result: Record<string, unknown> }>(client, 'get_work_continuity', {
      scope_id: 'stdio-output',
    });
    expect(valid('get_work_continuity', committed)).toBe(true);
    expect(
      valid('get_work_continuity', { ...committed, result: { ...committed.result, outcome_state: 'done' } }),
    ).toBe(false);
  });

  it('escapes control and bidirectional characters in the text a model reads, losslessly: its JSON is the structured result', async () => {
    const objective = 'Ship \u202eti\u202c \u001b[31mnow\u001b[0m \u0085 done';
    const result = await client.callTool({
      name: 'create_work_contract',
      arguments: {
        scope_id: 'stdio-hidden',
        source_id: 'contract-1',
        objective,
        completion_criteria: ['tests pass'],
      },
    });
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    const [content] = result.content as { type: string; text: string }[];
    // eslint-disable-next-line no-control-regex -- the point is that none is left
    expect(content!.text).not.toMatch(/[\u001b\u0085\u202c\u202e]/);
    expect(content!.text).toContain('\\u202e');
    expect(JSON.parse(content!.text)).toEqual(result.structuredContent);
    expect(JSON.stringify(result.structuredContent)).toContain(objective.slice(0, 6));
  });

  it('refuses latest in acknowledge_handoff and points to continue_handoff', async () => {
    await commitOne(client, 'stdio-latest');
    const error = await fail(client, 'acknowledge_handoff', {
      scope_id: 'stdio-latest',
      source_id: 'receipt-1',
      target: 'latest',
      status: 'accepted',
      receiver_checks: confirmed,
    });
    expect(error.code).toBe('invalid_input');
    expect(error.text).toContain('continue_handoff');
    expect(error.details).toEqual({ issues: [{ path: 'target', message: expect.any(String) as string }] });
  });

  it('reports a malformed body as invalid_input naming the field, and writes nothing', async () => {
    const error = await fail(client, 'create_work_contract', {
      scope_id: 'stdio-bad',
      source_id: 'contract-1',
      objective: 'No criteria',
      completion_criteria: [],
    });
    expect(error.code).toBe('invalid_input');
    expect(error.text).toContain('completion_criteria');
    expect(error.details.issues).toEqual([
      { path: 'completion_criteria', message: expect.any(String) as string },
    ]);

    const wrongType = await fail(client, 'acknowledge_handoff', {
      scope_id: 'stdio-bad',
      source_id: 'receipt-1',
      target: { exact: 1 },
      status: 'accepted',
      receiver_checks: { ...confirmed, capability: 'yes' },
    });
    expect(wrongType.code).toBe('invalid_input');
    expect(wrongType.text).toContain('receiver_checks.capability');

    const otherProject = await fail(client, 'prepare_context', {
      scope_id: 'stdio-bad',
      project_id: 'other',
    });
    expect(otherProject.code).toBe('invalid_input');
    expect(otherProject.text).toContain('project_id');

    expect(await ok(client, 'get_report', {})).toMatchObject({
      result: {
        workstreams: expect.not.arrayContaining([
          expect.objectContaining({ scope_id: 'stdio-bad' }),
        ]) as unknown[],
      },
    });
  });

  it('carries what a caller needs to recover from a stale head', async () => {
    await commitOne(client, 'stdio-stale');
    const prepared = await ok<{ digest: string }>(client, 'handoff_current_work', {
      scope_id: 'stdio-stale',
      source_id: 'boundary-2',
      objective: 'Ship it',
      disposition: 'continue',
      next_action: { text: 'Run the tests again', basis: 'declared' },
    });
    const error = await fail(client, 'commit_handoff', {
      scope_id: 'stdio-stale',
      prepared: prepared.digest,
      expected_head: 0,
    });
    expect(error).toMatchObject({
      code: 'precondition_failed',
      details: { base_revision: 1, expected_head: 0 },
    });
  });

  it('exits by itself when stdin closes', async () => {
    const child = spawn(process.execPath, [entry, join(dir, 'exit.db')], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    child.stdin.end();
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(0);
  });
});

/**
 * The protocol faults every transport answers as a JSON-RPC error (-32602 unless code says
 * otherwise), and what each answer must say.
 */
const faults: {
  readonly request: Record<string, unknown>;
  readonly message: RegExp;
  readonly code?: number;
}[] = [
  {
    request: {
      jsonrpc: '2.0',
      id: 11,
      method: 'tools/call',
      params: { name: 'get_report', arguments: null },
    },
    message: /^Invalid params: params\.arguments: /,
  },
  {
    request: { jsonrpc: '2.0', id: 12, method: 'tools/call', params: { name: 7, arguments: {} } },
    message: /^Invalid params: params\.name: /,
  },
  {
    request: {
      jsonrpc: '2.0',
      id: 13,
      method: 'tools/call',
      params: { name: 'x'.repeat(5000), arguments: {} },
    },
    message: /^Invalid params: unknown tool "x{100}…"$/,
  },
  {
    request: {
      jsonrpc: '2.0',
      id: 14,
      method: 'tools/call',
      params: { name: 'get_report', arguments: JSON.parse('{"__proto__":{"polluted":1}}') as unknown },
    },
    message: /^Invalid params: arguments: unknown field "__proto__"$/,
  },
  {
    request: { jsonrpc: '2.0', id: 15, method: 'tools/list', params: { cursor: 12 } },
    message: /^Invalid params: params\.cursor: /,
  },
  {
    // This server declares no tasks capability (the SDK answered -32603, an internal error).
    request: {
      jsonrpc: '2.0',
      id: 16,
      method: 'tools/call',
      params: { name: 'get_report', arguments: {}, task: { ttl: 60000 } },
    },
    code: -32601,
    message: /^Method not found: tools\/call with a task: this server runs every tool call at once/,
  },
];

/** Each fault, sent by send, is answered with its code and message on one line. */
async function expectFaults(send: (request: Record<string, unknown>) => Promise<unknown>): Promise<void> {
  for (const { request, message, code = -32602 } of faults) {
    const answer = (await send(request)) as { error?: { message?: unknown } };
    expect(answer).toMatchObject({ jsonrpc: '2.0', id: request.id, error: { code } });
    const text = String(answer.error?.message);
    expect(text).toMatch(message);
    expect(text).not.toContain('\n');
  }
}

/** `baton mcp` as a child, spoken to line by line: each line written, then the next answer read. */
async function rawStdio(dir: string, { initialize = true } = {}) {
  const child = spawn(process.execPath, [entry, join(dir, 'baton.db')], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const answers: Record<string, unknown>[] = [];
  const waiting: (() => void)[] = [];
  let buffered = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    for (let end = buffered.indexOf('\n'); end !== -1; end = buffered.indexOf('\n')) {
      answers.push(JSON.parse(buffered.slice(0, end)) as Record<string, unknown>);
      buffered = buffered.slice(end + 1);
      waiting.shift()?.();
    }
  });
  const next = async (): Promise<Record<string, unknown>> => {
    if (answers.length === 0) await new Promise<void>((resolve) => waiting.push(resolve));
    return answers.shift()!;
  };
  const line = (bytes: string | Buffer) =>
    child.stdin.write(Buffer.concat([Buffer.from(bytes), Buffer.from('\n')]));
  const send = async (message: unknown) => {
    line(JSON.stringify(message));
    return next();
  };
  const initialized = async () => {
    const answer = await send(rawInitialize);
    line(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    return answer;
  };
  if (initialize) await initialized();
  return {
    initialized,
    child,
    stderr: () => stderr,
    line,
    next,
    send,
    /** get_report answers with a result: the server still serves after what came before. */
    async expectServing(id: number) {
      const report = await send({
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name: 'get_report', arguments: {} },
      });
      expect(report).toMatchObject({ id, result: { structuredContent: { result: {} } } });
      expect(report.result).not.toHaveProperty('isError', true);
    },
    async close() {
      child.stdin.end();
      await once(child, 'close');
    },
  };
}

describe('MCP protocol faults over stdio', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'baton-mcp-raw-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('answers params that do not fit as -32602, with one readable line, and keeps serving', async () => {
    const raw = await rawStdio(dir);
    try {
      await expectFaults(raw.send);
      await raw.expectServing(20);
    } finally {
      await raw.close();
    }
  });

  it('serves nothing but ping before initialize', async () => {
    const raw = await rawStdio(dir, { initialize: false });
    try {
      const early = await raw.send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
      expect(early).toEqual({
        jsonrpc: '2.0',
        id: 1,
        error: { code: -32000, message: 'Bad Request: not initialized; send an initialize request first' },
      });
      const call = {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'get_report', arguments: {} },
      };
      expect(await raw.send(call)).toMatchObject({ id: 2, error: { code: -32000 } });
      expect(await raw.send({ jsonrpc: '2.0', id: 3, method: 'ping' })).toEqual({
        jsonrpc: '2.0',
        id: 3,
        result: {},
      });
      expect(await raw.initialized()).toMatchObject({ id: 0, result: { serverInfo: {} } });
      await raw.expectServing(4);
    } finally {
      await raw.close();
    }
  });

  it('exits when its stdout is closed, though stdin stays open', async () => {
    const raw = await rawStdio(dir);
    raw.child.stdout.destroy();
    const exited = once(raw.child, 'close');
    raw.line(JSON.stringify({ jsonrpc: '2.0', id: 30, method: 'tools/list' }));
    raw.line(JSON.stringify({ jsonrpc: '2.0', id: 31, method: 'tools/list' }));
    await exited;
    expect(raw.child.stdin.writableEnded).toBe(false);
    expect(raw.stderr()).toBe('');
  });

  it('answers a line that is not JSON-RPC (or not UTF-8) instead of leaving the client waiting, and writes nothing', async () => {
    const raw = await rawStdio(dir);
    const contract = (objective: Buffer) =>
      Buffer.concat([
        Buffer.from(
          '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"handoff_current_work","arguments":{"scope_id":"s","source_id":"b1","disposition":"continue","next_action":{"text":"t","basis":"declared"},"objective":"',
        ),
        objective,
        Buffer.from('"}}}'),
      ]);
    try {
      const cases: [string | Buffer, Record<string, unknown>][] = [
        [
          'this is not json',
          { id: null, error: { code: -32700, message: 'Parse error: the line is not JSON' } },
        ],
        ['{"jsonrpc":"2.0","id":4,"method":"tools/list"', { id: null, error: { code: -32700 } }],
        ['{"id":5,"method":"tools/list"}', { id: 5, error: { code: -32600 } }],
        ['[]', { id: null, error: { code: -32600 } }],
        [
          Buffer.from([0xff, 0xfe, 0x41]),
          { id: null, error: { code: -32700, message: 'Parse error: the line is not valid UTF-8' } },
        ],
        [
          contract(Buffer.from([0x62, 0x61, 0x64, 0x20, 0xed, 0xa0, 0x80])),
          { id: null, error: { code: -32700 } },
        ],
      ];
      for (const [line, expected] of cases) {
        raw.line(line);
        expect(await raw.next()).toMatchObject({ jsonrpc: '2.0', ...expected });
      }
      raw.line('   ');
      await raw.expectServing(21);
      // The same source_id again succeeds: the refused line with bad UTF-8 wrote nothing.
      const written = contract(Buffer.from('fine'));
      raw.line(written);
      expect(await raw.next()).toMatchObject({
        id: 9,
        result: { structuredContent: { trust: 'untrusted_input' } },
      });
    } finally {
      await raw.close();
    }
  });
});

describe('MCP tool errors in process', () => {
  let harness: Awaited<ReturnType<typeof tempSqliteStore>>;
  beforeEach(async () => {
    harness = await tempSqliteStore();
    await harness.store.createProject('acme');
  });
  afterEach(() => harness.dispose());

  it('turns an unexpected failure into an internal tool error and keeps serving', async () => {
    const seen: string[] = [];
    const store = withOverrides(harness.store, {
      revisionHead: () => Promise.reject(new Error('disk on fire at /secret/path')),
    });
    const server = createMcpServer({
      deps: { store, clock: systemClock },
      principal: { project_id: 'acme', token_id: 'local', read_only: false },
      onError: (_error, tool) => seen.push(tool),
    });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = newClient();
    await client.connect(clientSide);
    const error = await fail(client, 'prepare_context', { scope_id: 'x' });
    expect(error.code).toBe('internal');
    expect(error.text).not.toContain('/secret/path');
    expect(seen).toEqual(['prepare_context']);
    expect(await ok(client, 'get_report', {})).toMatchObject({ trust: 'untrusted_history' });
    await client.close();
  });
});

describe('MCP over Streamable HTTP', () => {
  let harness: Awaited<ReturnType<typeof tempSqliteStore>>;
  let deps: AppDeps;
  let app: FastifyInstance;
  let url: URL;
  let writer: string;
  let reader: string;
  let stranger: string;
  const clients: Client[] = [];

  function bearer(request: FastifyRequest): string | undefined {
    const header = request.headers.authorization;
    return header?.startsWith('Bearer ') ? header.slice('Bearer '.length) : undefined;
  }

  async function connect(
    token: string,
  ): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
    const transport = new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
    const client = newClient();
    await client.connect(transport);
    clients.push(client);
    return { client, transport };
  }

  /** A raw JSON-RPC POST to /mcp, as any HTTP client could send it. */
  function post(
    headers: Record<string, string>,
    body: unknown = { jsonrpc: '2.0', id: 1, method: 'tools/list' },
  ) {
    return fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': LATEST_PROTOCOL_VERSION,
        ...headers,
      },
      body: JSON.stringify(body),
    });
  }

  beforeEach(async () => {
    harness = await tempSqliteStore();
    deps = { store: harness.store, clock: systemClock };
    await deps.store.createProject('acme');
    await deps.store.createProject('other');
    writer = (await createToken(deps, { project_id: 'acme' })).token;
    reader = (await createToken(deps, { project_id: 'acme', read_only: true })).token;
    stranger = (await createToken(deps, { project_id: 'other' })).token;
    app = Fastify();
    // Bodies are read as baton serve reads them (a "__proto__" key stays an own key).
    installJsonParser(app);
    registerMcpRoutes(app, { deps, authenticate: (request) => authenticateToken(deps, bearer(request)) });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    if (address === null || typeof address === 'string') throw new Error('no TCP address');
    url = new URL(`http://127.0.0.1:${address.port}/mcp`);
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
    await app.close();
    await harness.dispose();
  });

  it('lists the tools and runs a whole continuity loop', async () => {
    const { client } = await connect(writer);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([...toolNames, ...workToolNames].sort());
    await runContinuityLoop(client, 'http-loop');
  });

  it('reports bad input as a tool error', async () => {
    const { client } = await connect(writer);
    const error = await fail(client, 'continue_handoff', { scope_id: 'http', selection: { exact: 0 } });
    expect(error.code).toBe('invalid_input');
    expect(error.text).toContain('selection');
    const none = await fail(client, 'continue_handoff', { scope_id: 'http', selection: 'latest' });
    expect(none.code).toBe('not_found');
  });

  it('serves a session only to the token that opened it', async () => {
    const { client, transport } = await connect(writer);
    await ok(client, 'get_report', {});
    const sessionId = transport.sessionId!;
    expect(sessionId).toMatch(/^[0-9a-f-]{36}$/);

    for (const token of [stranger, reader]) {
      const response = await post({ authorization: `Bearer ${token}`, 'mcp-session-id': sessionId });
      expect(response.status).toBe(404);
      expect(await response.json()).toEqual({
        jsonrpc: '2.0',
        error: { code: -32001, message: 'Session not found' },
        id: null,
      });
    }
    const anonymous = await post({ 'mcp-session-id': sessionId });
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ error: { code: 'unauthorized' } });

    // The other project's own session sees nothing of acme.
    const other = await connect(stranger);
    expect(await ok(other.client, 'get_report', {})).toMatchObject({
      result: { project_id: 'other', workstreams: [] },
    });
  });

  it('answers 401 with a JSON body without a valid token, and opens no session', async () => {
    const initialize = rawInitialize;
    for (const headers of [{}, { authorization: 'Bearer baton_nonsense' }] as Record<string, string>[]) {
      const response = await post(headers, initialize);
      expect(response.status).toBe(401);
      expect(response.headers.get('mcp-session-id')).toBeNull();
      expect(await response.json()).toMatchObject({
        error: { code: 'unauthorized', message: expect.any(String) as string },
      });
    }
    await expect(connect('baton_nonsense')).rejects.toThrow();
  });

  it('lets a read-only token read but not write', async () => {
    const { client } = await connect(reader);
    const error = await fail(client, 'create_work_contract', {
      scope_id: 'http',
      source_id: 'contract-1',
      objective: 'Nope',
      completion_criteria: ['never'],
    });
    expect(error).toMatchObject({ code: 'forbidden', details: { token_id: expect.any(String) as string } });
    expect(await ok(client, 'prepare_context', {})).toMatchObject({ result: { experience: [] } });
  });

  it('refuses a request without a session that is not an initialize', async () => {
    const response = await post({ authorization: `Bearer ${writer}` });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
  });

  it('answers protocol faults in a session as -32602, with one readable line', async () => {
    const { transport } = await connect(writer);
    const headers = { authorization: `Bearer ${writer}`, 'mcp-session-id': transport.sessionId! };
    await expectFaults(async (request) => {
      const response = await post(headers, request);
      const body = await response.text();
      expect({ id: request.id, status: response.status }).toEqual({ id: request.id, status: 200 });
      return JSON.parse(/^data: (.*)$/m.exec(body)?.[1] ?? body) as unknown;
    });
  });

  it('answers JSON that is not JSON-RPC, or an empty batch, with 400 -32600', async () => {
    const { client, transport } = await connect(writer);
    const headers = { authorization: `Bearer ${writer}`, 'mcp-session-id': transport.sessionId! };
    const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
    const cases: [unknown, unknown][] = [
      [[], null],
      [{ foo: 1 }, null],
      [{ id: 7, method: 'tools/list' }, 7],
      [[list, 5], null],
      ['tools/list', null],
    ];
    for (const [body, id] of cases) {
      const response = await post(headers, body);
      expect({ body, status: response.status }).toEqual({ body, status: 400 });
      expect(await response.json()).toMatchObject({
        jsonrpc: '2.0',
        id,
        error: { code: -32600, message: expect.stringMatching(/^Invalid Request: /) as unknown },
      });
    }
    await ok(client, 'get_report', {});
  });

  it('answers a body it cannot read in the JSON-RPC error shape', async () => {
    for (const body of ['this is not json', '', '{"jsonrpc":']) {
      const response = await fetch(url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${writer}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body,
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32700, message: expect.stringMatching(/^Parse error: the body /) as unknown },
      });
    }
  });

  it('ends a session on a DELETE that says content-type JSON but has no body', async () => {
    const { transport } = await connect(writer);
    const sessionId = transport.sessionId!;
    const deleted = await fetch(url, {
      method: 'DELETE',
      headers: {
        authorization: `Bearer ${writer}`,
        'content-type': 'application/json',
        'mcp-session-id': sessionId,
        'mcp-protocol-version': LATEST_PROTOCOL_VERSION,
      },
    });
    expect(deleted.status).toBe(200);
    const response = await post({ authorization: `Bearer ${writer}`, 'mcp-session-id': sessionId });
    expect(response.status).toBe(404);
  });

  it('ends a session on DELETE', async () => {
    const { transport } = await connect(writer);
    const sessionId = transport.sessionId!;
    await transport.terminateSession();
    const response = await post({ authorization: `Bearer ${writer}`, 'mcp-session-id': sessionId });
    expect(response.status).toBe(404);
  });

  it('refuses an Origin other than the Host it was sent to with 403', async () => {
    const { transport } = await connect(writer);
    const session = { authorization: `Bearer ${writer}`, 'mcp-session-id': transport.sessionId! };
    const localhost = `http://localhost:${url.port}`;
    for (const origin of ['http://evil.example', 'null', localhost, `ftp://127.0.0.1:${url.port}`]) {
      const response = await post({ ...session, origin });
      expect(response.status).toBe(403);
      // The envelope of every other refusal before the protocol (401, 403 for the token).
      expect(await response.json()).toEqual({
        error: {
          code: 'forbidden',
          message: expect.stringContaining('DNS-rebinding') as string,
          details: {},
        },
      });
    }
    const same = await post({ ...session, origin: url.origin });
    expect(same.status).toBe(200);
    await same.body?.cancel();
  });

  it('closes open sessions when the app closes', async () => {
    const { client } = await connect(writer);
    await ok(client, 'get_report', {});
    const started = Date.now();
    await app.close();
    expect(Date.now() - started).toBeLessThan(2000);
  });
});
