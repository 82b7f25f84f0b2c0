/**
 * What every `baton` command is made of: its help, its options (node:util parseArgs), the one
 * or more registry operations it calls, and a run function over a Context. Helpers here read
 * option values and turn bad ones into UsageErrors (exit 2) that say what to fix.
 */
import type { ParseArgsConfig } from 'node:util';
import { projectIdSchema } from '../core/ledger/names.ts';
import type { Context } from './context.ts';

export interface Io {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The working directory: where the Git binding is looked up. Default process.cwd(). */
  readonly cwd?: string;
  /**
   * Resolves once everything given to out so far has been written: true, or false when the
   * output failed (whoever owns it has then said so and made the exit code 1). Absent when out
   * cannot fail.
   */
  readonly flushed?: () => Promise<boolean>;
}

/** A mistake in how the command was called: exit 2, with the command's usage unless told not to. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  readonly showUsage: boolean;

  constructor(message: string, options: { showUsage?: boolean } = {}) {
    super(message);
    this.showUsage = options.showUsage ?? true;
  }
}

export const defaultProject = 'default';

export type Options = NonNullable<ParseArgsConfig['options']>;
export type Values = Readonly<Record<string, string | boolean | string[] | undefined>>;

export interface Command {
  readonly summary: string;
  /** The synopsis and option list shown by --help. */
  readonly usage: string;
  /** At least one, shown by --help: what a person would type. */
  readonly examples: readonly string[];
  readonly options: Options;
  /** The registry operations this command calls (for the coverage test and docs). */
  readonly operations?: readonly string[];
  /**
   * True when the command may create the SQLite database file (init, serve, …); any other
   * command refuses a file that does not exist instead of leaving an empty database behind.
   */
  readonly createsDatabase?: true;
  /** True when the command reads words after its name (and checks them itself); else any is refused. */
  readonly positionals?: true;
  /** Input paths of an invalid_input error, mapped to the option that sets them. */
  readonly fields?: Readonly<Record<string, string>>;
  run(context: Context): Promise<void>;
}

export const databaseHelp = `  --database URL|PATH   a SQLite file or a postgres:// URL (or BATON_DATABASE_URL); by
                        default the nearest .baton/baton.db up to the Git work tree's top`;

export const transportHelp = `  --server URL          call a Baton server instead of opening the database (or BATON_SERVER)
  --token TOKEN         the server's bearer token (or BATON_TOKEN); it decides the project
  --project ID          the project of the local database (default: the binding's, else "${defaultProject}")
${databaseHelp}
  --json                print the operation's result as JSON instead of text`;

export const scopeHelp = `  --scope SCOPE_ID      the workstream; else BATON_SCOPE, else this Git work tree's binding`;

export const common = {
  database: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} satisfies Options;

/** Options of every command that calls an operation, locally or on a server. */
export const transportOptions = {
  ...common,
  server: { type: 'string' },
  token: { type: 'string' },
  project: { type: 'string', short: 'p' },
  json: { type: 'boolean' },
} satisfies Options;

export const projectOption = { project: { type: 'string', short: 'p' } } satisfies Options;
export const projectHelp = `  --project ID          default: this work tree's binding's project, else "${defaultProject}"`;

export function checkedProject(project_id: string): string {
  if (!projectIdSchema.safeParse(project_id).success) {
    throw new UsageError(
      `${JSON.stringify(project_id)} is not a project id: 1-64 of a-z 0-9 . _ - starting with a letter or digit`,
    );
  }
  return project_id;
}

export const scopedOptions = { ...transportOptions, scope: { type: 'string', short: 's' } } satisfies Options;

export function text(values: Values, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

export function required(values: Values, name: string, why = ''): string {
  const value = text(values, name);
  if (value === undefined || value.trim() === '') throw new UsageError(`--${name} is required${why}`);
  return value;
}

/** A repeatable option's values, in the order given. */
export function list(values: Values, name: string): string[] {
  const value = values[name];
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [String(value)];
}

/** A whole-number option, within min and max (default 0 and the largest exact integer). */
export function whole(
  values: Values,
  name: string,
  range: { readonly min?: number; readonly max?: number } = {},
): number | undefined {
  const { min = 0, max = Number.MAX_SAFE_INTEGER } = range;
  const value = text(values, name);
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    const bounds =
      max === Number.MAX_SAFE_INTEGER ? (min === 0 ? '' : ` from ${min}`) : ` from ${min} to ${max}`;
    throw new UsageError(`--${name} takes a whole number${bounds}, not ${JSON.stringify(value)}`);
  }
  return Number(value);
}

export function oneOf<const T extends string>(
  values: Values,
  name: string,
  allowed: readonly T[],
): T | undefined {
  const value = text(values, name);
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new UsageError(`--${name} is one of ${allowed.join(', ')}, not ${JSON.stringify(value)}`);
  }
  return value as T;
}

export function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** A value as one word a POSIX shell reads back unchanged: bare when safe, else single-quoted. */
export function shellWord(value: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}
