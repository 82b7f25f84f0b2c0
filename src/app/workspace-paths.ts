/**
 * Whether a path a contract names lies inside the session's workspace, after resolving `..`
 * and symbolic links. A path that does not exist yet is judged by its nearest existing
 * ancestor, so a link pointing out of the workspace cannot smuggle a new file outside it.
 */
import { realpathSync } from 'node:fs';
import { readlink, realpath, stat, type FileHandle } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, normalize, relative, resolve, sep } from 'node:path';

function within(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

/** The real path of `path`, resolving the links of every ancestor that exists. */
function realPath(path: string): string {
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
export async function openedInside(workspace: string, handle: FileHandle, path: string): Promise<boolean> {
  const root = realPath(resolve(workspace));
  const opened = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => undefined);
  if (opened !== undefined && isAbsolute(opened)) return within(root, opened.replace(/ \(deleted\)$/, ''));
  try {
    const named = await realpath(resolve(workspace, path));
    const [held, found] = await Promise.all([handle.stat(), stat(named)]);
    return within(root, named) && held.dev === found.dev && held.ino === found.ino;
  } catch {
    return false;
  }
}
