/** Opening a Store from where it lives: a SQLite file path (the default) or a postgres:// URL. */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { Clock } from '../core/clock.ts';
import { BatonError } from '../core/errors.ts';
import type { Store } from './store.ts';
import { openSqliteStore, type SqliteSynchronous } from './sqlite/sqlite-store.ts';

export type StoreLocation =
  | { readonly backend: 'sqlite'; readonly path: string; readonly synchronous?: SqliteSynchronous }
  | { readonly backend: 'postgres'; readonly url: string; readonly schema?: string };

export const defaultSqlitePath = join('.baton', 'baton.db');

/** A postgres:// or postgresql:// URL selects PostgreSQL; anything else is a SQLite file path. */
export function parseStoreLocation(value: string | undefined): StoreLocation {
  const text = value?.trim() || defaultSqlitePath;
  if (/^postgres(ql)?:\/\//i.test(text)) return { backend: 'postgres', url: text };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
    throw new BatonError(
      'invalid_input',
      `unsupported database URL ${text.split('://')[0]}://; use a file path or postgres://`,
    );
  }
  return { backend: 'sqlite', path: text };
}

/**
 * Where the default database is for a command run in cwd: the nearest `.baton/baton.db` in cwd
 * or a folder above it up to the top of cwd's Git work tree (the folder holding `.git`), so a
 * command run anywhere inside a work tree uses that work tree's ledger. Outside a Git work tree
 * only cwd's own counts: a ledger left in a shared folder above (/tmp, a home folder) never
 * captures a command. A folder above cwd that another user owns is passed over, as Git passes
 * over a repository it does not trust. A linked work tree with none of its own uses its main
 * work tree's. Without one, cwd's own path, to create or to refuse.
 */
export function findDefaultSqlite(cwd: string): string {
  const here = resolve(cwd);
  const own = join(here, defaultSqlitePath);
  if (existsSync(own)) return own;
  const top = workTreeTop(here);
  if (top === undefined) return own;
  const uid = process.getuid?.();
  const usable = (candidate: string) =>
    existsSync(candidate) && (uid === undefined || statSync(candidate).uid === uid);
  for (let folder = here; folder !== top;) {
    folder = dirname(folder);
    const candidate = join(folder, defaultSqlitePath);
    if (usable(candidate)) return candidate;
  }
  // A linked work tree (git worktree add) shares the ledger of its repository's main one.
  const main = mainWorkTree(top);
  if (main !== undefined && usable(join(main, defaultSqlitePath))) return join(main, defaultSqlitePath);
  return own;
}

/**
 * The main work tree of a linked one whose top is `top`, read the way Git does: `.git` is a
 * file `gitdir: <repo>/.git/worktrees/<name>`, whose `commondir` names the repository's git
 * directory, and the main work tree is the folder holding it. Undefined for a main work tree,
 * a bare repository or anything unreadable.
 */
function mainWorkTree(top: string): string | undefined {
  try {
    const dotGit = join(top, '.git');
    if (!statSync(dotGit).isFile()) return undefined;
    const gitdir = /^gitdir: (.+)$/m.exec(readFileSync(dotGit, 'utf8'))?.[1]?.trim();
    if (!gitdir) return undefined;
    const linkedDir = resolve(top, gitdir);
    const common = resolve(linkedDir, readFileSync(join(linkedDir, 'commondir'), 'utf8').trim());
    return basename(common) === '.git' ? dirname(common) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The nearest `.baton/baton.db` in a folder above cwd, however far up: not a default (see
 * findDefaultSqlite), only something to name when cwd has none.
 */
export function sqliteAbove(cwd: string): string | undefined {
  for (let folder = dirname(resolve(cwd)); ; folder = dirname(folder)) {
    const candidate = join(folder, defaultSqlitePath);
    if (existsSync(candidate)) return candidate;
    if (dirname(folder) === folder) return undefined;
  }
}

/** The nearest folder at or above `folder` that holds `.git` (a directory, or a linked tree's file). */
function workTreeTop(folder: string): string | undefined {
  for (let at = folder; ; at = dirname(at)) {
    if (existsSync(join(at, '.git'))) return at;
    if (dirname(at) === at) return undefined;
  }
}

export interface OpenOptions {
  readonly clock?: Clock;
  /**
   * For a long-running server: SQLite's writes run on a writer thread of their own, so the
   * server's event loop never waits for a COMMIT (docs/sqlite-writer-thread.md). PostgreSQL
   * and an in-memory SQLite database ignore it. The writer thread keeps the system clock.
   */
  readonly writerThread?: boolean;
}

export async function openStore(location: StoreLocation, options: OpenOptions = {}): Promise<Store> {
  if (location.backend === 'sqlite') {
    const sqlite = { path: location.path, synchronous: location.synchronous, clock: options.clock };
    // An in-memory database lives in one connection: it keeps its writes inline.
    if (options.writerThread === true && location.path !== ':memory:') {
      const { openThreadedSqliteStore } = await import('./sqlite/threaded-store.ts');
      return openThreadedSqliteStore(sqlite);
    }
    return openSqliteStore(sqlite);
  }
  const { openPostgresStore } = await import('./postgres/postgres-store.ts');
  return openPostgresStore({ url: location.url, schema: location.schema, clock: options.clock });
}
