/**
 * The HTTP benchmark: requests per second and p99 latency of capture_source and
 * acknowledge_handoff through the Baton server as `baton serve` runs it (SQLite, synchronous
 * FULL, writes on the writer thread), and of a bare Fastify hello-world route, with 16 concurrent
 * clients (autocannon) in the same run. Each server runs in a worker thread, so the load
 * generator does not share its event loop. Exits 1 when a Baton route falls under a quarter of
 * hello-world; NORMAL and inline writes are measured for comparison.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import { createToken } from '../src/app/auth.ts';
import { acknowledgeHandoff, handoffCurrentWork } from '../src/app/continuity.ts';
import type { AppDeps } from '../src/app/deps.ts';
import { commitHandoff } from '../src/app/handoffs.ts';
import { captureSource } from '../src/app/sources.ts';
import { systemClock } from '../src/core/clock.ts';
import { startServer } from '../src/http/server.ts';
import type { SourceReceipt } from '../src/core/ledger/source.ts';
import { openSqliteStore, type SqliteSynchronous } from '../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../src/store/store.ts';
import { openThreadedSqliteStore } from '../src/store/sqlite/threaded-store.ts';

const target = 0.25;
const project_id = 'bench';
const scope_id = 'bench-scope';

const usage = `Usage: npm run bench:http -- [--duration S] [--connections N]

  --duration S      seconds each measured run lasts (default 10), after a 2 s warm-up
  --connections N   concurrent clients (default 16)
  --help            show this help

Starts each server in a worker thread on 127.0.0.1 and drives it with autocannon from the
main thread: a bare Fastify route answering {"hello":"world"}, then Baton's
POST /v1/work/sources/capture (a new source_id each request) and
POST /v1/work/handoffs/acknowledge (accepting revision 1, whose handoff cites one source,
under a new source_id each request), with a bearer token, on a fresh SQLite database under
${tmpdir()} at synchronous FULL with the writes on a writer thread (as baton serve runs it),
then for comparison at NORMAL, and at FULL with the writes on the server's own event loop
(inline, as before the writer thread). After each writer-thread route, the same app operation
is called directly in a loop (no HTTP, inline) for up to 5 s, to show the ceiling the store
itself sets for one caller. Last, capture_source runs once more with the store's
write replaced by a constant receipt, to show what the HTTP layer alone costs.
Hello-world is measured before every Baton run and after the last, and the mean of those runs
is the baseline (on a shared machine one run can differ from the next by half). Prints requests/s,
p99 latency and the server's busy event-loop time per request (its own cost, at FULL with the
wait for the flush inside COMMIT, which does not depend on how fast the load generator keeps
up) of each, its ratio to hello-world in requests/s
and in busy time per request (hello-world's over the route's); exits 1 when a route at FULL is under
${target} of hello-world with the writer thread, or any request fails. Progress goes to stderr; databases are removed.`;

type Writer = 'thread' | 'inline';

type ServerSpec =
  | { readonly kind: 'hello' }
  | {
      readonly kind: 'baton';
      readonly path: string;
      readonly synchronous: SqliteSynchronous;
      /** Where the store's writes run: a writer thread, as `baton serve` runs it, or inline. */
      readonly writer: Writer;
      /** Replace the store's captureSource by a constant receipt: the HTTP layer's own cost. */
      readonly constantReceipts?: boolean;
    };

interface Started {
  readonly url: string;
  readonly token: string;
}

interface Measured {
  readonly name: string;
  readonly rps: number;
  readonly p99: number;
  /** The server's busy event-loop time per request, in microseconds. */
  readonly busy_us: number;
  readonly failures: number;
}

// ---------------------------------------------------------------------------------------------
// The worker side: one server, until told to stop.

async function seed(deps: AppDeps): Promise<void> {
  await deps.store.createProject(project_id);
  const log = await captureSource(deps, {
    project_id,
    scope_id,
    source_id: 'ci-log',
    content: 'FAIL switching test',
  });
  const prepared = await handoffCurrentWork(deps, {
    project_id,
    scope_id,
    source_id: 'boundary-1',
    objective: 'Benchmark the acknowledgement path',
    current_state: [{ text: 'The switching test fails', basis: 'verified', evidence: [log.source_ref] }],
    disposition: 'continue',
    next_action: { text: 'Fix it', basis: 'declared' },
  });
  await commitHandoff(deps, { project_id, scope_id, prepared: prepared.digest, expected_head: 0 });
}

