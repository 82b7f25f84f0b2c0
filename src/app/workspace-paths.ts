/**
 * Whether a path a contract names lies inside the session's workspace, after resolving `..`
 * and symbolic links. A path that does not exist yet is judged by its nearest existing
 * ancestor, so a link pointing out of the workspace cannot smuggle a new file outside it.
 */
import { realpathSync } from 'node:fs';
import { readlink, realpath, stat, type FileHandle } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, normalize, relative, resolve, sep } from 'node:path';
import { CheckpointTooLarge, workspaceCheckpoint } from '../agent/checkpoint.ts';
import { BatonError } from '../core/errors.ts';
import type { AppDeps } from './deps.ts';

function within(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

/** The real path of `path`, resolving the links of every ancestor that exists. */
export function realPath(path: string): string {
  const missing: string[] = [];
  let at = path;
  for (;;) {
    try {
      return join(realpathSync(at), ...missing.reverse());
    } catch {
      const parent = dirname(at);
      if (parent === at) return path;
      missing.push(basename(at));
      at = parent;
    }
  }
}

export function workspaceChecker(workspace: string | null): (path: string) => boolean {
  if (workspace === null) {
    // No workspace on record: only relative paths that stay below wherever the work runs.
    return (path) => {
      const normal = normalize(path);
      return !isAbsolute(normal) && normal !== '..' && !normal.startsWith(`..${sep}`);
    };
  }
  const root = realPath(resolve(workspace));
  return (path) => {
    const lexical = resolve(workspace, path);
    if (!within(resolve(workspace), lexical)) return false;
    return within(root, realPath(lexical));
  };
}

/**
 * Whether a file already open lies inside the workspace, judged by what was opened, not by its
 * name: a link swapped between a check of the name and the open is caught. Linux names an open
 * file at /proc/self/fd/N; elsewhere the name's real path must be inside and name the very file
 * the handle holds (same device and inode).
 */
export async function openedInside(
  workspace: string,
  handle: FileHandle,
  path: string,
  hidden: readonly string[] = [],
): Promise<boolean> {
  const root = realPath(resolve(workspace));
  const allowed = (real: string) => within(root, real) && !hidden.some((folder) => within(folder, real));
  const opened = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => undefined);
  if (opened !== undefined && isAbsolute(opened)) return allowed(opened.replace(/ \(deleted\)$/, ''));
  try {
    const named = await realpath(resolve(workspace, path));
    const [held, found] = await Promise.all([handle.stat(), stat(named)]);
    return allowed(named) && held.dev === found.dev && held.ino === found.ino;
  } catch {
    return false;
  }
}

/** Whether `path` (resolved against `workspace`, links followed) is, or lies in, one of the `hidden` paths. */
export function isHidden(workspace: string, hidden: readonly string[], path: string): boolean {
  const real = realPath(resolve(workspace, path));
  return hidden.some((folder) => within(folder, real));
}

/**
 * The files of this machine no session's criteria may read, as real paths: the store's own
 * files, which hold every project's records.
 */
export function privateFiles(deps: AppDeps): string[] {
  return deps.store.privateFiles.map((file) => realPath(resolve(file)));
}

/**
 * Refuses, as forbidden, a session workspace this server does not let sessions work in: one
 * outside every folder of `deps.workspace_roots` (when the surface set them: `baton serve` does,
 * so that a client cannot point a session at any folder of the server's machine). Links are
 * resolved first. Checked when a session starts and again each time its workspace is used,
 * since the ledger may hold sessions started elsewhere.
 */
export function checkWorkspaceBoundary(deps: AppDeps, workspace: string): void {
  const real = realPath(resolve(workspace));
  const roots = deps.workspace_roots;
  if (roots === undefined) return;
  if (!roots.some((root) => within(realPath(resolve(root)), real))) {
    throw new BatonError(
      'forbidden',
      `the workspace ${JSON.stringify(workspace)} is outside the folders this server lets sessions work in ` +
        '(the folder baton serve runs in, and each --workspace-root)',
      { workspace },
    );
  }
}

/**
 * The checkpoint of a session's workspace, or an error naming the workspace when it cannot be
 * used: forbidden outside the server's boundary (checkWorkspaceBoundary); precondition_failed
 * when it holds a control character, is missing, is not a folder, cannot be read or is larger
 * than a checkpoint's bounds. A workspace recorded by another machine's session, or deleted
 * since, is then a clear refusal of the gate or the verifier instead of a crash. The store's
 * own files never count.
 */
export async function usableWorkspaceCheckpoint(deps: AppDeps, workspace: string): Promise<string> {
  const refuse = (why: string, data: Record<string, unknown> = {}) =>
    new BatonError('precondition_failed', `the session's workspace ${JSON.stringify(workspace)} ${why}`, {
      workspace,
      ...data,
    });
  // eslint-disable-next-line no-control-regex -- a path with a control character (NUL above all) names no folder
  if (/[\u0000-\u001f]/.test(workspace)) throw refuse('holds a control character; no folder has that name');
  checkWorkspaceBoundary(deps, workspace);
  let info;
  try {
    info = await stat(workspace);
  } catch (error) {
    const { code } = error as NodeJS.ErrnoException;
    throw refuse(code === 'ENOENT' ? 'does not exist on this machine' : `cannot be read (${code})`, {
      errno: code,
    });
  }
  if (!info.isDirectory()) throw refuse('is not a folder');
  try {
    const root = realPath(resolve(workspace));
    return (await workspaceCheckpoint(root, { exclude: privateFiles(deps) })).checkpoint;
  } catch (error) {
    if (error instanceof CheckpointTooLarge) {
      throw refuse(`${error.message}, more than a checkpoint covers: verify in a smaller workspace`, {
        limit: error.limit,
        [error.limit]: error.value,
      });
    }
    const { code, message } = error as NodeJS.ErrnoException;
    throw refuse(`cannot be read (${code ?? message})`, { errno: code ?? null });
  }
}
