/**
 * The work projection benchmark: writes a session ledger of work events as the JSONL that
 * `baton ledger export` produces, then, in alternating rounds, times a bare JSON.parse loop
 * over its lines (the baseline) and the work projection of the same lines (parse, validate,
 * apply). Exits 1 when projection takes more than 3 times the baseline. A second part streams
 * a 1,000,000-event ledger from disk through the projector and prints the peak RSS: memory
 * must stay bounded by the work state, not grow with the ledger.
 */
import { createReadStream, createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { sha256Digest } from '../src/core/canonical.ts';
import type { JsonObject, JsonValue } from '../src/core/json.ts';
import { entryBody } from '../src/core/ledger/entry.ts';
import { entryLine, headerLine } from '../src/core/ledger/jsonl.ts';
import type { StreamKey } from '../src/core/ledger/names.ts';
import { workContractSchema, type WorkEventInput } from '../src/core/work/model.ts';
import { WorkProjector, type ProjectableEntry } from '../src/core/work/projector.ts';

const target = 3;
const usage = `Usage: npm run bench:project-work -- [--events N] [--large N] [--rounds N]

  --events N   work events in the timed ledger (default 100000)
  --large N    work events in the streamed memory check (default 1000000; 0 skips it)
  --rounds N   timed rounds of each side (default 5)
  --help       show this help

Writes the ledgers under ${tmpdir()}. A contract of 20 items; each round of events moves every
item ready → running → blocked → ready and attaches a piece of evidence now and then, as a
model working through the work tool would. Exits 1 when the projection's mean time is more
than ${target} times the JSON.parse baseline's.`;

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '100000' },
    large: { type: 'string', default: '1000000' },
    rounds: { type: 'string', default: '5' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.log(usage);
  process.exit(0);
}
const eventCount = Number(values.events);
const largeCount = Number(values.large);
const rounds = Number(values.rounds);
for (const [name, value] of [
  ['events', eventCount],
  ['large', largeCount],
  ['rounds', rounds],
] as const) {
  if (!Number.isSafeInteger(value) || value < 0 || (name !== 'large' && value < 1)) {
    console.error(`--${name} is a whole number${name === 'large' ? ' >= 0' : ' >= 1'}`);
    process.exit(2);
  }
}

const stream: StreamKey = { project_id: 'bench', kind: 'session', session_id: 'bench-1' };
const itemIds = Array.from({ length: 20 }, (_, index) => `item-${index + 1}`);
const contract = workContractSchema.parse({
  contract_id: 'work-bench',
  revision: 1,
  objective: 'benchmark the projector',
  criteria: [{ criterion_id: 'done', statement: 'done', kind: { type: 'shell', command: 'true' } }],
  items: itemIds.map((item_id) => ({ item_id, title: `Item ${item_id}`, criterion_ids: ['done'] })),
});

const actor = (type: string) => ({ type, id: type });
function event(kind: JsonObject, who = 'model'): WorkEventInput {
  return {
    schema: 'baton.work-event/v1',
    contract_id: 'work-bench',
    revision: 1,
    kind,
    actor: actor(who),
    operation: null,
  } as WorkEventInput;
}

/** The n-th event of the ledger: a contract start, then items cycling through their states. */
function* events(count: number): Generator<WorkEventInput> {
  const start: WorkEventInput[] = [
    event({ type: 'contract_created', contract: contract as unknown as JsonObject, branch: false }),
    event({ type: 'contract_status_changed', from: 'draft', to: 'active', reason: '' }, 'human'),
    ...itemIds.map((item_id) =>
      event(
        { type: 'item_status_changed', item_id, from: 'proposed', to: 'ready', attempt: 1, reason: '' },
        'runtime',
      ),
    ),
  ];
  let produced = 0;
  for (const item of start) {
    if (produced++ >= count) return;
    yield item;
  }
  const cycle: [string, string][] = [
    ['ready', 'running'],
    ['running', 'blocked'],
    ['blocked', 'ready'],
  ];
  for (let round = 0; ; round += 1) {
    for (const [from, to] of cycle) {
      for (const item_id of itemIds) {
        if (produced++ >= count) return;
        yield event({
          type: 'item_status_changed',
          item_id,
          from,
          to,
          attempt: 1,
          reason: to === 'blocked' ? 'waiting on review' : '',
        });
      }
    }
    if (round % 10 === 0) {
      for (const item_id of itemIds) {
        if (produced++ >= count) return;
        yield event({
          type: 'evidence_attached',
          item_id,
          evidence: { type: 'tool_result', session_id: 'bench-1', tool_use_id: `t-${round}-${item_id}` },
        });
      }
    }
  }
}