/** The store with captureSource answering one fixed receipt without writing. */
function withConstantReceipts(store: Store): Store {
  const receipt: SourceReceipt = {
    source_ref: { scope_id, source_id: 'constant-receipt', digest: `sha256:${'0'.repeat(64)}` },
    position: 1,
    digest: `sha256:${'0'.repeat(64)}`,
  };
  return new Proxy(store, {
    get(target, property) {
      if (property === 'captureSource') return async () => receipt;
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
    },
  });
}

async function serve(spec: ServerSpec): Promise<{ started: Started; stop(): Promise<void> }> {
  if (spec.kind === 'hello') {
    const app = Fastify({ logger: false });
    app.get('/', async () => ({ hello: 'world' }));
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    return { started: { url, token: '' }, stop: () => app.close() };
  }
  const options = { path: spec.path, synchronous: spec.synchronous };
  const store =
    spec.writer === 'thread' ? await openThreadedSqliteStore(options) : await openSqliteStore(options);
  const deps: AppDeps = { store, clock: systemClock };
  await seed(deps);
  const { token } = await createToken(deps, { project_id, label: 'bench' });
  const served = spec.constantReceipts ? { ...deps, store: withConstantReceipts(store) } : deps;
  const server = await startServer({ deps: served, port: 0, logger: false });
  return {
    started: { url: server.url, token },
    async stop() {
      await server.close();
      await store.close();
    },
  };
}

/** What the main thread asks a server worker: mark the start of a run, its busy time since, stop. */
type Control = 'mark' | 'busy' | 'stop';

if (!isMainThread) {
  const running = await serve(workerData as ServerSpec);
  let mark = performance.eventLoopUtilization();
  parentPort!.on('message', (message: Control) => {
    if (message === 'mark') {
      mark = performance.eventLoopUtilization();
      parentPort!.postMessage({ marked: true });
    } else if (message === 'busy') {
      // The time the server's event loop was not idle since the mark (computing, or blocked in
      // a flush inside COMMIT): its own cost, whatever pace the load generator keeps.
      parentPort!.postMessage({ busy_ms: performance.eventLoopUtilization(mark).active });
    } else {
      void running.stop().then(() => parentPort!.close());
    }
  });
  parentPort!.postMessage(running.started);
}

// ---------------------------------------------------------------------------------------------
// The main side: start a server, load it, stop it.

interface Running {
  readonly started: Started;
  /** Send a control message and wait for the worker's answer. */
  readonly ask: (message: 'mark' | 'busy') => Promise<{ busy_ms?: number }>;
}

async function withServer<T>(spec: ServerSpec, use: (running: Running) => Promise<T>): Promise<T> {
  const worker = new Worker(fileURLToPath(import.meta.url), { workerData: spec });
  const exited = new Promise<void>((resolve, reject) => {
    worker.once('error', reject);
    worker.once('exit', () => resolve());
  });
  const started = await Promise.race([
    new Promise<Started>((resolve) => worker.once('message', resolve)),
    exited.then(() => {
      throw new Error('the server worker exited before it started');
    }),
  ]);
  const ask = (message: 'mark' | 'busy') =>
    new Promise<{ busy_ms?: number }>((resolve) => {
      worker.once('message', resolve);
      worker.postMessage(message satisfies Control);
    });
  try {
    return await use({ started, ask });
  } finally {
    worker.postMessage('stop' satisfies Control);
    await exited;
  }
}

type Load = Pick<autocannon.Options, 'method' | 'headers' | 'requests'> & { readonly path: string };

function loadFor(route: 'hello' | 'capture' | 'acknowledge', started: Started, run: string): Load {
  if (route === 'hello') return { path: '/', method: 'GET' };
  const headers = { authorization: `Bearer ${started.token}`, 'content-type': 'application/json' };
  let n = 0;
  const body =
    route === 'capture'
      ? () => ({
          scope_id,
          source_id: `${run}-${n++}`,
          kind: 'bench-note',
          content: { text: 'A note captured through the HTTP API', n },
        })
      : () => ({
          scope_id,
          source_id: `${run}-${n++}`,
          target: { exact: 1 },
          status: 'accepted',
          receiver_checks: {
            live_workspace: 'confirmed',
            capability: 'confirmed',
            authorization: 'confirmed',
          },
          receiver: 'bench',
        });
  const path = route === 'capture' ? '/v1/work/sources/capture' : '/v1/work/handoffs/acknowledge';
  return {
    path,
    method: 'POST',
    headers,
    requests: [
      {
        method: 'POST',
        path,
        headers,
        setupRequest: (request) => ({ ...request, body: JSON.stringify(body()) }),
      },
    ],
  };
}

