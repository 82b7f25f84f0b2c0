/**
 * A temporary Git work tree to run the real `baton` CLI in, as a subprocess: `repo` is the work
 * tree (git init), the SQLite database lives beside it in the same temporary folder, and the
 * environment carries no BATON_SERVER, BATON_TOKEN or BATON_SCOPE unless a call adds them.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

export const cliMain = join(import.meta.dirname, '../../src/cli/main.ts');

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface WorkTree {
  /** The temporary folder holding the work tree and the database. */
  readonly dir: string;
  /** The Git work tree. */
  readonly repo: string;
  readonly database: string;
  /** Run `baton ARGS` with cwd (default the work tree) and extra environment. */
  baton(
    args: readonly string[],
    options?: { cwd?: string; env?: Record<string, string> },
  ): Promise<CliResult>;
  git(...args: string[]): Promise<string>;
  dispose(): void;
}

export function cliEnv(database: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, BATON_DATABASE_URL: database, ...extra };
  for (const name of ['BATON_SERVER', 'BATON_TOKEN', 'BATON_SCOPE']) {
    if (!(name in extra)) delete env[name];
  }
  return env;
}

export async function tempWorkTree(): Promise<WorkTree> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-cli-git-'));
  const repo = join(dir, 'work');
  mkdirSync(repo);
  const database = join(dir, 'baton.db');
  await exec('git', ['init', '--quiet', repo]);
  return {
    dir,
    repo,
    database,
    async baton(args, options = {}) {
      try {
        const { stdout, stderr } = await exec(process.execPath, [cliMain, ...args], {
          cwd: options.cwd ?? repo,
          env: cliEnv(database, options.env),
        });
        return { code: 0, stdout, stderr };
      } catch (error) {
        const failed = error as { code: number; stdout: string; stderr: string };
        return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
      }
    },
    async git(...args) {
      return (await exec('git', args, { cwd: repo })).stdout;
    },
    dispose() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
