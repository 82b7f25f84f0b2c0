/**
 * Setting Baton up and running it: init, token create, list and revoke, start, serve and mcp. These work on the
 * local database (tokens are created where they are stored), never through --server.
 */
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  createToken,
  listTokens,
  revokeToken,
  tokenPrefix,
  type CreatedToken,
  type TokenInfo,
} from '../../app/auth.ts';
import type { AppDeps } from '../../app/deps.ts';
import { defaultPort } from '../../core/api.ts';
import { systemClock } from '../../core/clock.ts';
import {
  checkedProject,
  common,
  databaseHelp,
  defaultProject,
  projectHelp,
  projectOption,
  shellWord,
  text,
  UsageError,
  whole,
  type Command,
  type Options,
} from '../command.ts';
import { gitDir } from '../binding.ts';
import { databaseName, type Context } from '../context.ts';
import { appDeps, commandConfig, configHelp, configOption } from '../config.ts';
import type { JudgeConfig } from '../../core/work/config.ts';
import { printStatus } from './ledger.ts';

async function deps(context: Context): Promise<AppDeps> {
  return { store: await context.store(), clock: systemClock };
}

function tokenLines(token: CreatedToken): string {
  return [
    `Token for project ${token.project_id}${token.read_only ? ' (read-only)' : ''}, shown once: keep it now`,
    `  ${token.token}`,
    `  token id ${token.token_id}${token.label ? `, label ${JSON.stringify(token.label)}` : ''}`,
    '',
  ].join('\n');
}

