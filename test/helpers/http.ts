/**
 * A Baton HTTP server on a real socket for tests: a fresh store of one backend, project `acme`
 * with a writing and a read-only token, project `rival` with its own token, and a small JSON
 * client. `rawRequest` goes through node:http, because fetch will not send a custom Host header.
 */
/* eslint-disable @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-return -- reply bodies are parsed JSON, read only in assertions */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Writable } from 'node:stream';
import { createToken } from '../../src/app/auth.ts';
import type { AppDeps } from '../../src/app/deps.ts';
import { systemClock } from '../../src/core/clock.ts';
import type { SourceRef } from '../../src/core/ledger/source.ts';
import type { WorkConfig } from '../../src/core/work/config.ts';
import { startServer, type ServeOptions } from '../../src/http/server.ts';
import type { Store } from '../../src/store/store.ts';
import type { Backend, OpenedStore } from './stores.ts';

export interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** The parsed JSON body, or undefined when the body is not JSON. */
  readonly body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export interface CallOptions {
  /** A bearer token; null sends no Authorization header. */
  readonly token?: string | null;
  /** Sent as JSON unless it is a string, which is sent as is. */
  readonly body?: unknown;
  readonly query?: Readonly<Record<string, string>>;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface Tokens {
  readonly writer: string;
  readonly reader: string;
  readonly rival: string;
}

export interface HttpHarness {
  readonly url: string;
  readonly port: number;
  readonly deps: AppDeps;
  readonly tokens: Tokens;
  /** A call as `tokens.writer` unless options.token says otherwise. */
  readonly call: (method: string, path: string, options?: CallOptions) => Promise<Reply>;
  dispose(): Promise<void>;
}

export const project_id = 'acme';
export const rival_project_id = 'rival';

export async function parseReply(response: Response): Promise<Reply> {
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: response.headers, text, body };
}

export async function callServer(
  url: string,
  defaultToken: string | null,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<Reply> {
  const token = options.token === undefined ? defaultToken : options.token;
  const headers: Record<string, string> = { ...options.headers };
  if (token !== null) headers.authorization ??= `Bearer ${token}`;
  let body: string | undefined;
  if (options.body !== undefined) {
    body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const query = options.query ? `?${new URLSearchParams(options.query).toString()}` : '';
  return parseReply(await fetch(`${url}${path}${query}`, { method, headers, body }));
}

export async function seedTokens(store: Store): Promise<{ deps: AppDeps; tokens: Tokens }> {
  const deps: AppDeps = { store, clock: systemClock };
  await store.createProject(project_id);
  await store.createProject(rival_project_id);
  const tokens = {
    writer: (await createToken(deps, { project_id, label: 'writer' })).token,
    reader: (await createToken(deps, { project_id, read_only: true, label: 'reader' })).token,
    rival: (await createToken(deps, { project_id: rival_project_id, label: 'rival' })).token,
  };
  return { deps, tokens };
}

/**
 * A server on a free port over a fresh store of the backend, with the `[work]` configuration
 * given (the defaults without one); dispose closes both.
 */
export async function startHarness(
  backend: Backend,
  { work, ...options }: Partial<Omit<ServeOptions, 'deps'>> & { readonly work?: WorkConfig } = {},
): Promise<HttpHarness> {
  const opened: OpenedStore = await backend.open();
  const seeded = await seedTokens(opened.store);
  const { tokens } = seeded;
  const deps: AppDeps = work === undefined ? seeded.deps : { ...seeded.deps, work };
  const server = await startServer({ logger: false, ...options, deps, port: 0 });
  const port = Number(new URL(server.url).port);
  return {
    url: server.url,
    port,
    deps,
    tokens,
    call: (method, path, callOptions) => callServer(server.url, tokens.writer, method, path, callOptions),
    async dispose() {
      await server.close();
      await opened.dispose();
    },
  };
}

/** One request through node:http with exactly the headers given (Host included). */
export function rawRequest(options: {
  port: number;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}): Promise<{ status: number; headers: IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: '127.0.0.1',
        port: options.port,
        method: options.method,
        path: options.path,
        headers: options.headers,
        setHost: false,
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, headers: response.headers, text }),
        );
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(options.body);
  });
}

export const scope_id = 'relay';
export const confirmed = {
  live_workspace: 'confirmed',
  capability: 'confirmed',
  authorization: 'confirmed',
} as const;

export type SourceRefBody = SourceRef;

