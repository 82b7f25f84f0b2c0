/**
 * A workspace checkpoint is a content hash of every file a verdict could depend on: it changes
 * whenever a tracked or untracked, not ignored, file changes its content, path, executable bit
 * or symlink target, and computing it never writes anything, not even Git's index.
 *
 * Inside a Git work tree the files are those of `git ls-files --cached --others
 * --exclude-standard` under `root` (so .gitignore applies), read from the work tree as they are
 * now: a tracked file deleted from disk counts as deleted, an edit counts whether staged or not.
 * Outside Git every file under `root` counts except `.git` folders. Nested repositories and
 * submodules count by their own checkpoint. Paths named in `exclude` (the ledger's own files)
 * never count, nor anything under them.
 *
 * It is bounded: a workspace of more than `max_files` entries or `max_bytes` of content is
 * refused with CheckpointTooLarge as soon as that is known, so one request cannot keep the
 * machine hashing for minutes.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, type Stats } from 'node:fs';
import { lstat, readdir, readlink } from 'node:fs/promises';
import { isAbsolute, relative } from 'node:path';
import type { Digest } from '../core/canonical.ts';

export interface WorkspaceCheckpoint {
  /** `sha256:<hex>` over the sorted entries (mode, content hash, path) of the workspace. */
  readonly checkpoint: Digest;
  /** How many entries (files, symlinks, nested repositories) the checkpoint covers. */
  readonly files: number;
}

export interface CheckpointOptions {
  /** Absolute paths that never count, nor anything under them; only those inside the workspace matter. */
  readonly exclude?: readonly string[];
  /** At most this many entries (nested repositories' included); default 250,000. */
  readonly max_files?: number;
  /** At most this many bytes of file content hashed; default 2 GiB. */
  readonly max_bytes?: number;
}

export const checkpointLimits = { max_files: 250_000, max_bytes: 2 * 1024 ** 3 } as const;

/** The workspace holds more than a checkpoint's bounds allow; nothing was decided from it. */
export class CheckpointTooLarge extends Error {
  override readonly name = 'CheckpointTooLarge';
  readonly limit: 'max_files' | 'max_bytes';
  readonly value: number;

  constructor(limit: 'max_files' | 'max_bytes', value: number) {
    super(`the workspace holds more than ${limit === 'max_files' ? `${value} files` : `${value} bytes`}`);
    this.limit = limit;
    this.value = value;
  }
}

/** What is left of the bounds; shared with nested repositories' checkpoints. */
interface Budget {
  readonly max_files: number;
  readonly max_bytes: number;
  files: number;
  bytes: number;
  /** Set once a bound is passed: every worker stops. */
  exceeded: CheckpointTooLarge | undefined;
}

function spend(budget: Budget, files: number, bytes: number): void {
  budget.files += files;
  budget.bytes += bytes;
  if (budget.files > budget.max_files)
    budget.exceeded ??= new CheckpointTooLarge('max_files', budget.max_files);
  if (budget.bytes > budget.max_bytes)
    budget.exceeded ??= new CheckpointTooLarge('max_bytes', budget.max_bytes);
  if (budget.exceeded) throw budget.exceeded;
}

const header = 'baton-workspace-checkpoint/1\n';
const dotGit = Buffer.from('.git');
const slash = Buffer.from('/');
/** Files hashed at the same time. */
const parallelism = 8;

/**
 * Git's own location variables (set inside hooks) would point git at another repository than
 * `root`'s; optional locks off keeps git from refreshing the index as a side effect.
 */
function gitEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, GIT_OPTIONAL_LOCKS: '0' };
  for (const name of [
    'GIT_DIR',
    'GIT_WORK_TREE',
    'GIT_INDEX_FILE',
    'GIT_OBJECT_DIRECTORY',
    'GIT_COMMON_DIR',
  ]) {
    delete env[name];
  }
  return env;
}

/**
 * Settings given on the command line, which win over the work tree's own `.git/config`: whoever
 * may write the workspace (the agent being verified) writes that file too, and git runs
 * `core.fsmonitor` as a command on `ls-files`, outside the sandbox, with the server's rights.
 */
const trustedConfig = ['-c', 'core.fsmonitor=false'];

function git(root: string, args: readonly string[]): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    execFile(
      'git',
      [...trustedConfig, ...args],
      { cwd: root, env: gitEnv(), encoding: 'buffer', maxBuffer: 1024 * 1024 * 1024 },
      (error, stdout) => resolve(error ? undefined : stdout),
    );
  });
}

/** Relative paths (as bytes: Git paths need not be UTF-8) of the files Git would consider, or undefined outside Git. */
async function gitPaths(root: string): Promise<Buffer[] | undefined> {
  const inside = await git(root, ['rev-parse', '--is-inside-work-tree']);
  if (inside?.toString('utf8').trim() !== 'true') return undefined;
  const listed = await git(root, ['ls-files', '-z', '--cached', '--others', '--exclude-standard']);
  if (listed === undefined) return undefined;
  const paths = new Map<string, Buffer>();
  let start = 0;
  for (let end = listed.indexOf(0); end !== -1; end = listed.indexOf(0, start)) {
    let path = listed.subarray(start, end);
    start = end + 1;
    // A nested repository is listed once as `dir/`; an unmerged path once per stage.
    if (path.at(-1) === 0x2f) path = path.subarray(0, -1);
    if (path.length > 0) paths.set(path.toString('latin1'), path);
  }
  return [...paths.values()];
}

