/**
 * What a command runs with: its parsed options, the terminal, the local store (opened on first
 * use), the transport and the scope. Scope resolution is explicit `--scope` > BATON_SCOPE >
 * this Git work tree's binding; with none of them a command refuses and lists the project's
 * workstreams: it never chooses one, even when only one exists.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { systemClock } from '../core/clock.ts';
import { BatonError } from '../core/errors.ts';
import { scopeIdSchema } from '../core/ledger/names.ts';
import { serverAddressProblem } from '../core/urls.ts';
import {
  findDefaultSqlite,
  openStore,
  parseStoreLocation,
  sqliteAbove,
  type StoreLocation,
} from '../store/open.ts';
import type { Store } from '../store/store.ts';
import { readBinding, type Binding } from './binding.ts';
import { defaultProject, text, UsageError, type Io, type Values } from './command.ts';
import { localTransport, serverTransport, type Transport } from './transport.ts';

export type ScopeSource = 'option' | 'environment' | 'binding';

export interface ResolvedScope {
  readonly scope_id: string;
  readonly from: ScopeSource;
}

export interface ServerConnection {
  readonly url: string;
  readonly token: string;
}

/**
 * A server address must be an http(s) URL: "127.0.0.1:4680" without its scheme is refused, not
 * crashed on. One with a user name or password is refused too (the token authenticates, and
 * fetch refuses such a URL), and no message repeats what came before its `@`.
 */
function serverUrl(given: string): string {
  const problem = serverAddressProblem(given);
  if (problem !== undefined) throw new UsageError(`--server (or BATON_SERVER) ${problem}`);
  return given;
}

export interface Context {
  readonly values: Values;
  readonly positionals: readonly string[];
  readonly io: Io;
  readonly cwd: string;
  /** Print text, or the value as JSON with --json. */
  readonly print: (value: unknown, human: () => string) => void;
  /**
   * The local store, opened once: the first call decides how. A server asks for SQLite's
   * writer thread, so that its event loop never waits for a COMMIT.
   */
  store(options?: { readonly writerThread?: boolean }): Promise<Store>;
  /** Where the local store is: --database, else BATON_DATABASE_URL, else the nearest .baton/baton.db. */
  location(): StoreLocation;
  /**
   * The server to call and its token (--server and --token, or BATON_SERVER and BATON_TOKEN),
   * checked; undefined when none is set and commands use the local store.
   */
  server(): ServerConnection | undefined;
  /** The server when --server or BATON_SERVER is set, else the local store. */
  transport(): Promise<Transport>;
  /** The project a local command works on: --project, else the binding's, else "default". */
  project(): Promise<string>;
  /** The workstream, or a refusal that lists the candidates. */
  scope(): Promise<ResolvedScope>;
  /** The workstream when one is named or bound; undefined (the whole project) otherwise. */
  optionalScope(): Promise<ResolvedScope | undefined>;
  binding(): Promise<Binding | undefined>;
  close(): Promise<void>;
}

/**
 * A binding that another project than --project's holds: its workstream is that project's,
 * and carrying its scope_id into another project would write there silently.
 */
function otherProjectBinding(binding: Binding | undefined, project: string | undefined): boolean {
  return binding !== undefined && project !== undefined && project !== binding.project_id;
}

/** The database a command works on, for people: "SQLite PATH" or "PostgreSQL" (never its URL). */
export function databaseName(context: Context): string {
  const location = context.location();
  return location.backend === 'sqlite' ? `SQLite ${location.path}` : 'PostgreSQL';
}

