/**
 * The `baton` command: parses arguments, calls operations, renders the result. Data goes to
 * stdout (JSON with --json), progress and errors to stderr. Exit codes: 0 ok, 1 the operation
 * refused or failed (a BatonError), 2 a usage error (including an unnamed workstream).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { BatonError } from '../core/errors.ts';
import {
  databaseHelp,
  shellWord,
  UsageError,
  type Command,
  type Io,
  type Options,
  type Values,
} from './command.ts';
import { adminCommands } from './commands/admin.ts';
import { agentCommands } from './commands/agent.ts';
import { flowCommands } from './commands/flow.ts';
import { bindCommands } from './commands/bind.ts';
import { ledgerCommands } from './commands/ledger.ts';
import { viewCommands } from './commands/views.ts';
import { handoffCommands } from './commands/handoff.ts';
import { recordCommands } from './commands/records.ts';
import { gateCommands } from './commands/work-gate.ts';
import { sessionCommands, workCommands as managedWorkCommands } from './commands/work.ts';
import { createContext, type Context } from './context.ts';
import { batonApiVersion } from '../core/api.ts';
import { visibleControls } from '../core/text.ts';

export { UsageError, defaultProject, type Io } from './command.ts';

const workCommands: Readonly<Record<string, Command>> = {
  contract: recordCommands.contract!,
  ...handoffCommands,
  outcome: recordCommands.outcome!,
};

export const commands: Readonly<Record<string, Command>> = {
  ...adminCommands,
  ...bindCommands,
  ...workCommands,
  ...viewCommands,
  ...sessionCommands,
  ...managedWorkCommands,
  ...gateCommands,
  ...agentCommands,
  ...flowCommands,
  ...ledgerCommands,
};

const groups: readonly { title: string; names: readonly string[] }[] = [
  { title: 'Set up and run', names: [...Object.keys(adminCommands), ...Object.keys(bindCommands)] },
  { title: 'Hand work over', names: Object.keys(workCommands) },
  { title: 'Read and review', names: Object.keys(viewCommands) },
  {
    title: 'Managed work',
    names: [
      ...Object.keys(sessionCommands),
      ...Object.keys(managedWorkCommands),
      ...Object.keys(gateCommands),
      ...Object.keys(flowCommands),
    ],
  },
  { title: "Baton's own agent", names: Object.keys(agentCommands) },
  { title: 'The ledger', names: Object.keys(ledgerCommands) },
];

function overview(): string {
  const width = Math.max(...Object.keys(commands).map((name) => name.length));
  return [
    'baton: an evidence-backed work relay for people and AI agents.',
    '',
    'Usage: baton <command> [options]      baton <command> --help for its options and examples',
    '',
    ...groups.flatMap((group) => [
      `${group.title}:`,
      ...group.names.map((name) => `  ${name.padEnd(width)}  ${commands[name]!.summary}`),
      '',
    ]),
    'Operations run on the local database, or on a server with --server URL --token TOKEN',
    '(BATON_SERVER, BATON_TOKEN). The workstream is --scope, else BATON_SCOPE, else the',
    "work tree's binding (baton bind); Baton never picks one for you.",
    'Exit codes: 0 ok, 1 the operation failed, 2 a usage error.',
    '',
    databaseHelp,
    '',
  ].join('\n');
}

const column = 24;

/**
 * Align option lines (`  --flag ARG   description`, or `  NAME   description` for an argument)
 * and their continuation lines on one
 * column, whatever spacing the command's usage text was written with.
 */
