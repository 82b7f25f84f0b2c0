/**
 * The report benchmark: reads the Handoff Report of a workstream with a long history (100,000
 * sources, 5,000 revisions) and of a short one (100 sources, 10 revisions) from one SQLite
 * database, in alternating rounds, and exits 1 when the long one's mean latency is more than
 * twice the short one's: history must not make the report slower. A control, a short workstream
 * with as many listed revisions as the long one, shows the part that history alone costs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AppDeps } from '../src/app/deps.ts';
import { commitHandoff, prepareHandoff } from '../src/app/handoffs.ts';
import { readReport, readWorkstreamReport } from '../src/app/report.ts';
import { reportRevisionLimit } from '../src/core/handoff/report.ts';
import type { JsonObject } from '../src/core/json.ts';
import type { EntryInput } from '../src/core/ledger/entry.ts';
import { scopeStream, type ScopeKey } from '../src/core/ledger/names.ts';
import type { SourceRef } from '../src/core/ledger/source.ts';
import { buildSqlite, loadAverage, parseSizes } from './shared.ts';

const project_id = 'bench';
/** The control workstream lives in a project of its own, so readReport(bench) covers the two. */
const control_project_id = 'bench-control';
/** Sources per setup append: the Store's batchEntries limit. */
const batchSize = 1000;
const small = { sources: 100, revisions: 10 } as const;
/** Short rounds, so a burst of background load falls on every report alike. */
const rounds = 200;
const target = 2;
const metadata: JsonObject = { kind: 'note' };

const usage = `Usage: npm run bench:report -- [--sources N] [--revisions N] [--reads N]

  --sources N     sources of the long workstream (default 100000)
  --revisions N   handoff revisions of the long workstream (default 5000)
  --reads N       timed reads of each report (default 4000)
  --help          show this help

Builds one SQLite database under ${tmpdir()} at synchronous=NORMAL: a long workstream
(the sizes above) and a short one (${small.sources} sources, ${small.revisions} revisions).
Sources go in by Store.append, ${batchSize} per transaction; each revision is one
prepareHandoff + commitHandoff citing two of the scope's sources. Then it reopens the
database with the default pragmas, warms up, and reads the long report, the short report
and the whole-project report (both workstreams, for information) in ${rounds} rounds whose
order rotates, so all see the same background load. For information too, a control: a short
workstream (${small.sources} sources) with ${reportRevisionLimit} revisions, in a project of its own, lists as many
revisions as the long one, so long/control shows the cost of history alone. Exits 1 when the
mean latency of the long report is more than ${target} times that of the short one.`;

type Side = 'big' | 'small' | 'control' | 'project';

interface Workstream {
  readonly side: Exclude<Side, 'project'>;
  readonly scope: ScopeKey;
  readonly sources: number;
  readonly revisions: number;
}

interface Stats {
  readonly reads: number;
  readonly perSecond: number;
  readonly mean: number;
  readonly p50: number;
  readonly p95: number;
}

function sourceContent(index: number): JsonObject {
  return {
    id: index,
    title: `Note ${index}`,
    author: 'bench',
    tags: ['bench', 'note'],
    text: 'lorem ipsum dolor sit amet '.repeat(8),
  };
}

/** The content of revision n: two statements, one next action, two exact citations. */
function handoff(n: number, scope_id: string, a: SourceRef, b: SourceRef): Record<string, unknown> {
  return {
    objective: `Keep ${scope_id} moving: step ${n} of the refresh work`,
    disposition: 'continue',
    statements: [
      { text: `Step ${n - 1} is done; the log shows it.`, basis: 'verified', citations: [a] },
      { text: `Nothing else changed since step ${n - 1}.`, basis: 'declared' },
    ],
    next_action: { text: `Start step ${n + 1} from the notes cited here.`, citations: [b] },
    omissions: ['Timing data is not included.'],
  };
}

function progress(text: string): void {
  process.stderr.write(`  ${text}\n`);
}