export function createContext(
  values: Values,
  positionals: readonly string[],
  io: Io,
  options: { readonly createsDatabase?: boolean } = {},
): Context {
  const cwd = io.cwd ?? process.cwd();
  let store: Promise<Store> | undefined;
  let binding: Promise<Binding | undefined> | undefined;
  let transport: Promise<Transport> | undefined;

  /** The database --database or BATON_DATABASE_URL names; undefined for the default. */
  const named = (): string | undefined => {
    const option = text(values, 'database');
    if (option !== undefined && option.trim() === '') {
      throw new UsageError('--database needs a SQLite file path or a postgres:// URL');
    }
    return option ?? (io.env.BATON_DATABASE_URL?.trim() || undefined);
  };
  const where = (): StoreLocation => {
    const given = named();
    return given === undefined
      ? { backend: 'sqlite', path: findDefaultSqlite(cwd) }
      : parseStoreLocation(given);
  };

  const context: Context = {
    values,
    positionals,
    io,
    cwd,
    location: where,
    print(value, human) {
      io.out(values.json === true ? `${JSON.stringify(value, null, 2)}\n` : human());
    },
    store(opening = {}) {
      store ??= (async () => {
        const location = where();
        if (
          !options.createsDatabase &&
          location.backend === 'sqlite' &&
          location.path !== ':memory:' &&
          !existsSync(resolve(cwd, location.path))
        ) {
          // A read (or a typo in --database) must not leave an empty database behind.
          const above = named() === undefined ? sqliteAbove(cwd) : undefined;
          throw new BatonError(
            'not_found',
            `no Baton database at ${location.path}: create it with baton init, or name yours with --database` +
              (above === undefined
                ? ''
                : `; ${above} above is not used by default, which looks no higher than the Git work tree and skips other users' folders: name it with --database to use it`),
            above === undefined ? { path: location.path } : { path: location.path, above },
          );
        }
        return openStore(location, opening);
      })();
      return store;
    },
    binding() {
      binding ??= readBinding(cwd).then((found) => found?.binding);
      return binding;
    },
    async project() {
      return text(values, 'project') ?? (await context.binding())?.project_id ?? defaultProject;
    },
    server() {
      const url = text(values, 'server') ?? (io.env.BATON_SERVER || undefined);
      if (url === undefined) {
        // Without a server, baton opens the local database, where a token grants nothing: a
        // --token given there would be silently ignored (a read-only token would "write").
        if (text(values, 'token') !== undefined) {
          throw new UsageError(
            `--token needs a server: add --server URL (or BATON_SERVER), or drop --token to use the local database`,
          );
        }
        return undefined;
      }
      if (text(values, 'project') !== undefined) {
        throw new UsageError(`on a server the token decides the project: drop --project (or drop --server)`);
      }
      const token = text(values, 'token') ?? (io.env.BATON_TOKEN || undefined);
      if (!token) throw new UsageError(`--server ${url} needs a token: --token TOKEN or BATON_TOKEN`);
      return { url: serverUrl(url), token };
    },
    transport() {
      transport ??= (async () => {
        const server = context.server();
        if (server !== undefined) return serverTransport(server.url, server.token);
        const opened = await context.store();
        const location = where();
        const named = location.backend === 'sqlite' ? location.path : 'PostgreSQL';
        return localTransport({ store: opened, clock: systemClock }, await context.project(), named);
      })();
      return transport;
    },
    async optionalScope() {
      const given = text(values, 'scope');
      const bound = async (): Promise<ResolvedScope | undefined> => {
        const found = await context.binding();
        return found === undefined || otherProjectBinding(found, text(values, 'project'))
          ? undefined
          : { scope_id: found.scope_id, from: 'binding' };
      };
      const scope: ResolvedScope | undefined =
        given !== undefined
          ? { scope_id: given, from: 'option' }
          : io.env.BATON_SCOPE
            ? { scope_id: io.env.BATON_SCOPE, from: 'environment' }
            : await bound();
      if (scope && !scopeIdSchema.safeParse(scope.scope_id).success) {
        throw new UsageError(
          `${JSON.stringify(scope.scope_id)} (from the ${scope.from}) is not a scope_id: 1-200 visible ASCII characters`,
        );
      }
      return scope;
    },
    async scope() {
      const scope = await context.optionalScope();
      if (scope) return scope;
      const report = await (await context.transport()).invoke('get_report', {});
      const candidates = 'workstreams' in report ? report.workstreams.map((w) => w.scope_id) : [];
      const how =
        'name the workstream: --scope SCOPE_ID, BATON_SCOPE=SCOPE_ID, or bind this Git work tree once with baton bind SCOPE_ID';
      const binding = await context.binding();
      const project = text(values, 'project');
      const bound =
        binding && otherProjectBinding(binding, project)
          ? `this work tree is bound to workstream ${binding.scope_id} of project ${binding.project_id}, not ${project}; `
          : '';
      throw new UsageError(
        candidates.length === 0
          ? `${bound}no workstream is named or bound, and the project has none yet: ${how}`
          : `${bound}no workstream is named or bound; Baton does not choose one for you. Candidates:\n${candidates
              .map((id) => `  ${id}`)
              .join('\n')}\n${how}`,
        { showUsage: false },
      );
    },
    async close() {
      if (store) await (await store.catch(() => undefined))?.close();
    },
  };
  return context;
}
