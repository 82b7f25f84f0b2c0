import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { CheckpointTooLarge, workspaceCheckpoint } from '../src/agent/checkpoint.ts';
import { digestPattern } from '../src/core/canonical.ts';

const exec = promisify(execFile);
const dirs: string[] = [];

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'baton-checkpoint-'));
  dirs.push(dir);
  return dir;
}

/** git without optional locks, so that the test's own `git status` does not refresh the index. */
async function git(cwd: string, ...args: string[]): Promise<string> {
  const env = { ...process.env, GIT_OPTIONAL_LOCKS: '0' };
  return (
    await exec('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.com', ...args], { cwd, env })
  ).stdout;
}

function write(root: string, path: string, content: string): void {
  mkdirSync(join(root, path, '..'), { recursive: true });
  writeFileSync(join(root, path), content);
}

/** A committed repository: a.txt, src/b.ts, a script and a .gitignore for logs and node_modules. */
async function repo(): Promise<string> {
  const root = tempDir();
  await git(root, 'init', '--quiet');
  write(root, 'a.txt', 'alpha\n');
  write(root, 'src/b.ts', 'export const b = 1;\n');
  write(root, 'run.sh', 'echo run\n');
  write(root, '.gitignore', '*.log\nnode_modules/\n');
  await git(root, 'add', '.');
  await git(root, 'commit', '--quiet', '-m', 'initial');
  return root;
}

async function checkpoint(root: string): Promise<string> {
  return (await workspaceCheckpoint(root)).checkpoint;
}

/** Every file under .git with its bytes' hash and mtime, and the folder's own mtime. */
function gitDirSnapshot(root: string): Record<string, string> {
  const snapshot: Record<string, string> = { '.': String(statSync(join(root, '.git')).mtimeMs) };
  const visit = (relative: string): void => {
    for (const entry of readdirSync(join(root, '.git', relative), { withFileTypes: true })) {
      const path = join(relative, entry.name);
      const stats = statSync(join(root, '.git', path));
      if (entry.isDirectory()) {
        snapshot[`${path}/`] = String(stats.mtimeMs);
        visit(path);
      } else {
        const bytes = readFileSync(join(root, '.git', path));
        snapshot[path] = `${stats.mtimeMs} ${createHash('sha256').update(bytes).digest('hex')}`;
      }
    }
  };
  visit('');
  return snapshot;
}

