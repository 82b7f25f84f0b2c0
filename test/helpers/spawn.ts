/** The `baton` CLI as a child process of its own (signals, a server that keeps running). */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { cliMain } from './git.ts';

export interface Running {
  readonly child: ChildProcessWithoutNullStreams;
  stdout(): string;
  stderr(): string;
  /** The first match of pattern in stdout, waiting for it. */
  waitFor(pattern: RegExp): Promise<RegExpMatchArray>;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

export function spawnBaton(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Running {
  const child = spawn(process.execPath, [cliMain, ...args], { cwd, env });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    async waitFor(pattern) {
      const deadline = Date.now() + 20_000;
      for (;;) {
        const match = out.match(pattern);
        if (match) return match;
        if (child.exitCode !== null || Date.now() > deadline) {
          throw new Error(`no ${String(pattern)} in the output of baton ${args.join(' ')}:\n${out}\n${err}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}