async function drive(
  url: string,
  load: Load,
  seconds: number,
  connections: number,
): Promise<autocannon.Result> {
  const { path, ...rest } = load;
  return autocannon({ url: `${url}${path}`, connections, duration: seconds, ...rest });
}

async function measure(
  name: string,
  spec: ServerSpec,
  route: 'hello' | 'capture' | 'acknowledge',
  options: { duration: number; connections: number },
): Promise<Measured> {
  return withServer(spec, async ({ started, ask }) => {
    process.stderr.write(`${name}: warming up\n`);
    await drive(started.url, loadFor(route, started, 'warm'), 2, options.connections);
    process.stderr.write(`${name}: measuring for ${options.duration} s\n`);
    await ask('mark');
    const result = await drive(
      started.url,
      loadFor(route, started, 'run'),
      options.duration,
      options.connections,
    );
    const { busy_ms = 0 } = await ask('busy');
    return {
      name,
      rps: result.requests.average,
      p99: result.latency.p99,
      busy_us: (busy_ms * 1000) / Math.max(1, result.requests.total),
      failures: result.non2xx + result.errors + result.timeouts,
    };
  });
}

/**
 * The same operation called directly, one after another, for as long as a run: the ceiling the
 * store sets before HTTP, auth and validation add anything (SQLite writes one at a time anyway).
 */
async function measureDirect(
  route: 'capture' | 'acknowledge',
  path: string,
  synchronous: SqliteSynchronous,
  seconds: number,
): Promise<number> {
  const store = await openSqliteStore({ path, synchronous });
  const deps: AppDeps = { store, clock: systemClock };
  try {
    await seed(deps);
    let n = 0;
    const call = () =>
      route === 'capture'
        ? captureSource(deps, {
            project_id,
            scope_id,
            source_id: `direct-${n}`,
            kind: 'bench-note',
            content: { text: 'A note captured through the HTTP API', n },
          })
        : acknowledgeHandoff(deps, {
            project_id,
            scope_id,
            source_id: `direct-${n}`,
            target: { exact: 1 },
            status: 'accepted',
            receiver_checks: {
              live_workspace: 'confirmed',
              capability: 'confirmed',
              authorization: 'confirmed',
            },
            receiver: 'bench',
          });
    const end = performance.now() + seconds * 1000;
    const start = performance.now();
    while (performance.now() < end) {
      await call();
      n += 1;
    }
    return n / ((performance.now() - start) / 1000);
  } finally {
    await store.close();
  }
}