describe('workspaceCheckpoint in a Git work tree', () => {
  it('is a sha256 digest that depends only on content: same files, same checkpoint', async () => {
    const first = await repo();
    const second = await repo();
    const result = await workspaceCheckpoint(first);
    expect(result.checkpoint).toMatch(digestPattern);
    expect(result.files).toBe(4);
    expect(await checkpoint(first)).toBe(result.checkpoint);
    expect(await checkpoint(second)).toBe(result.checkpoint);
  });

  it('changes when a tracked file is edited, and comes back when the edit is undone', async () => {
    const root = await repo();
    const before = await checkpoint(root);
    write(root, 'a.txt', 'alpha!\n');
    const edited = await checkpoint(root);
    expect(edited).not.toBe(before);
    await git(root, 'add', 'a.txt');
    expect(await checkpoint(root)).toBe(edited);
    write(root, 'a.txt', 'alpha\n');
    expect(await checkpoint(root)).toBe(before);
  });

  it('changes when an untracked file is added', async () => {
    const root = await repo();
    const before = await checkpoint(root);
    write(root, 'notes/new.md', 'new\n');
    const after = await workspaceCheckpoint(root);
    expect(after.checkpoint).not.toBe(before);
    expect(after.files).toBe(5);
  });

  it('counts a tracked file deleted from disk as deleted', async () => {
    const root = await repo();
    const before = await checkpoint(root);
    unlinkSync(join(root, 'src/b.ts'));
    const deleted = await workspaceCheckpoint(root);
    expect(deleted.checkpoint).not.toBe(before);
    expect(deleted.files).toBe(3);
    await git(root, 'rm', '--quiet', '--cached', 'src/b.ts');
    expect(await checkpoint(root)).toBe(deleted.checkpoint);
  });

  it('changes when a file is renamed with the same content', async () => {
    const root = await repo();
    const before = await checkpoint(root);
    renameSync(join(root, 'a.txt'), join(root, 'a2.txt'));
    expect(await checkpoint(root)).not.toBe(before);
  });

  it('changes with the executable bit, not with other permission bits', async () => {
    const root = await repo();
    const before = await checkpoint(root);
    chmodSync(join(root, 'run.sh'), 0o664);
    expect(await checkpoint(root)).toBe(before);
    chmodSync(join(root, 'run.sh'), 0o755);
    expect(await checkpoint(root)).not.toBe(before);
  });

  it('changes when a symlink points elsewhere', async () => {
    const root = await repo();
    symlinkSync('a.txt', join(root, 'link'));
    const before = await checkpoint(root);
    unlinkSync(join(root, 'link'));
    symlinkSync('run.sh', join(root, 'link'));
    expect(await checkpoint(root)).not.toBe(before);
  });

  it('does not change for ignored files', async () => {
    const root = await repo();
    const before = await checkpoint(root);
    write(root, 'debug.log', 'noise\n');
    write(root, 'node_modules/pkg/index.js', 'module.exports = 1;\n');
    expect(await checkpoint(root)).toBe(before);
  });

  it('handles names with spaces and newlines', async () => {
    const root = await repo();
    write(root, 'odd name\nwith newline.txt', 'x\n');
    const before = await workspaceCheckpoint(root);
    expect(before.files).toBe(5);
    write(root, 'odd name\nwith newline.txt', 'y\n');
    expect(await checkpoint(root)).not.toBe(before.checkpoint);
  });

  it('covers a nested repository by its own files', async () => {
    const root = await repo();
    const nested = join(root, 'vendor/lib');
    mkdirSync(nested, { recursive: true });
    await git(nested, 'init', '--quiet');
    write(nested, 'lib.c', 'int x;\n');
    const before = await checkpoint(root);
    write(nested, 'lib.c', 'int y;\n');
    expect(await checkpoint(root)).not.toBe(before);
  });

  it("runs no command the work tree's own Git config names (core.fsmonitor), here or in a nested repository", async () => {
    const root = await repo();
    const nested = join(root, 'vendor/lib');
    mkdirSync(nested, { recursive: true });
    await git(nested, 'init', '--quiet');
    write(nested, 'c.txt', 'gamma\n');
    const before = await workspaceCheckpoint(root);
    const marker = join(tempDir(), 'ran');
    // What a process that may write the workspace (the agent being verified) could plant: git
    // runs core.fsmonitor as a command on ls-files, outside any sandbox, as the server.
    for (const at of [root, nested]) {
      await git(at, 'config', 'core.fsmonitor', `echo ran >> '${marker}'; false`);
    }
    const after = await workspaceCheckpoint(root);
    expect(() => readFileSync(marker, 'utf8')).toThrow(/ENOENT/);
    // .git/config is not among the files a checkpoint covers, so the checkpoint is the same.
    expect(after).toEqual(before);
  });

  it('writes nothing: git status, the index and every file under .git stay as they were', async () => {
    const root = await repo();
    write(root, 'a.txt', 'changed\n');
    write(root, 'untracked.txt', 'u\n');
    // Stale stat data in the index: a git command that refreshes the index would rewrite it.
    const past = new Date(Date.now() - 3_600_000);
    utimesSync(join(root, 'src/b.ts'), past, past);
    const status = await git(root, 'status', '--porcelain');
    const before = gitDirSnapshot(root);
    await workspaceCheckpoint(root);
    await workspaceCheckpoint(root);
    expect(gitDirSnapshot(root)).toEqual(before);
    expect(await git(root, 'status', '--porcelain')).toBe(status);
    // The snapshot does see a write: a plain `git update-index --refresh` rewrites the index.
    await exec('git', ['update-index', '-q', '--refresh'], { cwd: root }).catch(() => undefined);
    expect(gitDirSnapshot(root)).not.toEqual(before);
  });
});

