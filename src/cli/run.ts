/**
 * The `baton` command: parses arguments, calls one operation, renders the result. Data goes
 * to stdout (JSON where a program reads it), progress and errors to stderr. Exit codes: 0 ok,
 * 1 the operation refused (a BatonError), 2 a usage error.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { exportStream, importStream } from '../app/ledger.ts';
import { BatonError } from '../core/errors.ts';
import type { JsonObject, JsonValue } from '../core/json.ts';
import { entryLine } from '../core/ledger/jsonl.ts';
import { describeStream, streamKey, type StreamKey } from '../core/ledger/names.ts';
import { openStore, parseStoreLocation } from '../store/open.ts';
import type { Store } from '../store/store.ts';

export interface Io {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
}

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export const defaultProject = 'default';

type Options = ParseArgsConfig['options'];

const common = {
  database: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} satisfies Options;

const streamOptions = {
  ...common,
  project: { type: 'string', short: 'p' },
  scope: { type: 'string', short: 's' },
  session: { type: 'string' },
} satisfies Options;

interface Command {
  readonly summary: string;
  readonly usage: string;
  readonly options: Options;
  run(
    store: () => Promise<Store>,
    values: Record<string, string | boolean | undefined>,
    positionals: string[],
    io: Io,
  ): Promise<void>;
}

const databaseHelp = `  --database URL|PATH   a SQLite file (default .baton/baton.db) or a postgres:// URL;
                        the environment variable BATON_DATABASE_URL sets the same`;

function text(values: Record<string, unknown>, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

function required(values: Record<string, unknown>, name: string): string {
  const value = text(values, name);
  if (value === undefined || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

function whole(values: Record<string, unknown>, name: string): number | undefined {
  const value = text(values, name);
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value))
    throw new UsageError(`--${name} takes a whole number, not ${JSON.stringify(value)}`);
  return Number(value);
}

function streamFrom(values: Record<string, unknown>): StreamKey {
  const project = text(values, 'project') ?? defaultProject;
  const scope = text(values, 'scope');
  const session = text(values, 'session');
  if ((scope === undefined) === (session === undefined)) {
    throw new UsageError('name exactly one stream: --scope SCOPE_ID or --session SESSION_ID');
  }
  return scope !== undefined ? streamKey(project, 'scope', scope) : streamKey(project, 'session', session!);
}

function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

async function* lines(path: string): AsyncGenerator<string> {
  const input = path === '-' ? process.stdin : createReadStream(path, 'utf8');
  yield* createInterface({ input, crlfDelay: Infinity });
}

async function status(store: Store, io: Io, project_id?: string): Promise<void> {
  const projects = await store.listProjects();
  if (projects.length === 0) io.out('No projects yet.\n');
  for (const project of projects) {
    if (project_id !== undefined && project.project_id !== project_id) continue;
    const streams = await store.listStreams(project.project_id);
    io.out(`project ${project.project_id}: ${streams.length} stream(s)\n`);
    for (const info of streams) {
      const name = info.stream.kind === 'scope' ? info.stream.scope_id : info.stream.session_id;
      io.out(`  ${info.stream.kind} ${name}: ${info.head} entr${info.head === 1 ? 'y' : 'ies'}\n`);
    }
  }
}

export const commands: Record<string, Command> = {
  start: {
    summary: 'open the ledger (creating it and the default project), show what it holds and what to do next',
    usage: `baton start [--database URL|PATH]\n\n${databaseHelp}`,
    options: common,
    async run(open, _values, _positionals, io) {
      const store = await open();
      await store.createProject(defaultProject);
      const where = store.backend === 'sqlite' ? 'SQLite' : 'PostgreSQL';
      io.out(`Baton ledger ready on ${where}.\n`);
      await status(store, io);
      io.out(
        [
          '',
          'Next:',
          '  npm run baton -- capture --scope my-work --source-id first-note --text "Where the work stands"',
          '  npm run baton -- read --scope my-work',
          '  npm run baton -- ledger export --scope my-work --out my-work.jsonl',
          '  npm run baton -- --help',
          '',
        ].join('\n'),
      );
    },
  },
  status: {
    summary: 'list projects and their streams with entry counts',
    usage: `baton status [--project ID] [--json]\n\n${databaseHelp}`,
    options: { ...common, project: { type: 'string', short: 'p' }, json: { type: 'boolean' } },
    async run(open, values, _positionals, io) {
      const store = await open();
      if (values.json === true) {
        const projects = await store.listProjects();
        const all = [];
        for (const project of projects) {
          if (values.project !== undefined && project.project_id !== values.project) continue;
          all.push({ ...project, streams: await store.listStreams(project.project_id) });
        }
        io.out(json({ projects: all }));
        return;
      }
      await status(store, io, text(values, 'project'));
    },
  },
  'project create': {
    summary: 'create a project (an existing one is left as it is)',
    usage: `baton project create <project_id>\n\n${databaseHelp}`,
    options: common,
    async run(open, _values, positionals, io) {
      const [id] = positionals;
      if (id === undefined || positionals.length > 1) throw new UsageError('give exactly one project id');
      io.out(json(await (await open()).createProject(id)));
    },
  },
  capture: {
    summary: 'capture a source into a workstream; prints its receipt {source_ref, position, digest}',
    usage: `baton capture --scope SCOPE_ID --source-id ID (--text TEXT | --json-file FILE | --file FILE) [--kind KIND] [--project ID]

  --source-id ID     a stable id you choose; capturing the same content again returns the same receipt
  --text TEXT        the content as a string
  --file FILE        the content as the text of a file
  --json-file FILE   the content as the JSON value in a file
  --kind KIND        stored as metadata.kind
  --project ID       default "${defaultProject}"
${databaseHelp}`,
    options: {
      ...streamOptions,
      'source-id': { type: 'string' },
      text: { type: 'string' },
      file: { type: 'string' },
      'json-file': { type: 'string' },
      kind: { type: 'string' },
    },
    async run(open, values, _positionals, io) {
      const scope_id = required(values, 'scope');
      const source_id = required(values, 'source-id');
      const given = ['text', 'file', 'json-file'].filter((name) => values[name] !== undefined);
      if (given.length !== 1) throw new UsageError('give the content once: --text, --file or --json-file');
      let content: JsonValue;
      if (values.text !== undefined) content = required(values, 'text');
      else if (values.file !== undefined) content = await readFile(required(values, 'file'), 'utf8');
      else {
        const path = required(values, 'json-file');
        try {
          content = JSON.parse(await readFile(path, 'utf8')) as JsonValue;
        } catch (error) {
          throw new UsageError(`${path} is not JSON: ${(error as Error).message}`);
        }
      }
      const kind = text(values, 'kind');
      const metadata: JsonObject = kind === undefined ? {} : { kind };
      const project_id = text(values, 'project') ?? defaultProject;
      const receipt = await (
        await open()
      ).captureSource({ project_id, scope_id }, { source_id, content, metadata });
      io.out(json(receipt));
    },
  },
  retract: {
    summary: 'purge a source that must not be kept; a tombstone keeps its id, digest and position',
    usage: `baton retract --scope SCOPE_ID --source-id ID --reason TEXT [--project ID]\n\n${databaseHelp}`,
    options: { ...streamOptions, 'source-id': { type: 'string' }, reason: { type: 'string' } },
    async run(open, values, _positionals, io) {
      const project_id = text(values, 'project') ?? defaultProject;
      const entry = await (
        await open()
      ).retractSource(
        { project_id, scope_id: required(values, 'scope') },
        required(values, 'source-id'),
        required(values, 'reason'),
      );
      io.out(`${entryLine(entry)}\n`);
    },
  },
  read: {
    summary: 'print the entries of a stream as JSONL (baton.entry/v1 lines), in position order',
    usage: `baton read (--scope SCOPE_ID | --session ID) [--from N] [--to N] [--project ID]\n\n${databaseHelp}`,
    options: { ...streamOptions, from: { type: 'string' }, to: { type: 'string' } },
    async run(open, values, _positionals, io) {
      const stream = streamFrom(values);
      const range = { from: whole(values, 'from'), to: whole(values, 'to') };
      for await (const entry of (await open()).readStream(stream, range)) io.out(`${entryLine(entry)}\n`);
    },
  },
  'ledger export': {
    summary:
      'write a stream as JSONL: a baton.ledger-export/v1 header, then one baton.entry/v1 line per entry',
    usage: `baton ledger export (--scope SCOPE_ID | --session ID) [--out FILE] [--project ID]

  --out FILE   write there instead of stdout; progress goes to stderr
${databaseHelp}`,
    options: { ...streamOptions, out: { type: 'string' } },
    async run(open, values, _positionals, io) {
      const stream = streamFrom(values);
      const out = text(values, 'out');
      const file = out === undefined ? undefined : createWriteStream(out, { flags: 'wx' });
      const write = file
        ? (chunk: string) =>
            new Promise<void>((resolve, reject) =>
              file.write(chunk, (error) => (error ? reject(error) : resolve())),
            )
        : io.out;
      try {
        const { entries } = await exportStream({ store: await open() }, stream, write, (done, total) => {
          if (done % 10_000 === 0) io.err(`exported ${done}/${total} entries\n`);
        });
        io.err(`exported ${entries} entries of ${describeStream(stream)}${out ? ` to ${out}` : ''}\n`);
      } finally {
        if (file) await new Promise<void>((resolve) => file.end(resolve));
      }
    },
  },
  'ledger import': {
    summary:
      'read a JSONL export into a new stream (the one in its header unless --scope/--session names another)',
    usage: `baton ledger import FILE [--scope SCOPE_ID | --session ID] [--project ID]

  FILE   a file written by baton ledger export, or - for stdin. A torn last line is skipped
         with a warning; entry types this Baton does not know are kept and listed.
${databaseHelp}`,
    options: streamOptions,
    async run(open, values, positionals, io) {
      const [path] = positionals;
      if (path === undefined || positionals.length > 1)
        throw new UsageError('give exactly one FILE (or - for stdin)');
      const into =
        values.scope !== undefined || values.session !== undefined ? streamFrom(values) : undefined;
      const store = await open();
      const project = into?.project_id ?? text(values, 'project');
      if (project !== undefined) await store.createProject(project);
      const report = await importStream({ store }, lines(path), into);
      for (const warning of report.warnings) io.err(`warning: line ${warning.line}: ${warning.message}\n`);
      for (const [type, count] of Object.entries(report.unknown_types)) {
        io.err(`note: kept ${count} entr${count === 1 ? 'y' : 'ies'} of unknown type ${type}\n`);
      }
      io.out(json(report));
    },
  },
};

function overview(): string {
  const width = Math.max(...Object.keys(commands).map((name) => name.length));
  return [
    'baton: an evidence-backed work relay for people and AI agents.',
    '',
    'Usage: baton <command> [options]      baton <command> --help for its options',
    '',
    'Commands:',
    ...Object.entries(commands).map(([name, command]) => `  ${name.padEnd(width)}  ${command.summary}`),
    '',
    databaseHelp,
    '',
  ].join('\n');
}

/** Run the CLI with argv (without node and the script); returns the exit code. */
export async function run(argv: readonly string[], io: Io): Promise<number> {
  const words = [...argv];
  if (words.length === 0 || words[0] === '--help' || words[0] === '-h' || words[0] === 'help') {
    io.out(overview());
    return words.length === 0 ? 2 : 0;
  }
  const name = commands[`${words[0]} ${words[1]}`] ? `${words[0]} ${words[1]}` : words[0]!;
  const command = commands[name];
  if (!command) {
    io.err(`baton: unknown command ${JSON.stringify(name)}\n\n${overview()}`);
    return 2;
  }
  const rest = words.slice(name.split(' ').length);
  let store: Store | undefined;
  try {
    const parsed = parseArgs({ args: rest, options: command.options, allowPositionals: true, strict: true });
    const values = parsed.values as Record<string, string | boolean | undefined>;
    const positionals = parsed.positionals;
    if (values.help === true) {
      io.out(`${command.summary}\n\nUsage: ${command.usage}\n`);
      return 0;
    }
    const open = async () => {
      const database = (values.database as string | undefined) ?? io.env.BATON_DATABASE_URL;
      store ??= await openStore(parseStoreLocation(database));
      return store;
    };
    await command.run(open, values, positionals, io);
    return 0;
  } catch (error) {
    if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      io.err(`baton ${name}: ${(error as Error).message}\n\nUsage: ${command.usage}\n`);
      return 2;
    }
    if (error instanceof BatonError) {
      io.err(`baton ${name}: ${error.code}: ${error.message}\n`);
      if (Object.keys(error.data).length > 0) io.err(`${JSON.stringify(error.data)}\n`);
      return 1;
    }
    throw error;
  } finally {
    await store?.close();
  }
}
