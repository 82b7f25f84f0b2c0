/**
 * The ledger itself: projects and streams, capturing and retracting sources, reading a stream,
 * and JSONL export and import. capture and retract are operations (they work on a server too);
 * the others read or write the local store directly, as an administrator would.
 */
import { once } from 'node:events';
import { createReadStream, createWriteStream, rmSync } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { finished } from 'node:stream/promises';
import { exportStream, importStream } from '../../app/ledger.ts';
import type { JsonValue } from '../../core/json.ts';
import { entryLine } from '../../core/ledger/jsonl.ts';
import { describeStream, streamKey, type StreamKey } from '../../core/ledger/names.ts';
import type { Store } from '../../store/store.ts';
import {
  common,
  databaseHelp,
  defaultProject,
  json,
  required,
  scopeHelp,
  scopedOptions,
  text,
  transportHelp,
  UsageError,
  whole,
  type Command,
  type Io,
  type Values,
} from '../command.ts';
import type { Context } from '../context.ts';
import { namedFileError, readInput } from '../files.ts';
import * as render from '../render.ts';

const streamOptions = {
  ...common,
  project: { type: 'string', short: 'p' },
  scope: { type: 'string', short: 's' },
  session: { type: 'string' },
} as const;

function streamFrom(values: Values): StreamKey {
  const project = text(values, 'project') ?? defaultProject;
  const scope = text(values, 'scope');
  const session = text(values, 'session');
  if ((scope === undefined) === (session === undefined)) {
    throw new UsageError('name exactly one stream: --scope SCOPE_ID or --session SESSION_ID');
  }
  return scope !== undefined ? streamKey(project, 'scope', scope) : streamKey(project, 'session', session!);
}

async function* lines(path: string): AsyncGenerator<string> {
  const input = path === '-' ? process.stdin : createReadStream(path, 'utf8');
  try {
    yield* createInterface({ input, crlfDelay: Infinity });
  } catch (error) {
    throw namedFileError(error, path);
  }
}

/**
 * A file error that says what to do about --out, keeping the errno fields so that run() reports
 * it in one line with exit 1 (a system error the caller can fix).
 */
function outError(cause: NodeJS.ErrnoException, message: string): NodeJS.ErrnoException {
  const { code, syscall, path } = cause;
  return Object.assign(new Error(message, { cause }), { code, syscall, path });
}

async function isFolder(path: string): Promise<boolean> {
  return stat(path).then(
    (found) => found.isDirectory(),
    () => false,
  );
}

async function cannotCreate(given: string, path: string, error: NodeJS.ErrnoException): Promise<Error> {
  if (error.code === 'EISDIR' || (await isFolder(path))) {
    return outError(
      error,
      `--out ${given} is a folder: name a file in it, such as ${join(given, 'export.jsonl')}`,
    );
  }
  switch (error.code) {
    case 'EEXIST':
      return outError(error, `--out ${given} exists: choose another file or remove it`);
    case 'ENOENT':
      if (await isFolder(dirname(path))) break;
      return outError(
        error,
        `--out ${given}: the folder ${dirname(path)} does not exist: create it or choose another path`,
      );
    case 'ENOTDIR':
      return outError(
        error,
        `--out ${given}: part of ${dirname(path)} is a file, not a folder: choose another path`,
      );
  }
  return outError(
    error,
    `--out ${given} cannot be created (${error.message}): choose a place you can write to`,
  );
}

/**
 * While an export writes path, Ctrl-C (SIGINT) or SIGTERM removes the partial file, then ends
 * the process by that signal as it would have ended anyway. Returns how to stop watching.
 */
function removeOnSignal(path: string, file: { destroy(): void }): () => void {
  const signals = ['SIGINT', 'SIGTERM'] as const;
  const stop = () => {
    for (const signal of signals) process.off(signal, interrupted);
  };
  function interrupted(signal: NodeJS.Signals): void {
    stop();
    file.destroy();
    rmSync(path, { force: true });
    process.kill(process.pid, signal);
  }
  for (const signal of signals) process.once(signal, interrupted);
  return stop;
}

/**
 * Create the file --out names (never an existing one) and fill it through write; resolves once
 * every byte is written, flushed to disk and the file closed. On any failure, or Ctrl-C, the
 * file is removed, so an export is whole or absent.
 */
async function writeNewFile<T>(
  given: string,
  cwd: string,
  fill: (write: (chunk: string) => Promise<void>) => Promise<T>,
): Promise<T> {
  const path = resolve(cwd, given);
  const file = createWriteStream(path, { flags: 'wx', flush: true });
  let failure: NodeJS.ErrnoException | undefined;
  file.on('error', (error) => (failure ??= error));
  try {
    await once(file, 'open');
  } catch (error) {
    throw await cannotCreate(given, path, error as NodeJS.ErrnoException);
  }
  const stopWatching = removeOnSignal(path, file);
  try {
    const result = await fill(async (chunk) => {
      if (failure) throw failure;
      if (!file.write(chunk)) await once(file, 'drain');
    });
    file.end();
    await finished(file);
    return result;
  } catch (error) {
    file.destroy();
    await rm(path, { force: true });
    if (!failure) throw error;
    throw outError(
      failure,
      `--out ${given} could not be written (${failure.message}); the partial file was removed`,
    );
  } finally {
    stopWatching();
  }
}