describe('workspaceCheckpoint outside Git', () => {
  function plainDir(): string {
    const root = tempDir();
    write(root, 'a.txt', 'alpha\n');
    write(root, 'sub/b.txt', 'beta\n');
    return root;
  }

  it('hashes every file: same content, same checkpoint; edits, additions and renames change it', async () => {
    const root = plainDir();
    const result = await workspaceCheckpoint(root);
    expect(result.files).toBe(2);
    expect(await checkpoint(plainDir())).toBe(result.checkpoint);
    write(root, 'sub/b.txt', 'beta2\n');
    const edited = await checkpoint(root);
    expect(edited).not.toBe(result.checkpoint);
    write(root, 'node_modules/x.js', '1\n');
    const added = await checkpoint(root);
    expect(added).not.toBe(edited);
    renameSync(join(root, 'a.txt'), join(root, 'c.txt'));
    expect(await checkpoint(root)).not.toBe(added);
  });

  it('skips .git folders and names files the same way as in Git', async () => {
    const root = plainDir();
    const before = await checkpoint(root);
    write(root, '.git/HEAD', 'not a repository\n');
    expect(await checkpoint(root)).toBe(before);
    const tracked = tempDir();
    await git(tracked, 'init', '--quiet');
    write(tracked, 'a.txt', 'alpha\n');
    write(tracked, 'sub/b.txt', 'beta\n');
    expect(await checkpoint(tracked)).toBe(before);
  });

  it('throws for a root that does not exist', async () => {
    await expect(workspaceCheckpoint(join(tempDir(), 'missing'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('workspaceCheckpoint leaves out the ledger and stays bounded', () => {
  it("never counts an excluded path (the database's files), or a folder's files, in Git or not", async () => {
    for (const root of [await repo(), tempDir()]) {
      write(root, 'a.txt', 'alpha\n');
      const before = await workspaceCheckpoint(root, { exclude: [join(root, '.baton')] });
      write(root, '.baton/baton.db', 'records\n');
      write(root, '.baton/baton.db-wal', 'more records\n');
      const after = await workspaceCheckpoint(root, { exclude: [join(root, '.baton')] });
      expect(after).toEqual(before);
      write(root, 'ledger.db', 'records\n');
      const files = { exclude: [join(root, '.baton'), join(root, 'ledger.db')] };
      expect(await workspaceCheckpoint(root, files)).toEqual(before);
      // A sibling whose name merely starts the same still counts.
      write(root, '.baton-notes', 'notes\n');
      expect((await workspaceCheckpoint(root, files)).files).toBe(before.files + 1);
      // Not excluded, the database changes the checkpoint with every write.
      expect((await workspaceCheckpoint(root)).checkpoint).not.toBe(before.checkpoint);
    }
  });

  it('refuses a workspace past its bounds of files or bytes, in Git or not', async () => {
    for (const root of [await repo(), tempDir()]) {
      for (let at = 0; at < 12; at += 1) write(root, `many/${at}.txt`, 'x'.repeat(100));
      await expect(workspaceCheckpoint(root, { max_files: 10 })).rejects.toBeInstanceOf(CheckpointTooLarge);
      await expect(workspaceCheckpoint(root, { max_files: 10 })).rejects.toMatchObject({
        limit: 'max_files',
      });
      await expect(workspaceCheckpoint(root, { max_bytes: 1_000 })).rejects.toMatchObject({
        limit: 'max_bytes',
      });
      const within = await workspaceCheckpoint(root, { max_files: 100, max_bytes: 10_000 });
      expect(within.files).toBeGreaterThanOrEqual(12);
    }
  });
});