export function alignOptions(usage: string): string {
  let inOption = false;
  return usage
    .split('\n')
    .flatMap((line) => {
      const option = /^ {2}(-\S.*?|[A-Z][A-Z_]*(?: [A-Z_]+)*) {2,}(\S.*)$/.exec(line);
      if (option) {
        inOption = true;
        const [, flag, description] = option as unknown as [string, string, string];
        return flag.length + 4 > column
          ? [`  ${flag}`, `${' '.repeat(column)}${description}`]
          : [`  ${flag.padEnd(column - 4)}  ${description}`];
      }
      if (/^ {2}-\S.*\S$/.test(line) && !/\S {2,}\S/.test(line)) {
        // A flag whose description starts on the next line (`--scope, --session`).
        inOption = true;
        return [line];
      }
      if (inOption && /^ {6,}\S/.test(line)) return [`${' '.repeat(column)}${line.trimStart()}`];
      inOption = false;
      return [line];
    })
    .join('\n');
}

function help(command: Command): string {
  return [
    command.summary,
    '',
    `Usage: ${alignOptions(command.usage)}`,
    '',
    'Examples:',
    ...command.examples.map((example) => `  ${example}`),
    '',
  ].join('\n');
}

/** The options that set the fields an invalid_input error names. */
function fieldHints(command: Command, error: BatonError): string[] {
  const issues = (error.data as { issues?: { path?: unknown; message?: unknown }[] }).issues;
  if (!command.fields || !Array.isArray(issues)) return [];
  const fields = Object.keys(command.fields).sort((a, b) => b.length - a.length);
  const hints = issues.flatMap((issue) => {
    const path = typeof issue.path === 'string' ? issue.path : '';
    const field = fields.find((name) => path === name || path.startsWith(`${name}.`));
    return field ? [`fix ${command.fields![field]}: ${String(issue.message)}`] : [];
  });
  return [...new Set(hints)];
}

function failure(
  name: string,
  command: Command,
  error: BatonError,
  values: Values,
  env: Io['env'] = {},
): string {
  if (values.json === true) {
    return `${JSON.stringify({ error: { code: error.code, message: error.message, details: error.data } })}\n`;
  }
  const lines = [`baton ${name}: ${error.code}: ${error.message}`];
  lines.push(...fieldHints(command, error));
  // Only the missing project itself names nothing but its id; a missing session, contract or
  // prepared handoff of an existing project names more.
  const { project_id } = error.data as { project_id?: unknown };
  if (error.code === 'not_found' && Object.keys(error.data).length === 1 && typeof project_id === 'string') {
    lines.push(`create the project first: baton init --project ${shellWord(project_id)}`);
  }
  if (error.code === 'unauthorized') {
    lines.push('check the token: --token TOKEN or BATON_TOKEN, for the server in --server or BATON_SERVER');
  }
  // A command that only opens the local database, in a shell set up for a server.
  if (error.code === 'not_found' && typeof error.data.path === 'string' && env.BATON_SERVER) {
    lines.push(
      `baton ${name} reads the local database only; BATON_SERVER is not used: run it where the database is, or name it with --database`,
    );
  }
  if (Object.keys(error.data).length > 0) lines.push(JSON.stringify(error.data));
  return `${lines.join('\n')}\n`;
}

/** Input the caller named that the system refused; anything else (a port in use) is unavailable. */
const inputErrnos = new Set(['ENOENT', 'EISDIR', 'ENOTDIR', 'EACCES', 'EPERM', 'EEXIST', 'ENAMETOOLONG']);

/** A system error as the --json error envelope's BatonError, its errno code and path in the details. */
function systemFailure(error: NodeJS.ErrnoException): BatonError {
  const code = error.code!;
  return new BatonError(inputErrnos.has(code) ? 'invalid_input' : 'unavailable', error.message, {
    errno: code,
    syscall: error.syscall,
    ...(error.path === undefined ? {} : { path: error.path }),
  });
}

/** An operating system's refusal: errno codes, and the ERR_FS_ codes some fs calls use instead (rm's ERR_FS_EISDIR). */
function isSystemError(error: unknown): error is NodeJS.ErrnoException {
  const { code, syscall } = (error ?? {}) as NodeJS.ErrnoException;
  return (
    error instanceof Error &&
    typeof code === 'string' &&
    /^(E[A-Z]+|ERR_FS_[A-Z_]+)$/.test(code) &&
    typeof syscall === 'string'
  );
}

