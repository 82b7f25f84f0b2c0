/**
 * What benchmarks share: their sizes, each a `--name N` flag of a positive whole number with a
 * default, `--help` printing the usage; the load average they print around a run; and a SQLite
 * ledger built fast, then reopened as a server reads it.
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import type { AppDeps } from '../src/app/deps.ts';
import { systemClock } from '../src/core/clock.ts';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts';

/** The sizes the flags give, or the exit code when there is nothing to run: 0 after --help, 2 on a bad flag. */
export function parseSizes<Name extends string>(
  defaults: Readonly<Record<Name, string>>,
  usage: string,
): Record<Name, number> | number {
  const names = Object.keys(defaults) as Name[];
  const { values } = parseArgs({
    options: {
      ...Object.fromEntries(
        names.map((name) => [name, { type: 'string', default: defaults[name] } as const]),
      ),
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    console.log(usage);
    return 0;
  }
  const sizes = {} as Record<Name, number>;
  for (const name of names) {
    const text = (values as Record<string, unknown>)[name];
    const value = Number(text);
    if (!Number.isSafeInteger(value) || value < 1) {
      console.error(`--${name} takes a positive whole number, got ${String(text)}\n\n${usage}`);
      return 2;
    }
    sizes[name] = value;
  }
  return sizes;
}

/** The 1, 5 and 15 minute load averages, as a benchmark prints them. */
export function loadAverage(): string {
  return loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
}

/**
 * Build the ledger of a SQLite file at synchronous=NORMAL (not timed; its time is printed), then
 * open it again with the default pragmas (FULL) for the timed part.
 */
export async function buildSqlite(file: string, build: (deps: AppDeps) => Promise<void>): Promise<AppDeps> {
  process.stderr.write('building the ledger (not timed)\n');
  const started = performance.now();
  const writer = await openSqliteStore({ path: file, synchronous: 'normal' });
  try {
    await build({ store: writer, clock: systemClock });
  } finally {
    await writer.close();
  }
  console.log(`setup: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return { store: await openSqliteStore({ path: file }), clock: systemClock };
}