/** Relative paths of every entry under `root` except `.git` folders, not following symlinks. */
async function walkPaths(
  root: string,
  budget: Budget,
  prefix?: Buffer,
  found: Buffer[] = [],
): Promise<Buffer[]> {
  const folder = prefix === undefined ? root : absolute(root, prefix);
  for (const entry of await readdir(folder, { withFileTypes: true, encoding: 'buffer' })) {
    if (entry.name.equals(dotGit)) continue;
    const path = prefix === undefined ? entry.name : Buffer.concat([prefix, slash, entry.name]);
    if (entry.isDirectory()) await walkPaths(root, budget, path, found);
    else found.push(path);
    // Counted as found, so a huge tree is refused before it is all listed.
    if (found.length > budget.max_files - budget.files) spend(budget, found.length, 0);
  }
  return found;
}

function absolute(root: string, path: Buffer): Buffer {
  return Buffer.concat([Buffer.from(root.endsWith('/') ? root : `${root}/`), path]);
}

async function fileHash(path: Buffer): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

async function hasGitFolder(path: Buffer): Promise<boolean> {
  try {
    await lstat(Buffer.concat([path, slash, dotGit]));
    return true;
  } catch {
    return false;
  }
}

/** `<mode> <sha256 hex>`, Git's modes; undefined for a path that is gone or not a file. */
async function entryOf(
  path: Buffer,
  budget: Budget,
  exclude: readonly string[],
): Promise<string | undefined> {
  let stats: Stats;
  try {
    stats = await lstat(path);
  } catch {
    return undefined;
  }
  if (stats.isFile()) spend(budget, 0, stats.size);
  if (stats.isSymbolicLink()) {
    const target = await readlink(path, { encoding: 'buffer' });
    return `120000 ${createHash('sha256').update(target).digest('hex')}`;
  }
  if (stats.isFile()) return `${stats.mode & 0o100 ? '100755' : '100644'} ${await fileHash(path)}`;
  if (stats.isDirectory()) {
    // A submodule or nested repository: its own checkpoint; an empty gitlink folder: no files.
    const inner = (await hasGitFolder(path))
      ? await checkpointWithin(path.toString('utf8'), budget, exclude)
      : await checkpointOf(path.toString('utf8'), [], budget, exclude);
    return `160000 ${inner.checkpoint.slice('sha256:'.length)}`;
  }
  return undefined;
}

function byBytes(a: Buffer, b: Buffer): number {
  return Buffer.compare(a, b);
}

/** Relative paths (as bytes) of the excluded paths inside `root`. */
function excludedPrefixes(root: string, exclude: readonly string[]): Buffer[] {
  return exclude.flatMap((folder) => {
    const rel = relative(root, folder);
    return rel === '' || rel.startsWith('..') || isAbsolute(rel) ? [] : [Buffer.from(rel)];
  });
}

function isExcluded(path: Buffer, prefixes: readonly Buffer[]): boolean {
  return prefixes.some(
    (prefix) =>
      path.subarray(0, prefix.length).equals(prefix) &&
      (path.length === prefix.length || path[prefix.length] === 0x2f),
  );
}

async function checkpointOf(
  root: string,
  paths: readonly Buffer[],
  budget: Budget,
  exclude: readonly string[],
): Promise<WorkspaceCheckpoint> {
  const prefixes = excludedPrefixes(root, exclude);
  const sorted = paths.filter((path) => !isExcluded(path, prefixes)).sort(byBytes);
  spend(budget, sorted.length, 0);
  const entries: (string | undefined)[] = new Array<string | undefined>(sorted.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < sorted.length && budget.exceeded === undefined) {
      const index = next;
      next += 1;
      entries[index] = await entryOf(absolute(root, sorted[index] as Buffer), budget, exclude);
    }
  };
  await Promise.all(Array.from({ length: parallelism }, worker));
  const hash = createHash('sha256').update(header);
  let files = 0;
  sorted.forEach((path, index) => {
    const entry = entries[index];
    if (entry === undefined) return;
    files += 1;
    // A path never contains NUL, so `entry TAB path NUL` cannot be read two ways.
    hash.update(`${entry}\t`).update(path).update('\0');
  });
  return { checkpoint: `sha256:${hash.digest('hex')}`, files };
}

async function checkpointWithin(
  root: string,
  budget: Budget,
  exclude: readonly string[],
): Promise<WorkspaceCheckpoint> {
  const paths = (await gitPaths(root)) ?? (await walkPaths(root, budget));
  return checkpointOf(root, paths, budget, exclude);
}

/**
 * The checkpoint of the workspace at `root`. Reads only; throws when `root` cannot be read, and
 * CheckpointTooLarge past its bounds.
 */
export async function workspaceCheckpoint(
  root: string,
  options: CheckpointOptions = {},
): Promise<WorkspaceCheckpoint> {
  const budget: Budget = {
    max_files: options.max_files ?? checkpointLimits.max_files,
    max_bytes: options.max_bytes ?? checkpointLimits.max_bytes,
    files: 0,
    bytes: 0,
    exceeded: undefined,
  };
  return checkpointWithin(root, budget, options.exclude ?? []);
}