/**
 * A value option given twice is a usage error: parseArgs keeps the last one, and `--scope a
 * --scope b` would write into b without a word. Options that collect (multiple) and switches
 * may repeat.
 */
function refuseRepeated(tokens: readonly { kind: string; name?: string }[], options: Options): void {
  const seen = new Set<string>();
  for (const token of tokens) {
    if (token.kind !== 'option' || token.name === undefined) continue;
    const option = options[token.name];
    if (option?.type !== 'string' || option.multiple === true) continue;
    if (seen.has(token.name)) throw new UsageError(`--${token.name} is given twice; give it once`);
    seen.add(token.name);
  }
}

/** This Baton's version line: the package's version, the HTTP API's, and Node's. */
function versionLine(): string {
  // src/cli or dist/cli: the package's own package.json is two folders up either way.
  const packageJson = new URL('../../package.json', import.meta.url);
  const { version } = JSON.parse(readFileSync(packageJson, 'utf8')) as { version: string };
  return `baton ${version} (HTTP API ${batonApiVersion}, Node ${process.version})\n`;
}

/**
 * Edits (insert, delete, replace, swap two neighbours) from a to b: the optimal string
 * alignment distance, enough to tell "hnadoff" from "handoff".
 */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i += 1) {
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      }
      rows[i]![j] = best;
    }
  }
  return rows[a.length]![b.length]!;
}

/** The command word closest to a mistyped one, when it is close enough to be the one meant. */
function closestCommand(word: string): string | undefined {
  const words = [...new Set(Object.keys(commands).map((name) => name.split(' ')[0]!))];
  const ranked = words
    .map((candidate) => ({ candidate, distance: editDistance(word.toLowerCase(), candidate) }))
    .sort((x, y) => x.distance - y.distance);
  const best = ranked[0];
  return best && best.distance <= Math.min(2, Math.floor(word.length / 2)) ? best.candidate : undefined;
}

/** `baton work --help`: the commands of a group, each with its summary. */
function groupHelp(group: string, names: readonly string[]): string {
  const width = Math.max(...names.map((name) => name.length)) + 'baton '.length + 2;
  const lines = names.map((name) => `  ${`baton ${name}`.padEnd(width)}${commands[name]!.summary}`);
  return `Usage: baton ${group} <command> [options]\n\n${lines.join('\n')}\n\nbaton ${group} <command> --help for its options and examples\n`;
}

/** The command a command line names: two words (`work show`) before one; undefined for none. */
export function findCommand(words: readonly string[]): string | undefined {
  const two = `${words[0]} ${words[1]}`;
  if (words.length > 1 && commands[two]) return two;
  return commands[words[0]!] ? words[0] : undefined;
}

/**
 * A command's options and positionals, checked as every run checks them: an unknown option, a
 * value option given twice, and (unless --help) a word after a command that takes none throw
 * a UsageError or parseArgs' ERR_PARSE_ARGS error, which run() reports with exit 2.
 */
export function parseOptions(
  name: string,
  command: Command,
  rest: readonly string[],
): { values: Values; positionals: string[] } {
  const parsed = parseArgs({
    args: [...rest],
    options: command.options,
    allowPositionals: true,
    strict: true,
    tokens: true,
  });
  const values = parsed.values as Values;
  refuseRepeated(parsed.tokens, command.options);
  const [unexpected] = parsed.positionals;
  if (values.help !== true && !command.positionals && unexpected !== undefined) {
    // `baton report s1` would otherwise print the whole project's report, not s1's.
    throw new UsageError(
      `unexpected argument ${JSON.stringify(unexpected)}: baton ${name} takes options only`,
    );
  }
  return { values, positionals: parsed.positionals };
}