/** Projects and their streams with entry counts, as people read them. */
export async function printStatus(store: Store, io: Io, project_id?: string): Promise<void> {
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

const status: Command = {
  summary: 'list projects and their streams with entry counts (local database)',
  usage: `baton status [--project ID] [--json]\n\n${databaseHelp}`,
  examples: ['baton status', 'baton status --project default --json'],
  options: { ...common, project: { type: 'string', short: 'p' }, json: { type: 'boolean' } },
  async run(context: Context) {
    const store = await context.store();
    const only = text(context.values, 'project');
    // A project named and missing is not_found, not an empty answer.
    if (only !== undefined) await store.getProject(only);
    if (context.values.json === true) {
      const all = [];
      for (const project of await store.listProjects()) {
        if (only !== undefined && project.project_id !== only) continue;
        all.push({ ...project, streams: await store.listStreams(project.project_id) });
      }
      context.io.out(json({ projects: all }));
      return;
    }
    await printStatus(store, context.io, only);
  },
};

const projectCreate: Command = {
  createsDatabase: true,
  positionals: true,
  summary: 'create a project (an existing one is left as it is)',
  usage: `baton project create <project_id> [--json]\n\n${databaseHelp}`,
  examples: ['baton project create billing', 'baton project create billing --json'],
  options: { ...common, json: { type: 'boolean' } },
  async run(context) {
    const [id] = context.positionals;
    if (id === undefined || context.positionals.length > 1)
      throw new UsageError('give exactly one project id');
    const project = await (await context.store()).createProject(id);
    context.print(project, () => `Project ${project.project_id} is ready.\n`);
  },
};

const capture: Command = {
  summary: 'capture a source into a workstream; prints its receipt {source_ref, position, digest}',
  usage: `baton capture --source-id ID (--text TEXT | --json-file FILE | --file FILE) [--kind KIND] [options]

  --source-id ID     a stable id you choose; capturing the same content again returns the same receipt
  --text TEXT        the content as a string
  --file FILE        the content as the text of a file (UTF-8); - reads standard input
  --json-file FILE   the content as the JSON value in a file; - reads standard input
  --kind KIND        stored as metadata.kind
${scopeHelp}
${transportHelp}`,
  examples: ['baton capture --scope my-work --source-id first-note --text "Where the work stands"'],
  operations: ['capture_source'],
  fields: { kind: '--kind', content: '--text/--file/--json-file', source_id: '--source-id' },
  options: {
    ...scopedOptions,
    'source-id': { type: 'string' },
    text: { type: 'string' },
    file: { type: 'string' },
    'json-file': { type: 'string' },
    kind: { type: 'string' },
  },
  async run(context) {
    const values = context.values;
    const source_id = required(values, 'source-id');
    const given = ['text', 'file', 'json-file'].filter((name) => values[name] !== undefined);
    if (given.length !== 1) throw new UsageError('give the content once: --text, --file or --json-file');
    let content: JsonValue;
    if (values.text !== undefined) content = required(values, 'text');
    else if (values.file !== undefined) content = await readInput(required(values, 'file'));
    else {
      const path = required(values, 'json-file');
      const source = await readInput(path);
      try {
        content = JSON.parse(source) as JsonValue;
      } catch (error) {
        throw new UsageError(`${path} is not JSON: ${(error as Error).message}`);
      }
    }
    const kind = text(values, 'kind');
    const { scope_id } = await context.scope();
    const receipt = await (
      await context.transport()
    ).invoke('capture_source', { scope_id, source_id, content, ...(kind === undefined ? {} : { kind }) });
    context.print(receipt, () =>
      [render.receipt('Source', receipt), `  exact reference: ${source_id}@${receipt.digest}\n`].join(''),
    );
  },
};

const retract: Command = {
  summary: 'purge a source that must not be kept; a tombstone keeps its id, digest and position',
  usage: `baton retract --source-id ID --reason TEXT [options]

  --source-id ID        the source to purge: its content goes, its id, digest and position stay
  --reason TEXT         why (1-1000 characters, stored with the tombstone: never the secret itself)
${scopeHelp}
${transportHelp}`,
  examples: ['baton retract --scope my-work --source-id leaked-key --reason "contained a secret"'],
  operations: ['retract_source'],
  fields: { reason: '--reason', source_id: '--source-id' },
  options: { ...scopedOptions, 'source-id': { type: 'string' }, reason: { type: 'string' } },
  async run(context) {
    const source_id = required(context.values, 'source-id');
    const reason = required(context.values, 'reason');
    const { scope_id } = await context.scope();
    const entry = await (await context.transport()).invoke('retract_source', { scope_id, source_id, reason });
    context.print(
      entry,
      () =>
        `Source ${source_id} retracted from ${scope_id} at position ${entry.position}: its content is purged; ` +
        `its id and digest ${entry.digest} stay, and citations of it read as unavailable.\n` +
        `  reason: ${entry.retracted?.reason ?? reason}\n`,
    );
  },
};

const read: Command = {
  summary: 'print the entries of a stream as JSONL (baton.entry/v1 lines), in position order',
  usage: `baton read (--scope SCOPE_ID | --session ID) [--from N] [--to N] [--project ID]\n\n${databaseHelp}`,
  examples: ['baton read --scope my-work --from 1 --to 10'],
  options: { ...streamOptions, from: { type: 'string' }, to: { type: 'string' } },
  async run(context) {
    const stream = streamFrom(context.values);
    const range = { from: whole(context.values, 'from', { min: 1 }), to: whole(context.values, 'to') };
    for await (const entry of (await context.store()).readStream(stream, range))
      context.io.out(`${entryLine(entry)}\n`);
  },
};

const ledgerExport: Command = {
  positionals: true,
  summary: 'write a stream as JSONL: a baton.ledger-export/v1 header, then one baton.entry/v1 line per entry',
  usage: `baton ledger export (<session> | --session ID | --scope SCOPE_ID) [--out FILE] [--project ID]

  SESSION      the session stream to export (the same as --session SESSION)
  --out FILE   write a new file there instead of stdout (an existing one is refused, and the
               file is removed again if the export fails); progress goes to stderr
${databaseHelp}`,
  examples: [
    'baton ledger export fix-login --out fix-login.jsonl',
    'baton ledger export --scope my-work --out my-work.jsonl',
  ],
  options: { ...streamOptions, out: { type: 'string' } },
  async run(context) {
    const { io, values, positionals } = context;
    if (positionals.length > 1) throw new UsageError('name one session, not several');
    const [session] = positionals;
    if (session !== undefined && (values.session !== undefined || values.scope !== undefined)) {
      throw new UsageError('name the stream once: a SESSION argument, --session or --scope');
    }
    const stream = streamFrom(session === undefined ? values : { ...values, session });
    const out = text(values, 'out');
    if (out === '') {
      throw new UsageError('--out is empty: name a file, or leave --out off to write to stdout', {
        showUsage: false,
      });
    }
    const store = await context.store();
    const exportTo = (write: (chunk: string) => void | Promise<void>) =>
      exportStream({ store }, stream, write, (done, total) => {
        if (done % 10_000 === 0) io.err(`exported ${done}/${total} entries\n`);
      });
    // The success line comes only after the file is whole, flushed and closed.
    const { entries } =
      out === undefined ? await exportTo(io.out) : await writeNewFile(out, context.cwd, exportTo);
    // Standard output that failed (a full disk) has been reported: no success line then.
    if (out === undefined && (await io.flushed?.()) === false) return;
    io.err(
      `exported ${entries} entries of ${describeStream(stream)}${out === undefined ? '' : ` to ${out}`}\n`,
    );
  },
};

const ledgerImport: Command = {
  createsDatabase: true,
  positionals: true,
  summary:
    'read a JSONL export into a new stream (the one in its header unless --scope/--session names another)',
  usage: `baton ledger import FILE [--scope SCOPE_ID | --session ID] [--project ID] [--json]

  FILE          a file written by baton ledger export, or - for stdin. It must hold the
                header's head entries: a file cut short is refused and nothing is written. A
                torn line after them is skipped with a warning; entry types this Baton does
                not know are kept and listed.
  --scope, --session
                the stream to write (default: the one the header names)
  --project ID  the project to write into (default: the header's with neither --scope nor
                --session, else "default"); it is created if it does not exist, and only if
                the import succeeds
${databaseHelp}`,
  examples: [
    'baton ledger import my-work.jsonl --scope restored',
    'baton ledger import my-work.jsonl --project other',
    'baton ledger import my-work.jsonl --scope restored --json',
  ],
  options: { ...streamOptions, json: { type: 'boolean' } },
  async run(context) {
    const { io, values, positionals } = context;
    const [path] = positionals;
    if (path === undefined || positionals.length > 1)
      throw new UsageError('give exactly one FILE (or - for stdin)');
    const into = values.scope !== undefined || values.session !== undefined ? streamFrom(values) : undefined;
    const project_id = text(values, 'project');
    const store = await context.store();
    const report = await importStream({ store }, lines(path), {
      ...(into ? { into } : project_id === undefined ? {} : { project_id }),
      createProject: true,
    });
    for (const warning of report.warnings) io.err(`warning: line ${warning.line}: ${warning.message}\n`);
    for (const [type, count] of Object.entries(report.unknown_types)) {
      io.err(`note: kept ${count} entr${count === 1 ? 'y' : 'ies'} of unknown type ${type}\n`);
    }
    context.print(
      report,
      () =>
        `Imported ${report.entries} entr${report.entries === 1 ? 'y' : 'ies'} into ${describeStream(report.stream)}.\n`,
    );
  },
};

export const ledgerCommands: Record<string, Command> = {
  status,
  'project create': projectCreate,
  capture,
  retract,
  read,
  'ledger export': ledgerExport,
  'ledger import': ledgerImport,
};