/** Ten progress lines over a run of total steps: at which steps to print. */
function tenths(done: number, step: number, total: number): boolean {
  return Math.floor(((done - step) * 10) / total) !== Math.floor((done * 10) / total) || done === total;
}

async function fill(deps: AppDeps, workstream: Workstream): Promise<void> {
  const { scope, sources, revisions, side } = workstream;
  const refs: SourceRef[] = [];
  for (let at = 0; at < sources; at += batchSize) {
    const batch: EntryInput[] = [];
    for (let index = at; index < Math.min(sources, at + batchSize); index++)
      batch.push({ type: 'source', source_id: `src-${index}`, content: sourceContent(index), metadata });
    for (const result of await deps.store.append(scopeStream(scope), batch))
      refs.push({ scope_id: scope.scope_id, source_id: result.source_id!, digest: result.digest });
    if (tenths(refs.length, batch.length, sources))
      progress(`${side}: ${refs.length.toLocaleString('en-US')} sources`);
  }
  let head = 0;
  for (let n = 1; n <= revisions; n++) {
    const a = refs[(n * 7919) % refs.length]!;
    const b = refs[(n * 104729 + 1) % refs.length]!;
    const prepared = await prepareHandoff(deps, { ...scope, ...handoff(n, scope.scope_id, a, b) });
    head = (await commitHandoff(deps, { ...scope, prepared: prepared.digest, expected_head: head })).revision;
    if (tenths(n, 1, revisions)) progress(`${side}: ${n.toLocaleString('en-US')} revisions`);
  }
}

/** Read each report once and check it is the one the benchmark means to time. */
async function check(deps: AppDeps, workstreams: readonly Workstream[]): Promise<void> {
  const project = await readReport(deps, { project_id });
  if (project.workstreams.length !== 2) throw new Error(`project ${project_id} has not two workstreams`);
  for (const { scope, revisions } of workstreams) {
    const report = await readWorkstreamReport(deps, scope);
    const listed = project.workstreams.find((workstream) => workstream.scope_id === scope.scope_id);
    if (
      report.revision_count !== revisions ||
      report.revisions.length !== Math.min(revisions, reportRevisionLimit) ||
      report.current?.revision !== revisions ||
      (scope.project_id === project_id && listed?.revision_count !== revisions)
    ) {
      throw new Error(`the report of ${scope.scope_id} does not show its ${revisions} revisions`);
    }
  }
}

function stats(latencies: readonly number[]): Stats {
  const sorted = [...latencies].sort((x, y) => x - y);
  const total = sorted.reduce((sum, value) => sum + value, 0);
  const rank = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
  return {
    reads: sorted.length,
    perSecond: sorted.length / (total / 1000),
    mean: total / sorted.length,
    p50: rank(0.5),
    p95: rank(0.95),
  };
}

