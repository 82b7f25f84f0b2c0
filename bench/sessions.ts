/**
 * The session list benchmark: `listSessions` over a project of N managed-work sessions in one
 * SQLite database, timed cold (a store handle whose list has never run: every session loaded and
 * projected, as every call did before summaries were kept), warm (nothing changed since the last
 * list) and after one session changed, in alternating rounds. Exits 1 when the warm list's mean
 * takes more than a tenth of the cold one's.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AppDeps } from '../src/app/deps.ts';
import { listedSessionsLimit, listSessions, type ListSessionsResult } from '../src/app/work-list.ts';
import { createContract, startSession, transitionItem } from '../src/app/work.ts';
import type { Actor } from '../src/core/work/model.ts';
import type { Store } from '../src/store/store.ts';
import { buildSqlite, loadAverage, parseSizes } from './shared.ts';

const project_id = 'bench';
const target = 0.1;
const model: Actor = { type: 'model', id: 'bench' };
const itemIds = Array.from({ length: 5 }, (_, index) => `item-${index + 1}`);
/** The changes of a changed round, in turn. */
const cycle = ['running', 'blocked', 'ready'] as const;

const usage = `Usage: npm run bench:sessions -- [--sessions N] [--rounds N] [--warm N]

  --sessions N   sessions in the project (default 200, the most one list shows)
  --rounds N     timed rounds (default 20)
  --warm N       warm lists per round (default 20)
  --help         show this help

Builds one SQLite database under ${tmpdir()} at synchronous=NORMAL: each session starts
managed, gets a contract of ${itemIds.length} items and 4 item changes. Then it reopens the
database with the default pragmas and, in each round, times one cold list (through a store
handle no list has used), the warm lists, and one list after an item change of one session (the
change itself not timed). Exits 1 when the warm mean is more than ${target} of the cold mean.`;

function progress(text: string): void {
  process.stderr.write(`  ${text}\n`);
}

const sessionId = (index: number) => `session-${String(index).padStart(4, '0')}`;

async function move(deps: AppDeps, session_id: string, item_id: string, to: string): Promise<void> {
  const reason = to === 'blocked' ? 'waiting on review' : undefined;
  await transitionItem(deps, project_id, { session_id, revision: 1, item_id, to, reason }, model);
}

/** One session as a model leaves it: a contract, two items started, one blocked and unblocked. */
async function seed(deps: AppDeps, session_id: string): Promise<void> {
  await startSession(deps, project_id, { session_id, work_mode: 'managed' });
  await createContract(
    deps,
    project_id,
    {
      session_id,
      contract_id: 'work-1',
      objective: `benchmark the session list: ${session_id}`,
      criteria: [{ criterion_id: 'done', statement: 'done', kind: { type: 'shell', command: 'true' } }],
      items: itemIds.map((item_id) => ({ item_id, title: `Item ${item_id}`, criterion_ids: ['done'] })),
    },
    model,
  );
  await move(deps, session_id, 'item-1', 'running');
  await move(deps, session_id, 'item-2', 'running');
  await move(deps, session_id, 'item-1', 'blocked');
  await move(deps, session_id, 'item-1', 'ready');
}

/** A handle on the same store that no list has used: its list projects every session again. */
function unseen(store: Store): Store {
  return new Proxy(store, {
    get(target, key) {
      const value = Reflect.get(target, key, target) as unknown;
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
    },
  });
}

async function timed(list: () => Promise<ListSessionsResult>): Promise<[number, ListSessionsResult]> {
  const start = performance.now();
  const result = await list();
  return [performance.now() - start, result];
}

const mean = (samples: readonly number[]) => samples.reduce((sum, value) => sum + value, 0) / samples.length;

async function main(): Promise<number> {
  const sizes = parseSizes({ sessions: '200', rounds: '20', warm: '20' }, usage);
  if (typeof sizes === 'number') return sizes;
  console.log(
    `Baton session list benchmark: ${sizes.sessions} sessions, ${sizes.rounds} rounds of 1 cold, ${sizes.warm} warm, 1 changed`,
  );
  console.log(
    `node ${process.version}, ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), database in ${tmpdir()}`,
  );
  console.log(`load average at start: ${loadAverage()}`);

  const dir = mkdtempSync(join(tmpdir(), 'baton-bench-sessions-'));
  const file = join(dir, 'sessions.db');
  const cold: number[] = [];
  const warm: number[] = [];
  const changed: number[] = [];
  let first: number;
  try {
    const deps = await buildSqlite(file, async (writer) => {
      await writer.store.createProject(project_id);
      for (let index = 1; index <= sizes.sessions; index++) {
        await seed(writer, sessionId(index));
        if (index % 50 === 0 || index === sizes.sessions) progress(`${index} / ${sizes.sessions} sessions`);
      }
    });
    const { store } = deps;
    try {
      let listed: ListSessionsResult;
      [first, listed] = await timed(() => listSessions(deps, project_id));
      if (
        listed.sessions.length !== Math.min(sizes.sessions, listedSessionsLimit) ||
        listed.sessions.some((s) => s.error)
      ) {
        throw new Error('the list does not show every session without error');
      }
      for (let round = 0; round < sizes.rounds; round++) {
        const [coldMs, again] = await timed(() =>
          listSessions({ ...deps, store: unseen(store) }, project_id),
        );
        cold.push(coldMs);
        for (let index = 0; index < sizes.warm; index++) {
          const [warmMs] = await timed(() => listSessions(deps, project_id));
          warm.push(warmMs);
        }
        // A different session each round: its item-3 starts, is blocked, is ready again, and so on.
        const count = again.sessions.length;
        const { session_id, position: before } = again.sessions[round % count]!;
        await move(deps, session_id, 'item-3', cycle[Math.floor(round / count) % cycle.length]!);
        const [changedMs, after] = await timed(() => listSessions(deps, project_id));
        changed.push(changedMs);
        const shown = after.sessions.find((session) => session.session_id === session_id)!;
        if (shown.position !== before + 1) {
          throw new Error(`the list after a change of ${session_id} does not show it`);
        }
        if ((round + 1) % 5 === 0 || round + 1 === sizes.rounds) {
          progress(
            `round ${round + 1}/${sizes.rounds}: mean cold ${mean(cold).toFixed(2)} ms, warm ${mean(warm).toFixed(3)} ms, changed ${mean(changed).toFixed(3)} ms`,
          );
        }
      }
    } finally {
      await store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`load average at end: ${loadAverage()}`);

  const rows: [string, number, number][] = [
    ['first list (cold, once)', 1, first],
    ['cold (every session projected)', cold.length, mean(cold)],
    ['warm (nothing changed)', warm.length, mean(warm)],
    ['after one session changed', changed.length, mean(changed)],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  console.log(`\n${'list'.padEnd(width)}   calls   mean ms    lists/s`);
  for (const [label, calls, ms] of rows) {
    console.log(
      `${label.padEnd(width)} ${String(calls).padStart(7)} ${ms.toFixed(3).padStart(9)} ${Math.round(
        1000 / ms,
      )
        .toLocaleString('en-US')
        .padStart(10)}`,
    );
  }
  const ratio = mean(warm) / mean(cold);
  const pass = ratio <= target;
  console.log(
    `\nmean latency changed/cold  ratio ${(mean(changed) / mean(cold)).toFixed(3)}  (information: one session projected again)`,
  );
  console.log(
    `mean latency warm/cold     ratio ${ratio.toFixed(3)}  (${(1 / ratio).toFixed(1)}x)  target <=${target}  ${pass ? 'PASS' : 'FAIL'}`,
  );
  return pass ? 0 : 1;
}

process.exitCode = await main();