/** Inputs of the continuity operations in scope `relay`, citing `evidence` where a claim is verified. */
export const inputs = {
  capture: (source_id: string, content: unknown = `CI log of ${source_id}: FAIL switching test`) => ({
    scope_id,
    source_id,
    kind: 'test-log',
    content,
  }),
  contract: (source_id: string, evidence: SourceRefBody) => ({
    scope_id,
    source_id,
    objective: 'Add safe auto-refresh to the Handoff Report (acme-private)',
    facts: [{ text: 'The test command is npm test', basis: 'verified', evidence: [evidence] }],
    in_scope: ['frontend polling'],
    completion_criteria: ['relevant tests pass'],
    authorization_notes: ['changes in this repository only'],
  }),
  boundary: (source_id: string, evidence: SourceRefBody) => ({
    scope_id,
    source_id,
    objective: 'Add safe auto-refresh to the Handoff Report (acme-private)',
    current_state: [
      { text: 'Polling is implemented', basis: 'declared' },
      { text: 'The switching test still fails', basis: 'verified', evidence: [evidence] },
    ],
    disposition: 'continue',
    next_action: { text: 'Fix the frozen selection comparison', basis: 'declared' },
    attribution: { agent: 'agent-a' },
  }),
  accept: (source_id: string, revision: number) => ({
    scope_id,
    source_id,
    target: { exact: revision },
    status: 'accepted',
    receiver_checks: confirmed,
    receiver: 'agent-b',
  }),
  outcome: (source_id: string, receipt: SourceRefBody, evidence: SourceRefBody) => ({
    scope_id,
    source_id,
    objective: 'Add safe auto-refresh',
    status: 'partial',
    summary: 'Auto-refresh works; the docs build has no result yet',
    handoff_receipt_ref: receipt,
    checks: [
      { name: 'focused tests', status: 'passed', basis: 'verified', evidence: [evidence] },
      { name: 'remote CI', status: 'unavailable', basis: 'declared' },
    ],
    remaining_work: ['Run the docs build again'],
  }),
};

/** What seedWorkstream stored, for later calls to cite. */
export interface Workstream {
  readonly log: SourceRefBody;
  readonly contract: SourceRefBody;
  readonly prepared_digest: string;
  readonly revision: number;
  readonly receipt: SourceRefBody;
  readonly outcome: SourceRefBody;
}

function expectOk(reply: Reply, what: string): Reply {
  if (reply.status !== 200) throw new Error(`${what} answered ${reply.status}: ${reply.text}`);
  return reply;
}

/**
 * One full loop in `relay` over HTTP: capture, contract, prepare, commit revision 1, accept it,
 * record an outcome covering the receipt. Each step must answer 200.
 */
export async function seedWorkstream(
  call: (method: string, path: string, options?: CallOptions) => Promise<Reply>,
): Promise<Workstream> {
  const post = async (path: string, body: unknown) => expectOk(await call('POST', path, { body }), path).body;
  const log = (await post('/v1/work/sources/capture', inputs.capture('ci-log'))).source_ref;
  const contract = (await post('/v1/work/contracts/create', inputs.contract('contract-1', log))).receipt
    .source_ref;
  const prepared = await post('/v1/work/handoffs/prepare-current', inputs.boundary('boundary-1', log));
  const committed = await post('/v1/work/handoffs/commit', {
    scope_id,
    prepared: prepared.digest,
    expected_head: prepared.prepared_handoff.base_revision,
  });
  const receipt = (
    await post('/v1/work/handoffs/acknowledge', inputs.accept('receipt-1', committed.revision))
  ).receipt.source_ref;
  const outcome = (await post('/v1/work/outcomes/record', inputs.outcome('outcome-1', receipt, log))).receipt
    .source_ref;
  return {
    log,
    contract,
    prepared_digest: prepared.digest,
    revision: committed.revision,
    receipt,
    outcome,
  };
}

/** Every stream head and handoff revision head of a project: equal snapshots mean nothing was written. */
export async function snapshotHeads(store: Store, project: string): Promise<Record<string, number>> {
  const heads: Record<string, number> = {};
  for (const info of await store.listStreams(project)) {
    const name = JSON.stringify(info.stream);
    heads[`stream ${name}`] = info.head;
    if (info.stream.kind === 'scope') {
      heads[`revisions ${name}`] = await store.revisionHead({
        project_id: project,
        scope_id: info.stream.scope_id,
      });
    }
  }
  return heads;
}

/**
 * Server options that log every request at trace level, headers included (stricter than
 * Fastify's default, which leaves headers out), into `lines`, one JSON text per entry.
 */
export function traceLogging(lines: string[]): Pick<ServeOptions, 'logger'> {
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  return {
    logger: {
      level: 'trace',
      stream,
      serializers: {
        req: (request: { method: string; url: string; headers: unknown }) => ({
          method: request.method,
          url: request.url,
          headers: request.headers,
        }),
      },
    },
  };
}