/** Resolves on the first SIGINT or SIGTERM. */
function untilStopped(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve(signal);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

const listenOptions = {
  host: { type: 'string' },
  port: { type: 'string' },
  quiet: { type: 'boolean' },
  'workspace-root': { type: 'string', multiple: true },
} satisfies Options;
const listenHelp = `  --host HOST           default 127.0.0.1; listening beyond loopback requires tokens
  --port N              default ${defaultPort}; 0 picks a free port
  --quiet               no request log (the log never contains tokens)
  --workspace-root DIR  another folder a session started over HTTP may work in, besides this
                        working directory (repeatable); any other workspace is refused 403`;

/** The folders --workspace-root names, made absolute; each must be an existing folder. */
function workspaceRoots(context: Context): string[] {
  const given = context.values['workspace-root'];
  const roots = Array.isArray(given)
    ? given.filter((value): value is string => typeof value === 'string')
    : [];
  return roots.map((root) => {
    const folder = resolve(context.cwd, root);
    if (root.trim() === '' || !existsSync(folder) || !statSync(folder).isDirectory()) {
      throw new UsageError(
        `--workspace-root ${JSON.stringify(root)} is not a folder on this machine: name an existing folder`,
      );
    }
    return folder;
  });
}

/** Who judges semantic criteria on this server (docs/judge.md): said once, at start. */
function judgeLine(judge: JudgeConfig | null, env: Readonly<Record<string, string | undefined>>): string {
  if (judge === null)
    return 'Semantic criteria: no [judge] in baton.toml, so they stay unverified (docs/judge.md)\n';
  const key = env[judge.api_key_env] ? 'set' : 'not set';
  return `Semantic criteria: judged by ${judge.provider}/${judge.model} at ${judge.base_url} (key ${judge.api_key_env}: ${key})\n`;
}

/** Serve the HTTP API until SIGINT or SIGTERM, then shut down gracefully. */
async function serveUntilStopped(context: Context, announce: (url: string) => string): Promise<void> {
  const { startServer } = await import('../../http/server.ts');
  const host = text(context.values, 'host');
  if (host !== undefined && host.trim() === '') {
    // Node would listen on every interface for an empty host: never by accident.
    throw new UsageError('--host takes an address such as 127.0.0.1 or 0.0.0.0, not an empty string');
  }
  const port = whole(context.values, 'port', { max: 65_535 });
  const roots = workspaceRoots(context);
  // Opened here first unless start opened it already, which asks for the writer thread too.
  await context.store({ writerThread: true });
  const server = await startServer({
    deps: await appDeps(context),
    ...(host === undefined ? {} : { host }),
    ...(port === undefined ? {} : { port }),
    logger: context.values.quiet !== true,
    // /mcp's work tools start sessions here, like baton mcp's; HTTP's may name a folder inside
    // it or inside a --workspace-root, and no other.
    workspace: process.cwd(),
    workspaceRoots: roots,
  });
  context.io.out(announce(server.url));
  context.io.out(judgeLine((await commandConfig(context)).judge, context.io.env));
  const signal = await untilStopped();
  context.io.err(`${signal}: stopping the server…\n`);
  await server.close();
  context.io.err('stopped.\n');
}

/**
 * How to run baton as this process was run: `npm run baton --` when npm started it from the
 * checkout (`npm start`, `npm run baton`), else `baton`, the installed command.
 */
function invocation(context: Context): string {
  const script = context.io.env.npm_lifecycle_event;
  return script === 'start' || script === 'baton' ? 'npm run baton --' : 'baton';
}

/**
 * What the next commands need to open the database this one did when --database named it (the
 * environment names it for them too): the flag, or for PostgreSQL, whose URL may hold a
 * password and is never printed, a reminder to give it.
 */
function sameDatabase(context: Context): { flag: string; note: string[] } {
  const given = text(context.values, 'database');
  if (given === undefined) return { flag: '', note: [] };
  return context.location().backend === 'sqlite'
    ? { flag: ` --database ${shellWord(given)}`, note: [] }
    : {
        flag: '',
        note: ['  (give each of these the --database URL you gave here, or set BATON_DATABASE_URL to it)'],
      };
}

/** A command to run next, with what it does in a column after it. */
function nextLine(command: string, what: string): string {
  return `${`  ${command}`.padEnd(53)} # ${what}`;
}

/**
 * In a Git work tree, the two commands that start a workstream there: bind it (unless it is
 * bound to this project already), then the first one-line handoff. Nothing outside one.
 */
async function firstSteps(
  context: Context,
  project_id: string,
  baton: string,
  database: string,
): Promise<string[]> {
  if ((await gitDir(context.cwd)) === undefined) return [];
  // A damaged binding is for bind and unbind to report; the project exists either way.
  const bound = await context.binding().catch(() => undefined);
  const project = project_id === defaultProject ? '' : ` --project ${project_id}`;
  const bind =
    bound?.project_id === project_id
      ? []
      : [nextLine(`${baton} bind SCOPE_ID${project}${database}`, "this work tree's workstream")];
  return [...bind, nextLine(`${baton} handoff "Where the work stands"${database}`, 'its next revision')];
}

const init: Command = {
  createsDatabase: true,
  summary: 'create a project and a token for it; prints the token once',
  usage: `baton init [--project ID] [--label TEXT] [--json]

${projectHelp}
  --label TEXT          a note on the token (default "baton init")
${databaseHelp}`,
  examples: ['baton init', 'baton init --project billing --json'],
  options: { ...common, ...projectOption, label: { type: 'string' }, json: { type: 'boolean' } },
  async run(context) {
    const project_id = checkedProject(await context.project());
    const app = await deps(context);
    const project = await app.store.createProject(project_id);
    const token = await createToken(app, {
      project_id,
      label: text(context.values, 'label') ?? 'baton init',
    });
    const baton = invocation(context);
    const database = sameDatabase(context);
    const start = await firstSteps(context, project_id, baton, database.flag);
    const address = `http://127.0.0.1:${defaultPort}`;
    context.print({ project, token }, () =>
      [
        `Project ${project_id} ready in ${databaseName(context)}.`,
        tokenLines(token),
        'Next:',
        ...database.note,
        ...start,
        nextLine(`${baton} serve${database.flag}`, `the HTTP API on ${address}`),
        `  ${baton} report --server ${address} --token ${token.token.slice(0, 12)}…`,
        '',
      ].join('\n'),
    );
  },
};

const tokenCreate: Command = {
  summary: 'create a bearer token for a project; prints it once (only its hash is stored)',
  usage: `baton token create [--project ID] [--read-only] [--label TEXT] [--json]

${projectHelp}
  --read-only           the token may read but not write
  --label TEXT          a note on the token (not access control)
${databaseHelp}`,
  examples: ['baton token create --project default --read-only --label "report wall"'],
  fields: { label: '--label' },
  options: {
    ...common,
    ...projectOption,
    'read-only': { type: 'boolean' },
    label: { type: 'string' },
    json: { type: 'boolean' },
  },
  async run(context) {
    const project_id = checkedProject(await context.project());
    const token = await createToken(await deps(context), {
      project_id,
      read_only: context.values['read-only'] === true,
      label: text(context.values, 'label') ?? '',
    });
    context.print(token, () => tokenLines(token));
  },
};

function tokenLine(token: TokenInfo): string {
  const state = token.revoked_at === null ? 'live' : `revoked ${token.revoked_at}`;
  const label = token.label ? `  ${JSON.stringify(token.label)}` : '';
  return `${token.token_id}  ${token.read_only ? 'read-only' : 'read-write'}  created ${token.created_at}  ${state}${label}`;
}

const tokenList: Command = {
  summary: "list a project's tokens (never their secrets), revoked ones included",
  usage: `baton token list [--project ID] [--json]

${projectHelp}
  --json                {tokens: [{token_id, project_id, label, read_only, created_at, revoked_at}]}
${databaseHelp}`,
  examples: ['baton token list', 'baton token list --project billing --json'],
  options: { ...common, ...projectOption, json: { type: 'boolean' } },
  async run(context) {
    const project_id = checkedProject(await context.project());
    const tokens = await listTokens(await deps(context), project_id);
    context.print({ tokens }, () =>
      tokens.length === 0
        ? `Project ${project_id} has no tokens: baton token create --project ${project_id}\n`
        : `Tokens of project ${project_id}:\n${tokens.map((token) => `  ${tokenLine(token)}\n`).join('')}`,
    );
  },
};

const tokenRevoke: Command = {
  summary: 'revoke a token at once: it authenticates nothing more, and its web sessions end',
  usage: `baton token revoke TOKEN_ID [--project ID] [--json]

  TOKEN_ID              the token's id, as token create and token list print it (not its secret)
${projectHelp}
  --json                the token's record, with revoked_at
${databaseHelp}`,
  examples: ['baton token revoke 019…', 'baton token list  # to find the id'],
  positionals: true,
  options: { ...common, ...projectOption, json: { type: 'boolean' } },
  async run(context) {
    const [token_id, ...extra] = context.positionals;
    if (token_id === undefined || extra.length > 0) {
      throw new UsageError('name exactly one TOKEN_ID to revoke (baton token list shows them)');
    }
    // A secret pasted in place of the id is never echoed back (terminals and CI logs keep it).
    if (token_id.startsWith(tokenPrefix)) {
      throw new UsageError("that is a token's secret, not its id: baton token list shows the ids");
    }
    const project_id = checkedProject(await context.project());
    const token = await revokeToken(await deps(context), project_id, token_id);
    context.print(token, () => `Revoked ${tokenLine(token)}\n`);
  },
};

const serve: Command = {
  createsDatabase: true,
  summary: 'run the HTTP API (and MCP over HTTP) until Ctrl-C',
  usage: `baton serve [--host HOST] [--port N] [--config FILE]

  Sessions that /mcp's work tools start work in this working directory: their file and
  shell criteria are checked here. A session started over HTTP may name a folder inside it
  or inside a --workspace-root as its workspace, and no other. Criteria never read the
  database's files, the home folder, /tmp or /run.

${listenHelp}
${configHelp}
${databaseHelp}`,
  examples: ['baton serve', 'baton serve --port 0 --config ./baton.toml'],
  options: { ...common, ...listenOptions, ...configOption },
  async run(context) {
    await serveUntilStopped(
      context,
      (url) => `Baton serving on ${url} (${databaseName(context)}); stop with Ctrl-C\n`,
    );
  },
};

const start: Command = {
  createsDatabase: true,
  summary: 'the newcomer path: create the project and a first token if needed, then serve',
  usage: `baton start [--project ID] [--host HOST] [--port N] [--no-serve]

  Creates the database and the project when missing, and a token when the project has no
  live token yet (printed once), then runs the server like baton serve.
  --no-serve            only open the ledger, show what it holds and what to do next
${projectHelp}
${listenHelp}
${configHelp}
${databaseHelp}`,
  examples: ['npm start', 'baton start --port 0', 'baton start --no-serve'],
  options: {
    ...common,
    ...projectOption,
    ...listenOptions,
    ...configOption,
    'no-serve': { type: 'boolean' },
  },
  async run(context) {
    const project_id = checkedProject(await context.project());
    const serving = context.values['no-serve'] !== true;
    const baton = invocation(context);
    if (serving) await commandConfig(context);
    if (serving) await context.store({ writerThread: true });
    const app = await deps(context);
    await app.store.createProject(project_id);
    if (!serving) {
      const database = sameDatabase(context);
      context.io.out(`Baton ledger ready on ${app.store.backend === 'sqlite' ? 'SQLite' : 'PostgreSQL'}.\n`);
      await printStatus(app.store, context.io);
      context.io.out(
        [
          '',
          'Next:',
          ...database.note,
          `  ${baton} capture --scope my-work --source-id first-note --text "Where the work stands"${database.flag}`,
          `  ${baton} read --scope my-work${database.flag}`,
          `  ${baton} ledger export --scope my-work --out my-work.jsonl${database.flag}`,
          `  ${baton} --help`,
          '',
        ].join('\n'),
      );
      return;
    }
    const live = (await app.store.listTokens(project_id)).filter((token) => token.revoked_at === null);
    const token =
      live.length === 0 ? await createToken(app, { project_id, label: 'baton start' }) : undefined;
    await serveUntilStopped(context, (url) =>
      [
        `Baton is running at ${url}`,
        `  database ${databaseName(context)}, project ${project_id}`,
        token
          ? tokenLines(token)
          : `Project ${project_id} has ${live.length} token(s) already; their secrets were shown when created.\n` +
            `  A new one: ${baton} token create --project ${project_id}\n`,
        'Try it in another terminal:',
        `  export BATON_SERVER=${url} BATON_TOKEN=${token ? token.token : '<your token>'}`,
        `  ${baton} handoff --scope my-work "Write the first handoff"`,
        `  ${baton} report`,
        'Stop with Ctrl-C.',
        '',
      ].join('\n'),
    );
  },
};

const mcp: Command = {
  createsDatabase: true,
  summary: 'serve MCP over stdio for agents that start their tools themselves',
  usage: `baton mcp [--project ID] [--config FILE]

  Speaks MCP on stdin/stdout as the project's owner (a local principal); the project is
  created if missing. Tool results are untrusted history: they grant no authority.
${projectHelp}
${configHelp}
${databaseHelp}`,
  examples: ['baton mcp --project default'],
  options: { ...common, ...projectOption, ...configOption },
  async run(context) {
    const project_id = checkedProject(await context.project());
    const app = await appDeps(context);
    await app.store.createProject(project_id);
    const { runStdioMcp } = await import('../../mcp/stdio.ts');
    // Serves until stdin ends; a signal stops it too (stdin is let go so the process can end).
    const stopped = await Promise.race([
      runStdioMcp({ deps: app, principal: { project_id, token_id: 'local', read_only: false } }),
      untilStopped(),
    ]);
    if (stopped !== undefined) process.stdin.destroy();
  },
};

export const adminCommands: Record<string, Command> = {
  init,
  'token create': tokenCreate,
  'token list': tokenList,
  'token revoke': tokenRevoke,
  start,
  serve,
  mcp,
};
