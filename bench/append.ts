/**
 * The append benchmark: writes N sources of about 300 bytes through the SQLite Store and
 * through raw node:sqlite inserts on the same schema and pragmas, one per transaction and 100
 * per transaction, at synchronous=FULL and NORMAL; reads the stream back; and exits 1 when the
 * Store falls under its targets (Store/raw >= 0.8 one per transaction, >= 0.5 batched).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { parseArgs } from 'node:util';
import { sha256Digest } from '../src/core/canonical.ts';
import type { JsonObject } from '../src/core/json.ts';
import { entryBody, openBody, type EntryInput } from '../src/core/ledger/entry.ts';
import { scopeStream, type ScopeKey } from '../src/core/ledger/names.ts';
import { applyPragmas, openSqliteStore, type SqliteSynchronous } from '../src/store/sqlite/sqlite-store.ts';
import { sqliteMigrations } from '../src/store/sqlite/sqlite-migrations.ts';

const batchSize = 100;
const bodyBytes = 300;
const slices = 10;
const metadata: JsonObject = { kind: 'note' };
const scope: ScopeKey = { project_id: 'bench', scope_id: 'bench-scope' };
const targets = { single: 0.8, batched: 0.5 } as const;

const usage = `Usage: npm run bench:append -- [--rows N]

  --rows N   sources to append in each write phase (default 100000)
  --help     show this help

After an untimed warm-up, each synchronous mode (FULL, NORMAL) appends the rows one per
transaction and then ${batchSize} per transaction, each time through the Store (captureSource,
append) and through raw inserts into fresh databases under ${tmpdir()}. The Store and the raw
baseline take turns by tenths, so both see the same background load. Then the Store reads
the batched stream back. Exits 1 when a Store/raw ratio at FULL, Baton's default, misses its
target; NORMAL is printed for comparison (docs/sqlite-durability.md).`;

type Mode = keyof typeof targets;

interface Source {
  readonly source_id: string;
  readonly content: JsonObject;
}

/** Writes one group of sources in one transaction. */
type Write = (group: readonly Source[]) => unknown;

interface Result {
  readonly synchronous: SqliteSynchronous;
  readonly mode: Mode;
  readonly store: number;
  readonly raw: number;
}

/** N distinct sources whose canonical body {content, metadata} is bodyBytes long. */
function makeSources(rows: number): Source[] {
  return Array.from({ length: rows }, (_, index) => {
    const base = { id: index, title: `Note ${index}`, author: 'bench', tags: ['bench', 'note'], text: '' };
    const pad = bodyBytes - entryBody(base, metadata).length;
    return { source_id: `src-${index}`, content: { ...base, text: 'lorem ipsum '.repeat(30).slice(0, pad) } };
  });
}

/** The sources grouped as each transaction takes them. */
function groups(sources: readonly Source[], mode: Mode): Source[][] {
  const size = mode === 'single' ? 1 : batchSize;
  const out: Source[][] = [];
  for (let at = 0; at < sources.length; at += size) out.push(sources.slice(at, at + size));
  return out;
}

async function openStoreWriter(file: string, synchronous: SqliteSynchronous, mode: Mode) {
  const store = await openSqliteStore({ path: file, synchronous });
  await store.createProject(scope.project_id);
  const write: Write =
    mode === 'single'
      ? (group) => store.captureSource(scope, { ...group[0]!, metadata })
      : (group) =>
          store.append(
            scopeStream(scope),
            group.map((source): EntryInput => ({ type: 'source', ...source, metadata })),
          );
  return { write, close: () => store.close() };
}

/**
 * The baseline: the Store's own schema (its migrations) and pragmas, one prepared INSERT per
 * row computing the same canonical body and sha256 digest, positions counted in memory. No
 * validation, no source_id lookup, no stream head read or update.
 */
