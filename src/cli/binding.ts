/**
 * The Git-private workspace binding: which project and workstream a Git work tree works on.
 * It lives in `<git-dir>/baton/binding.json` (`git rev-parse --absolute-git-dir`), which Git
 * never tracks, so it is private to this clone (and to this linked work tree, which has a git
 * dir of its own). It is a convenience for choosing a scope, never access control.
 */
import { execFile } from 'node:child_process';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { z } from 'zod';
import { BatonError } from '../core/errors.ts';
import { projectIdSchema, scopeIdSchema } from '../core/ledger/names.ts';

const exec = promisify(execFile);

export const bindingSchema = z.looseObject({
  schema: z.literal('baton.workspace-binding/v1'),
  project_id: projectIdSchema,
  scope_id: scopeIdSchema,
  bound_at: z.string(),
});

export type Binding = z.output<typeof bindingSchema>;

/** The git directory of the work tree at cwd; undefined outside a work tree (or without git). */
export async function gitDir(cwd: string): Promise<string | undefined> {
  try {
    const { stdout } = await exec('git', ['rev-parse', '--is-inside-work-tree', '--absolute-git-dir'], {
      cwd,
    });
    const [inside, dir] = stdout.trim().split('\n');
    return inside === 'true' && dir ? dir : undefined;
  } catch {
    return undefined;
  }
}

export function bindingPath(dir: string): string {
  return join(dir, 'baton', 'binding.json');
}

async function requireGitDir(cwd: string): Promise<string> {
  const dir = await gitDir(cwd);
  if (!dir) {
    throw new BatonError(
      'precondition_failed',
      `${cwd} is not inside a Git work tree; run this where the work is (the binding lives in its .git directory)`,
      { cwd },
    );
  }
  return dir;
}

/** Whether a file operation failed because the path is a folder (fs.rm says so in its own code). */
function isFolderError(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return code === 'EISDIR' || code === 'ERR_FS_EISDIR';
}

/** The binding's path holds a folder: nothing Baton wrote, so Baton leaves removing it to a person. */
function folderInstead(path: string): BatonError {
  return new BatonError(
    'invalid_input',
    `${path} is a folder, not a binding file: remove it (rm -r '${path}'), then bind again`,
    { path },
  );
}

/** The binding of the work tree at cwd, if any; invalid_input when the file is damaged. */
export async function readBinding(cwd: string): Promise<{ binding: Binding; path: string } | undefined> {
  const dir = await gitDir(cwd);
  if (!dir) return undefined;
  const path = bindingPath(dir);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    if (isFolderError(error)) throw folderInstead(path);
    throw error;
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  const parsed = bindingSchema.safeParse(value);
  if (!parsed.success) {
    throw new BatonError(
      'invalid_input',
      `the workspace binding ${path} is damaged; run baton unbind, then bind again`,
      {
        path,
      },
    );
  }
  return { binding: parsed.data, path };
}

export async function writeBinding(cwd: string, binding: Binding): Promise<string> {
  const path = bindingPath(await requireGitDir(cwd));
  await mkdir(join(path, '..'), { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(binding, null, 2)}\n`, { mode: 0o600 });
  try {
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    if (isFolderError(error) || (error as NodeJS.ErrnoException).code === 'ENOTEMPTY')
      throw folderInstead(path);
    throw error;
  }
  return path;
}

/** Remove the binding; returns the path it was at, or undefined when there was none. */
export async function removeBinding(cwd: string): Promise<string | undefined> {
  const path = bindingPath(await requireGitDir(cwd));
  try {
    await rm(path);
    return path;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    if (isFolderError(error)) throw folderInstead(path);
    throw error;
  }
}