async function writeLedger(path: string, count: number): Promise<void> {
  const out = createWriteStream(path);
  const write = async (line: string) => {
    if (!out.write(`${line}\n`)) await once(out, 'drain');
  };
  await write(headerLine(stream, count));
  const metadata: JsonObject = { kind: 'work_event' };
  let position = 0;
  for (const item of events(count)) {
    position += 1;
    const content = item as unknown as JsonValue;
    await write(
      entryLine({
        stream,
        position,
        global_seq: position,
        type: 'work_event',
        source_id: null,
        digest: sha256Digest(entryBody(content, metadata)),
        recorded_at: new Date(Date.UTC(2026, 11, 2) + position).toISOString(),
        content,
        metadata,
        retracted: null,
      }),
    );
  }
  out.end();
  await once(out, 'finish');
}

/** The baseline: what any reader of the JSONL pays. */
function parseOnly(lines: readonly string[]): number {
  let count = 0;
  for (const line of lines) {
    const value = JSON.parse(line) as { position?: number };
    if (value.position !== undefined) count += 1;
  }
  return count;
}

/** The projection from the same lines: parse each, then apply it to the projector. */
function project(lines: readonly string[]): WorkProjector {
  const projector = new WorkProjector();
  for (let index = 1; index < lines.length; index += 1) {
    projector.applyEntry(JSON.parse(lines[index]!) as ProjectableEntry);
  }
  return projector;
}

function mean(samples: readonly number[]): number {
  return samples.reduce((sum, value) => sum + value, 0) / samples.length;
}

const dir = mkdtempSync(join(tmpdir(), 'baton-bench-work-'));
try {
  const path = join(dir, 'work.jsonl');
  await writeLedger(path, eventCount);
  const lines = readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line !== '');
  const bytes = lines.reduce((sum, line) => sum + line.length + 1, 0);
  console.log(`ledger: ${eventCount} work events, ${(bytes / 1e6).toFixed(1)} MB of JSONL`);

  // Warm up both sides, then alternate so background load falls on both alike.
  parseOnly(lines);
  const check = project(lines);
  const state = check.projection()!.contracts[0]!;
  console.log(
    `projected: contract ${state.contract_id} at position ${check.projection()!.position}, ${state.events} events applied`,
  );
  const parseTimes: number[] = [];
  const projectTimes: number[] = [];
  for (let round = 0; round < rounds; round += 1) {
    const sides = round % 2 === 0 ? (['parse', 'project'] as const) : (['project', 'parse'] as const);
    for (const side of sides) {
      const started = performance.now();
      if (side === 'parse') parseOnly(lines);
      else project(lines);
      (side === 'parse' ? parseTimes : projectTimes).push(performance.now() - started);
    }
  }
  const baseline = mean(parseTimes);
  const projection = mean(projectTimes);
  const ratio = projection / baseline;
  console.log(
    `JSON.parse loop (baseline): ${baseline.toFixed(1)} ms mean of ${rounds}, ${((eventCount / baseline) * 1000).toFixed(0)} events/s`,
  );
  console.log(
    `projectWork:                ${projection.toFixed(1)} ms mean of ${rounds}, ${((eventCount / projection) * 1000).toFixed(0)} events/s`,
  );
  console.log(
    `ratio projection/baseline:  ${ratio.toFixed(2)} (target <= ${target}) ${ratio <= target ? 'PASS' : 'FAIL'}`,
  );

  if (largeCount > 0) {
    const large = join(dir, 'large.jsonl');
    process.stdout.write(`writing a ${largeCount}-event ledger… `);
    await writeLedger(large, largeCount);
    console.log('done');
    const projector = new WorkProjector();
    let peak = process.memoryUsage().rss;
    let applied = 0;
    let first = true;
    const started = performance.now();
    const reader = createInterface({ input: createReadStream(large), crlfDelay: Infinity });
    for await (const line of reader) {
      if (first) {
        first = false;
        continue;
      }
      projector.applyEntry(JSON.parse(line) as ProjectableEntry);
      applied += 1;
      if (applied % 50_000 === 0) {
        peak = Math.max(peak, process.memoryUsage().rss);
        const progress = `streamed ${applied} / ${largeCount} events, peak RSS so far ${(peak / 2 ** 20).toFixed(0)} MiB`;
        if (process.stdout.isTTY) process.stdout.write(`\r${progress}`);
        else if (applied % 250_000 === 0) console.log(progress);
      }
    }
    peak = Math.max(peak, process.memoryUsage().rss);
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `${process.stdout.isTTY ? '\n' : ''}streamed ${applied} events in ${seconds.toFixed(1)} s from disk; peak RSS ${(peak / 2 ** 20).toFixed(0)} MiB`,
    );
  }
  process.exitCode = ratio <= target ? 0 : 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