function openRawWriter(file: string, synchronous: SqliteSynchronous) {
  const db = new DatabaseSync(file);
  applyPragmas(db, synchronous);
  for (const migration of sqliteMigrations) db.exec(migration.sql);
  const now = new Date().toISOString();
  db.prepare('INSERT INTO projects (project_id, created_at) VALUES (?, ?)').run(scope.project_id, now);
  db.prepare(
    "INSERT INTO streams (stream_id, project_id, kind, name, created_at) VALUES (1, ?, 'scope', ?, ?)",
  ).run(scope.project_id, scope.scope_id, now);
  const insert = db.prepare(
    `INSERT INTO entries (stream_id, position, type, source_id, digest, body, recorded_at)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  );
  let position = 0;
  const write: Write = (group) => {
    db.exec('BEGIN IMMEDIATE');
    const recorded_at = new Date().toISOString();
    for (const source of group) {
      const body = entryBody(source.content, metadata);
      insert.run(1, ++position, 'source', source.source_id, sha256Digest(body), body, recorded_at);
    }
    db.exec('COMMIT');
  };
  return { write, close: () => db.close() };
}

/** Seconds to write the groups from..to-1, each in its own transaction. */
async function timeSlice(
  write: Write,
  units: readonly Source[][],
  from: number,
  to: number,
): Promise<number> {
  const start = performance.now();
  for (let index = from; index < to; index++) await write(units[index]!);
  return (performance.now() - start) / 1000;
}

/** Store and raw writes of the same rows in alternating tenths; rows per second for each. */
async function compare(
  dir: string,
  synchronous: SqliteSynchronous,
  mode: Mode,
  sources: readonly Source[],
  report: boolean,
): Promise<{ store: number; raw: number }> {
  const units = groups(sources, mode);
  const store = await openStoreWriter(join(dir, `${synchronous}-store-${mode}.db`), synchronous, mode);
  const raw = openRawWriter(join(dir, `${synchronous}-raw-${mode}.db`), synchronous);
  const seconds = { store: 0, raw: 0 };
  try {
    for (let slice = 0; slice < slices; slice++) {
      const from = Math.floor((units.length * slice) / slices);
      const to = Math.floor((units.length * (slice + 1)) / slices);
      const order = slice % 2 === 0 ? (['store', 'raw'] as const) : (['raw', 'store'] as const);
      for (const side of order)
        seconds[side] += await timeSlice((side === 'store' ? store : raw).write, units, from, to);
      if (report) {
        const done = sources.length * ((slice + 1) / slices);
        process.stderr.write(
          `  ${synchronous} ${mode}: ${(slice + 1) * 10}%  store ${seconds.store.toFixed(1)} s` +
            `  raw ${seconds.raw.toFixed(1)} s  (store ${rate(done / seconds.store)}, raw ${rate(done / seconds.raw)})\n`,
        );
      }
    }
  } finally {
    await store.close();
    raw.close();
  }
  return { store: sources.length / seconds.store, raw: sources.length / seconds.raw };
}

/** Reads and parses the whole stream through the Store; entries per second. */
async function storeRead(file: string, synchronous: SqliteSynchronous, rows: number): Promise<number> {
  const store = await openSqliteStore({ path: file, synchronous });
  try {
    const start = performance.now();
    let count = 0;
    for await (const entry of store.readStream(scopeStream(scope))) {
      if (entry.content !== null) count++;
    }
    if (count !== rows) throw new Error(`read ${count} entries, expected ${rows}`);
    return count / ((performance.now() - start) / 1000);
  } finally {
    await store.close();
  }
}

/** The same rows with one raw SELECT and JSON.parse per body, for scale. */
function rawRead(file: string): number {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const start = performance.now();
    let count = 0;
    for (const row of db.prepare('SELECT body FROM entries ORDER BY stream_id, position').iterate()) {
      if (openBody((row as { body: string }).body).content !== null) count++;
    }
    return count / ((performance.now() - start) / 1000);
  } finally {
    db.close();
  }
}

function rate(value: number): string {
  return `${Math.round(value).toLocaleString('en-US')}/s`;
}

function describeMode(mode: Mode): string {
  return mode === 'single' ? '1 per transaction' : `${batchSize} per transaction`;
}

function load(): string {
  return loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { rows: { type: 'string', default: '100000' }, help: { type: 'boolean' } },
  });
  if (values.help) {
    console.log(usage);
    return 0;
  }
  const rows = Number(values.rows);
  if (!Number.isSafeInteger(rows) || rows < 1) {
    console.error(`--rows takes a positive whole number, got ${values.rows}\n\n${usage}`);
    return 2;
  }

  const sources = makeSources(rows);
  const dir = mkdtempSync(join(tmpdir(), 'baton-bench-'));
  console.log(
    `Baton append benchmark: ${rows.toLocaleString('en-US')} sources of ${bodyBytes}-byte canonical body`,
  );
  console.log(
    `node ${process.version}, ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), databases in ${tmpdir()}`,
  );
  console.log(`load average at start: ${load()}`);
  console.log(
    'raw baseline: the Store schema and pragmas, prepared INSERT per row, same canonical body + sha256 digest;\n' +
      '  no input validation, no source_id lookup, no stream head read or update\n',
  );

  const results: Result[] = [];
  try {
    process.stderr.write('warming up (not timed)\n');
    const warm = sources.slice(0, Math.min(rows, 2000));
    const warmDir = mkdtempSync(join(dir, 'warm-'));
    for (const mode of ['single', 'batched'] as const) await compare(warmDir, 'normal', mode, warm, false);
    rmSync(warmDir, { recursive: true, force: true });

    for (const synchronous of ['full', 'normal'] as const) {
      const sync = synchronous.toUpperCase().padEnd(6);
      for (const mode of ['single', 'batched'] as const) {
        const { store, raw } = await compare(dir, synchronous, mode, sources, true);
        results.push({ synchronous, mode, store, raw });
        console.log(
          `${sync} ${describeMode(mode).padEnd(19)} store ${rate(store).padStart(10)}  raw ${rate(raw).padStart(10)}  ratio ${(store / raw).toFixed(2)}`,
        );
      }
      const file = join(dir, `${synchronous}-store-batched.db`);
      const read = await storeRead(file, synchronous, rows);
      const raw = rawRead(file);
      console.log(
        `${sync} ${'read whole stream'.padEnd(19)} store ${rate(read).padStart(10)}  raw ${rate(raw).padStart(10)}`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  console.log(`load average at end: ${load()}`);
  console.log('\nsync   mode                 store/s      raw/s  ratio  target  result');
  let failed = false;
  for (const { synchronous, mode, store, raw } of results) {
    const ratio = store / raw;
    // The targets hold for Baton's configuration (FULL); NORMAL is measured for comparison.
    const gated = synchronous === 'full';
    const pass = ratio >= targets[mode];
    failed ||= gated && !pass;
    console.log(
      [
        synchronous.toUpperCase().padEnd(6),
        describeMode(mode).padEnd(18),
        Math.round(store).toString().padStart(9),
        Math.round(raw).toString().padStart(10),
        ratio.toFixed(2).padStart(6),
        `>=${targets[mode]}`.padStart(7),
        gated ? (pass ? ' PASS' : ' FAIL') : pass ? ' (info: met)' : ' (info: not met)',
      ].join(' '),
    );
  }
  return failed ? 1 : 0;
}

process.exitCode = await main();