/**
 * A TypeError while a command works with a server's results: the server answered a success in
 * a shape this baton does not read (another program, or another Baton version). Said as
 * `unavailable` with the fault, instead of a crash; undefined when no server is configured.
 */
function unreadableAnswer(context: Context | undefined, error: unknown): BatonError | undefined {
  if (!(error instanceof TypeError)) return undefined;
  let server: ReturnType<Context['server']>;
  try {
    server = context?.server();
  } catch {
    return undefined;
  }
  if (server === undefined) return undefined;
  return new BatonError(
    'unavailable',
    `the server at ${server.url} answered in a form this baton cannot read (${error.message}): check --server, and that the server runs the same Baton version as this baton (baton --version)`,
    { url: server.url, fault: error.message },
  );
}

/**
 * Run the CLI with argv (without node and the script); returns the exit code. Everything it
 * writes passes visibleControls: stored text (an agent's handoff, a server's message) never
 * reaches the terminal as control sequences, and JSON output stays the same JSON.
 */
export async function run(argv: readonly string[], terminal: Io): Promise<number> {
  const io: Io = {
    ...terminal,
    out: (text) => terminal.out(visibleControls(text)),
    err: (text) => terminal.err(visibleControls(text)),
  };
  // `baton help work show` is `baton work show --help`.
  const words = argv[0] === 'help' && argv.length > 1 ? [...argv.slice(1), '--help'] : [...argv];
  if (words.length === 0 || words[0] === '--help' || words[0] === '-h' || words[0] === 'help') {
    io.out(overview());
    return words.length === 0 ? 2 : 0;
  }
  if (words[0] === '--version' || words[0] === '-v' || words[0] === 'version') {
    io.out(versionLine());
    return 0;
  }
  const name = findCommand(words);
  if (name === undefined) {
    const group = Object.keys(commands).filter((candidate) => candidate.startsWith(`${words[0]} `));
    if (group.length > 0 && (words[1] === '--help' || words[1] === '-h')) {
      io.out(groupHelp(words[0]!, group));
      return 0;
    }
    if (group.length > 0) {
      io.err(
        `baton ${words[0]}: name one of: ${group.map((candidate) => `baton ${candidate}`).join(', ')}\n`,
      );
      return 2;
    }
    const closest = closestCommand(words[0]!);
    io.err(
      `baton: unknown command ${JSON.stringify(words[0])}${closest ? `; did you mean baton ${closest}?` : ''}\n` +
        'baton --help lists the commands\n',
    );
    return 2;
  }
  const command = commands[name]!;
  const rest = words.slice(name.split(' ').length);
  let values: Values = {};
  let context: ReturnType<typeof createContext> | undefined;
  try {
    const parsed = parseOptions(name, command, rest);
    values = parsed.values;
    if (values.help === true) {
      io.out(help(command));
      return 0;
    }
    context = createContext(values, parsed.positionals, io, {
      createsDatabase: command.createsDatabase === true,
    });
    await command.run(context);
    return 0;
  } catch (error) {
    if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      const usage = !(error instanceof UsageError) || error.showUsage;
      io.err(
        `baton ${name}: ${(error as Error).message}\n${usage ? `\nUsage: ${alignOptions(command.usage)}\n` : ''}`,
      );
      return 2;
    }
    if (error instanceof BatonError) {
      io.err(failure(name, command, error, values, io.env));
      return 1;
    }
    if (isSystemError(error)) {
      // A file that is missing, a port in use, a folder not writable: the caller can fix it.
      io.err(
        values.json === true
          ? failure(name, command, systemFailure(error), values)
          : `baton ${name}: ${error.message}\n`,
      );
      return 1;
    }
    const unreadable = unreadableAnswer(context, error);
    if (unreadable !== undefined) {
      io.err(failure(name, command, unreadable, values, io.env));
      return 1;
    }
    throw error;
  } finally {
    await context?.close();
  }
}