async function main(): Promise<number> {
  const sizes = parseSizes({ sources: '100000', revisions: '5000', reads: '4000' }, usage);
  if (typeof sizes === 'number') return sizes;

  const workstreams: readonly Workstream[] = [
    { side: 'big', scope: { project_id, scope_id: 'long-history' }, ...sizes },
    { side: 'small', scope: { project_id, scope_id: 'short-history' }, ...small },
    {
      side: 'control',
      scope: { project_id: control_project_id, scope_id: 'short-history' },
      sources: small.sources,
      revisions: reportRevisionLimit,
    },
  ];
  const count = (n: number) => n.toLocaleString('en-US');
  console.log(
    `Baton report benchmark: long workstream ${count(sizes.sources)} sources, ${count(sizes.revisions)} revisions;` +
      ` short ${small.sources} sources, ${small.revisions} revisions`,
  );
  console.log(
    `node ${process.version}, ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), database in ${tmpdir()}`,
  );
  console.log(`load average at start: ${loadAverage()}`);
  console.log(
    `setup at synchronous=NORMAL; reads through the store reopened with its default pragmas (FULL).\n` +
      `A report lists the latest ${reportRevisionLimit} revisions: the long one ${Math.min(sizes.revisions, reportRevisionLimit)},` +
      ` the short one ${Math.min(small.revisions, reportRevisionLimit)}, the control one ${reportRevisionLimit}.\n`,
  );

  const dir = mkdtempSync(join(tmpdir(), 'baton-bench-report-'));
  const file = join(dir, 'report.db');
  const results = new Map<Side, Stats>();
  try {
    const deps = await buildSqlite(file, async (writer) => {
      await writer.store.createProject(project_id);
      await writer.store.createProject(control_project_id);
      for (const workstream of workstreams) await fill(writer, workstream);
    });
    const { store } = deps;
    try {
      await check(deps, workstreams);
      const readers: Record<Side, () => Promise<unknown>> = {
        big: () => readWorkstreamReport(deps, workstreams[0]!.scope),
        small: () => readWorkstreamReport(deps, workstreams[1]!.scope),
        control: () => readWorkstreamReport(deps, workstreams[2]!.scope),
        project: () => readReport(deps, { project_id }),
      };
      const sides = Object.keys(readers) as Side[];

      process.stderr.write('warming up (not timed)\n');
      const warm = Math.min(sizes.reads, 500);
      for (let index = 0; index < warm; index++) for (const side of sides) await readers[side]();

      const latencies: Record<Side, number[]> = { big: [], small: [], control: [], project: [] };
      for (let round = 0; round < rounds; round++) {
        const reads =
          Math.floor((sizes.reads * (round + 1)) / rounds) - Math.floor((sizes.reads * round) / rounds);
        const order = [...sides.slice(round % sides.length), ...sides.slice(0, round % sides.length)];
        for (const side of round % 2 === 0 ? order : order.reverse()) {
          const read = readers[side];
          const into = latencies[side];
          for (let index = 0; index < reads; index++) {
            const start = performance.now();
            await read();
            into.push(performance.now() - start);
          }
        }
        if ((round + 1) % (rounds / 10) !== 0) continue;
        const mean = (side: Side) => stats(latencies[side]).mean.toFixed(3);
        progress(
          `round ${round + 1}/${rounds}: mean long ${mean('big')} ms, short ${mean('small')} ms,` +
            ` control ${mean('control')} ms, project ${mean('project')} ms`,
        );
      }
      for (const side of sides) results.set(side, stats(latencies[side]));
    } finally {
      await store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`load average at end: ${loadAverage()}`);

  const labels: Record<Side, string> = {
    big: `long (${count(sizes.sources)} src, ${count(sizes.revisions)} rev)`,
    small: `short (${small.sources} src, ${small.revisions} rev)`,
    control: `control (${small.sources} src, ${reportRevisionLimit} rev)`,
    project: 'project (both, readReport)',
  };
  const width = Math.max(...Object.values(labels).map((label) => label.length));
  console.log(`\n${'report'.padEnd(width)}    reads   reports/s   mean ms    p50 ms    p95 ms`);
  for (const [side, result] of results) {
    console.log(
      [
        labels[side].padEnd(width),
        count(result.reads).padStart(8),
        Math.round(result.perSecond).toLocaleString('en-US').padStart(11),
        result.mean.toFixed(3).padStart(9),
        result.p50.toFixed(3).padStart(9),
        result.p95.toFixed(3).padStart(9),
      ].join(' '),
    );
  }
  const mean = (side: Side) => results.get(side)!.mean;
  const ratio = mean('big') / mean('small');
  const pass = ratio <= target;
  console.log(
    `\nmean latency long/control  ratio ${(mean('big') / mean('control')).toFixed(2)}  (information: history alone)`,
  );
  console.log(
    `mean latency long/short    ratio ${ratio.toFixed(2)}  target <=${target}  ${pass ? 'PASS' : 'FAIL'}`,
  );
  return pass ? 0 : 1;
}

process.exitCode = await main();