function line(result: Measured, hello?: number): string {
  const ratio = hello === undefined ? '' : `  ratio ${(result.rps / hello).toFixed(2)}`;
  const failed = result.failures > 0 ? `  FAILED REQUESTS ${result.failures}` : '';
  const busy = `${result.busy_us.toFixed(0).padStart(4)} µs busy/req`;
  return `${result.name.padEnd(34)} ${Math.round(result.rps).toLocaleString('en-US').padStart(8)} req/s  p99 ${String(result.p99).padStart(4)} ms  ${busy}${ratio}${failed}`;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '10' },
      connections: { type: 'string', default: '16' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    console.log(usage);
    return 0;
  }
  const duration = Number(values.duration);
  const connections = Number(values.connections);
  if (
    !Number.isSafeInteger(duration) ||
    duration < 1 ||
    !Number.isSafeInteger(connections) ||
    connections < 1
  ) {
    console.error(`--duration and --connections take positive whole numbers\n\n${usage}`);
    return 2;
  }
  const options = { duration, connections };
  const dir = mkdtempSync(join(tmpdir(), 'baton-bench-http-'));
  console.log(`Baton HTTP benchmark: ${connections} concurrent clients, ${duration} s per run`);
  console.log(
    `node ${process.version}, ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), databases in ${tmpdir()}`,
  );
  console.log(
    `load average at start: ${loadavg()
      .map((value) => value.toFixed(2))
      .join(' ')}\n`,
  );
  let passed = true;
  try {
    const hello = { kind: 'hello' } as const;
    // Hello-world runs before every Baton run and once after the last: on a shared machine its
    // rate moves by half from one run to the next, and the baseline is the mean of them all.
    const hellos: Measured[] = [];
    const helloRun = async () => {
      const result = await measure(`hello-world (run ${hellos.length + 1})`, hello, 'hello', options);
      hellos.push(result);
      console.log(line(result));
    };
    const results: { gated: boolean; result: Measured }[] = [];
    const ceilings: string[] = [];
    // The gate is what `baton serve` runs: FULL with the writer thread. The others show what
    // NORMAL and writing on the event loop itself (the CLI's and the library's default) cost.
    const configurations = [
      { synchronous: 'full', writer: 'thread', gated: true },
      { synchronous: 'normal', writer: 'thread', gated: false },
      { synchronous: 'full', writer: 'inline', gated: false },
    ] as const;
    for (const { synchronous, writer, gated } of configurations) {
      for (const route of ['capture', 'acknowledge'] as const) {
        const file = `${synchronous}-${writer}-${route}`;
        const spec = { kind: 'baton', path: join(dir, `${file}.db`), synchronous, writer } as const;
        const name = `${route === 'capture' ? 'capture_source' : 'acknowledge_handoff'} (${synchronous.toUpperCase()}${writer === 'inline' ? ', inline' : ''})`;
        await helloRun();
        results.push({ gated, result: await measure(name, spec, route, options) });
        if (writer === 'inline') continue;
        process.stderr.write(`${name}: the same operation without HTTP, for ${Math.min(duration, 5)} s\n`);
        const direct = await measureDirect(
          route,
          join(dir, `${file}-direct.db`),
          synchronous,
          Math.min(duration, 5),
        );
        ceilings.push(
          `${`${name} without HTTP`.padEnd(44)} ${Math.round(direct).toLocaleString('en-US').padStart(8)} calls/s (one caller, no HTTP, inline)`,
        );
      }
    }
    await helloRun();
    const constant = await measure(
      'capture_source, no store write',
      {
        kind: 'baton',
        path: join(dir, 'constant.db'),
        synchronous: 'normal',
        writer: 'thread',
        constantReceipts: true,
      },
      'capture',
      options,
    );
    await helloRun();
    const rates = hellos.map((result) => result.rps);
    const baseline = rates.reduce((sum, rps) => sum + rps, 0) / rates.length;
    const helloBusy = hellos.reduce((sum, result) => sum + result.busy_us, 0) / hellos.length;
    const spread = `${Math.round(Math.min(...rates)).toLocaleString('en-US')} to ${Math.round(Math.max(...rates)).toLocaleString('en-US')}`;
    console.log(
      `${`hello-world baseline (mean of ${rates.length})`.padEnd(34)} ${Math.round(baseline).toLocaleString('en-US').padStart(8)} req/s  (runs from ${spread})`,
    );
    console.log(
      `${'hello-world busy time (mean)'.padEnd(34)} ${helloBusy.toFixed(1).padStart(8)} µs per request\n`,
    );
    if (hellos.some((result) => result.failures > 0)) passed = false;
    const cost = (result: Measured) => `  cost ratio ${(helloBusy / result.busy_us).toFixed(2)}`;
    for (const { gated, result } of results) {
      const ok = result.failures === 0 && result.rps / baseline >= target;
      const verdict = gated ? (ok ? '  PASS' : '  FAIL') : '  (for comparison)';
      if (gated && !ok) passed = false;
      if (result.failures > 0) passed = false;
      console.log(`${line(result, baseline)}${cost(result)}${verdict}`);
    }
    console.log(
      `${line(constant, baseline)}${cost(constant)}  (the HTTP layer alone: auth, validation, routing)`,
    );
    console.log(`\nThe store's own ceiling, for context:\n${ceilings.join('\n')}`);
    console.log(
      `\ntarget: each route at FULL with the writer thread >= ${target} of hello-world: ${passed ? 'PASS' : 'FAIL'}`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return passed ? 0 : 1;
}

if (isMainThread) {
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
}
