/**
 * The real `baton` CLI as child processes: `runBaton` runs one command to its end, `spawnServe`
 * starts `baton serve --port 0` and reads the address it prints. Both use the given database
 * (a SQLite path or a postgres:// URL) and an environment without BATON_SERVER, BATON_TOKEN or
 * BATON_SCOPE.
 */
import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { promisify } from 'node:util';
import { cliEnv, cliMain, type CliResult } from './git.ts';

const exec = promisify(execFile);

/** `baton ARGS` on the database, in cwd; never throws on a non-zero exit. */
export async function runBaton(args: readonly string[], database: string, cwd: string): Promise<CliResult> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [cliMain, ...args], {
      cwd,
      env: cliEnv(database),
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

export interface ServeProcess {
  readonly child: ChildProcessWithoutNullStreams;
  /** The address the process printed, e.g. http://127.0.0.1:41234. */
  readonly url: string;
  stdout(): string;
  stderr(): string;
  /** SIGTERM (when still running), then the exit code; a signal death gives null. */
  stop(): Promise<number | null>;
}

/**
 * `baton serve --port 0 --quiet` on the database; resolves once it printed its address, rejects
 * when the process exits first or prints nothing within timeoutMs (and then kills it).
 */
export async function spawnServe(
  database: string,
  cwd: string,
  options: { timeoutMs?: number; args?: readonly string[] } = {},
): Promise<ServeProcess> {
  const child = spawn(
    process.execPath,
    [cliMain, 'serve', '--port', '0', '--quiet', ...(options.args ?? [])],
    {
      cwd,
      env: cliEnv(database),
    },
  );
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    return exited;
  };

  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  for (;;) {
    const match = /Baton serving on (http:\/\/\S+) /.exec(out);
    if (match) return { child, url: match[1]!, stdout: () => out, stderr: () => err, stop };
    if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`baton serve printed no address (exit ${String(child.exitCode)}):\n${out}\n${err}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
