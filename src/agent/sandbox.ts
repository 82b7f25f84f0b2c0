/**
 * Runs one shell criterion inside a bubblewrap sandbox that can read the machine but write
 * nothing outside private, sized tmpfs mounts, sees no environment but a minimal PATH, HOME and
 * LANG, has no network, and is held to memory, process and file size limits (sandbox-limits.ts);
 * when that sandbox cannot be proven to work the command is never run.
 *
 * Two checks keep a broken or fake `bwrap` from running a command unsandboxed. A probe first
 * runs a fixed guard script through the same flags and accepts the sandbox only when the guard
 * reports, on a private pipe, that it sees the sandbox's hostname, a cleared environment and a
 * read-only root; a `bwrap` that runs its last argument directly only ever gets the probe's
 * empty command.
 * Then the criterion itself runs behind the same guard, which writes its sentinel and closes the
 * pipe just before it execs the command: a run without the sentinel failed in bwrap's own setup
 * and is `unavailable`, not `failed`.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import { constants, homedir } from 'node:os';
import { isAbsolute, relative } from 'node:path';
import { BatonError } from '../core/errors.ts';
import { prefix } from '../core/text.ts';
import {
  checkLimits,
  guardLimitArguments,
  guardLimitLines,
  limitSeen,
  sandboxLimits,
  watchProcesses,
  type SandboxLimitHit,
  type SandboxLimits,
} from './sandbox-limits.ts';

export {
  describeLimitHit,
  sandboxLimits,
  type SandboxLimitHit,
  type SandboxLimits,
} from './sandbox-limits.ts';

export interface SandboxRequest {
  /** Run with `/bin/sh -c`. */
  readonly command: string;
  /** Absolute path of an existing directory: the working directory, visible read-only. */
  readonly workspace: string;
  /** The whole process tree is killed after this many milliseconds. */
  readonly timeout_ms: number;
  /** stdout and stderr are each cut to this many bytes; `truncated` says whether either was. */
  readonly output_limit_bytes: number;
  /**
   * Absolute paths the command must not read (the ledger's files): a folder becomes an empty,
   * read-only folder, a file an empty one (/dev/null). Missing ones are skipped; the workspace
   * itself is refused as invalid_input, since hiding it would hide the workspace.
   */
  readonly hidden?: readonly string[];
  /** Resource limits over `sandboxLimits`; each must be a positive integer. */
  readonly limits?: Partial<SandboxLimits>;
}

export type SandboxResult =
  | {
      readonly status: 'passed' | 'failed';
      readonly exit_code: number;
      readonly stdout: string;
      readonly stderr: string;
      readonly truncated: boolean;
      readonly duration_ms: number;
      /** On a failure only: the resource limit it most likely hit (see SandboxLimitHit). */
      readonly limit_hit?: SandboxLimitHit;
    }
  | {
      readonly status: 'timed_out';
      readonly stdout: string;
      readonly stderr: string;
      readonly truncated: boolean;
      readonly duration_ms: number;
    }
  | { readonly status: 'unavailable'; readonly reason: 'sandbox_unavailable'; readonly detail: string };

export interface SandboxOptions {
  /** Path or name (looked up on PATH) of the bubblewrap binary; default `bwrap`. */
  readonly bwrap?: string;
  /**
   * Aborting it kills the sandbox at once, as a timeout does; the run then ends `timed_out`.
   * A signal already aborted runs nothing.
   */
  readonly signal?: AbortSignal;
}

export type SandboxProbe =
  { readonly available: true } | { readonly available: false; readonly detail: string };

export const sandboxHostname = 'baton-sandbox';
export const sandboxHome = '/tmp/home';
export const sandboxPath = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Set in bwrap's own environment; the guard refuses to run when `--clearenv` left it visible. */
const guardVariable = 'BATON_SANDBOX_GUARD';
const probeTimeoutMs = 10_000;
const refusedExit = 125;
/** How long to wait for the pipes to close after the process tree was killed. */
const drainGraceMs = 2_000;
const detailLimit = 2_000;
const reportLimit = 4_096;

/**
 * The guard: `$1$2` is the sentinel (split so that echoing the arguments never forges it), `$3`
 * the command, `$4` to `$6` the per-process limits (guardLimitLines). It checks from inside what
 * the flags promise, sets the limits, reports on fd 3, closes fd 3 and only then execs the
 * command, which therefore can neither see nor forge the report.
 */
const guardScript = [
  `refuse() { printf "refused: %s" "$1" >&3; exit ${refusedExit}; }`,
  'read -r name < /proc/sys/kernel/hostname || refuse "no hostname"',
  `[ "$name" = ${sandboxHostname} ] || refuse "not in a private UTS namespace (hostname $name)"`,
  `[ -z "\${${guardVariable}+x}" ] || refuse "the environment was not cleared"`,
  '[ ! -w / ] || refuse "the root file system is writable"',
  '[ ! -w . ] || refuse "the working directory is writable"',
  '[ ! -w /proc/sys/kernel/core_pattern ] || refuse "the kernel settings (/proc/sys) are writable"',
  ...guardLimitLines,
  'printf "%s%s" "$1" "$2" >&3',
  'exec 3>&-',
  'exec /bin/sh -c "$3"',
].join('\n');

function isInside(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** The caller's home directory to hide, or undefined when there is nothing (more) to hide. */
async function homeToHide(): Promise<string | undefined> {
  try {
    const home = await realpath(homedir());
    if (home === '/' || isInside(home, '/tmp') || isInside('/tmp', home)) return undefined;
    return (await stat(home)).isDirectory() ? home : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Folders every sandbox replaces with an empty, writable tmpfs: scratch space, and /run, where
 * host daemons keep their sockets (PostgreSQL's, Docker's). /run only where it exists: bwrap
 * cannot create a mount point in the read-only root.
 */
function scratchFolders(): string[] {
  return existsSync('/run') ? ['/tmp', '/run'] : ['/tmp'];
}

/**
 * The bwrap arguments. Order matters: bwrap mounts in argument order. Empty tmpfs mounts first
 * cover /tmp, /run (host daemons' sockets, such as PostgreSQL's), the caller's home and the
 * hidden folders outside the workspace; the workspace is bound again when one of them covered
 * it; then hidden folders inside the workspace are covered, hidden files become /dev/null, and
 * every covered folder except the scratch ones becomes read-only. A hidden path under a folder
 * already covered (and not bound back with the workspace) needs no mount of its own. A hidden
 * folder the workspace lies in is covered and the workspace alone bound back; the workspace
 * itself is never hidden (runSandboxed refuses that request).
 */
export function bwrapArguments(
  workspace: string,
  hiddenHome: string | undefined,
  hidden: { readonly folders?: readonly string[]; readonly files?: readonly string[] } = {},
  tmpfsBytes: number = sandboxLimits.tmpfs_bytes,
): string[] {
  const { folders = [], files = [] } = hidden;
  const tmpfs = (folder: string): string[] => ['--size', String(tmpfsBytes), '--tmpfs', folder];
  const args = [
    '--die-with-parent',
    '--new-session',
    '--unshare-all',
    '--hostname',
    sandboxHostname,
    '--cap-drop',
    'ALL',
    '--clearenv',
    '--setenv',
    'PATH',
    sandboxPath,
    '--setenv',
    'HOME',
    sandboxHome,
    '--setenv',
    'LANG',
    'C.UTF-8',
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    // bwrap cannot size the tmpfs of /dev: it becomes read-only (device files stay usable),
    // and /dev/shm, the one folder there programs write, a tmpfs of its own.
    '--remount-ro',
    '/dev',
    ...tmpfs('/dev/shm'),
    '--proc',
    '/proc',
    // The kernel's settings, read-only: root without capabilities may still write them (a
    // server running as root), and kernel.core_pattern names a program the kernel runs as
    // root, outside any sandbox. Bound from the host's /proc: a setting of a namespace
    // (the hostname) still reads the reader's own.
    '--ro-bind',
    '/proc/sys',
    '/proc/sys',
  ];
  const scratch = scratchFolders();
  for (const folder of scratch) args.push(...tmpfs(folder));
  args.push('--dir', sandboxHome);
  const covered = [...scratch, ...(hiddenHome === undefined ? [] : [hiddenHome])];
  const coveredBy = (folder: string, by: readonly string[]) => by.some((cover) => isInside(folder, cover));
  const outside = folders.filter((folder) => !isInside(folder, workspace) && !coveredBy(folder, covered));
  const inside = folders.filter((folder) => isInside(folder, workspace) && folder !== workspace);
  const emptied = files.filter((file) =>
    isInside(file, workspace) ? !coveredBy(file, inside) : !coveredBy(file, [...covered, ...outside]),
  );
  const readOnly = [...(hiddenHome === undefined ? [] : [hiddenHome]), ...outside, ...inside];
  if (hiddenHome !== undefined) args.push(...tmpfs(hiddenHome));
  for (const folder of outside) args.push(...tmpfs(folder));
  if (coveredBy(workspace, [...covered, ...outside])) args.push('--ro-bind', workspace, workspace);
  for (const folder of inside) args.push(...tmpfs(folder));
  for (const file of emptied) args.push('--ro-bind', '/dev/null', file);
  for (const folder of readOnly) args.push('--remount-ro', folder);
  args.push('--chdir', workspace);
  return args;
}

interface Capture {
  readonly chunks: Buffer[];
  bytes: number;
  truncated: boolean;
}

function capture(): Capture {
  return { chunks: [], bytes: 0, truncated: false };
}

function collect(into: Capture, chunk: Buffer, limit: number): void {
  const room = limit - into.bytes;
  if (chunk.length > room) into.truncated = true;
  if (room <= 0) return;
  const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
  into.chunks.push(kept);
  into.bytes += kept.length;
}

function text(from: Capture): string {
  return Buffer.concat(from.chunks).toString('utf8');
}

type BwrapRun =
  | { readonly kind: 'spawn_failed'; readonly detail: string }
  | {
      readonly kind: 'exited';
      readonly exit_code: number;
      readonly timed_out: boolean;
      /** Killed on reaching the process limit. */
      readonly process_limit: boolean;
      /** Killed because its processes could not be counted: why. */
      readonly uncounted?: string;
      /** bwrap named the sandbox's PID 1, so its processes could be counted. */
      readonly named: boolean;
      readonly report: string;
      readonly stdout: string;
      readonly stderr: string;
      readonly truncated: boolean;
      readonly duration_ms: number;
    };

/**
 * Spawns bwrap in its own process group with nothing of the caller's environment but PATH (to
 * find bwrap), and on timeout, or on counting `processes` processes in it, kills that group;
 * `--die-with-parent` and the PID namespace then take every process of the sandbox down with
 * it. fd 3 carries the guard's report, fd 4 bwrap's info (the sandbox's PID 1, to count from).
 */
function runBwrap(
  bwrap: string,
  args: readonly string[],
  timeoutMs: number,
  limit: number,
  processes: number,
  signal: AbortSignal | undefined,
): Promise<BwrapRun> {
  return new Promise((resolve) => {
    const started = performance.now();
    const stdout = capture();
    const stderr = capture();
    const report = capture();
    let stoppedFor: 'timeout' | 'processes' | { uncounted: string } | undefined;
    let exited = false;
    let settled = false;
    let grace: NodeJS.Timeout | undefined;
    const child = spawn(bwrap, ['--info-fd', '4', ...args], {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH ?? sandboxPath, [guardVariable]: '1' },
    });
    const [, out, err, fd3, fd4] = child.stdio;
    const stopWaiting = (): void => {
      for (const stream of [out, err, fd3, fd4]) stream?.destroy();
    };
    const kill = (reason: NonNullable<typeof stoppedFor>): void => {
      if (grace !== undefined) return;
      // A process outside the sandbox (only a fake bwrap could leave one) may hold the pipes
      // open after bwrap exited or was killed: stop waiting for them after a grace period.
      grace = setTimeout(stopWaiting, drainGraceMs);
      // Once bwrap has exited (and been reaped) its pid may belong to someone else: no kill.
      if (exited) return;
      stoppedFor = reason;
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // The group is already gone.
      }
    };
    const watch = watchProcesses(
      processes,
      () => kill('processes'),
      (detail) => kill({ uncounted: detail }),
    );
    out?.on('data', (chunk: Buffer) => collect(stdout, chunk, limit));
    err?.on('data', (chunk: Buffer) => collect(stderr, chunk, limit));
    fd3?.on('data', (chunk: Buffer) => {
      watch.started();
      collect(report, chunk, reportLimit);
    });
    fd4?.on('data', (chunk: Buffer) => watch.info(chunk));
    const onTimeout = (): void => kill('timeout');
    const timer = setTimeout(onTimeout, timeoutMs);
    signal?.addEventListener('abort', onTimeout, { once: true });
    const finish = (result: BwrapRun): void => {
      if (settled) return;
      settled = true;
      watch.stop();
      clearTimeout(timer);
      clearTimeout(grace);
      signal?.removeEventListener('abort', onTimeout);
      resolve(result);
    };
    child.on('error', (error) =>
      finish({ kind: 'spawn_failed', detail: `cannot start ${bwrap}: ${error.message}` }),
    );
    child.on('exit', () => {
      exited = true;
      watch.stop();
    });
    child.on('close', (code, signal) => {
      const exitCode = code ?? 128 + (signal ? constants.signals[signal] : 0);
      finish({
        kind: 'exited',
        exit_code: exitCode,
        timed_out: stoppedFor === 'timeout',
        process_limit: stoppedFor === 'processes',
        named: watch.named(),
        ...(typeof stoppedFor === 'object' ? { uncounted: stoppedFor.uncounted } : {}),
        report: text(report),
        stdout: text(stdout),
        stderr: text(stderr),
        truncated: stdout.truncated || stderr.truncated,
        duration_ms: Math.round(performance.now() - started),
      });
    });
  });
}

function sentinelParts(): [string, string] {
  return [randomBytes(12).toString('hex'), randomBytes(12).toString('hex')];
}

function guardArguments(parts: readonly [string, string], command: string, limits: SandboxLimits): string[] {
  return [
    '--',
    '/bin/sh',
    '-c',
    guardScript,
    'baton-sandbox-guard',
    parts[0],
    parts[1],
    command,
    ...guardLimitArguments(limits),
  ];
}

function clip(detail: string): string {
  const trimmed = detail.trim();
  return trimmed.length > detailLimit ? `${prefix(trimmed, detailLimit)}…` : trimmed;
}

const unnamed = "bwrap did not name the sandbox's PID 1 (--info-fd): its processes cannot be counted";

/** Why the guard's command did not start, from a run whose report lacks the sentinel. */
function setupFailure(run: Extract<BwrapRun, { kind: 'exited' }>): string {
  if (run.report.startsWith('refused: ')) return `sandbox guard ${run.report}`;
  if (run.timed_out) return 'the sandbox did not start before the timeout';
  const said = run.stderr.trim() === '' ? '' : `: ${clip(run.stderr)}`;
  return `bwrap failed before running the command (exit ${run.exit_code})${said}`;
}

/**
 * Whether bwrap works here: it runs the guard with an empty command through the same flags
 * (workspace `/`) and accepts only the guard's sentinel and a clean exit.
 */
export async function probeSandbox(options: SandboxOptions = {}): Promise<SandboxProbe> {
  const parts = sentinelParts();
  const args = [...bwrapArguments('/', await homeToHide()), ...guardArguments(parts, ':', sandboxLimits)];
  const run = await runBwrap(
    options.bwrap ?? 'bwrap',
    args,
    probeTimeoutMs,
    64 * 1024,
    sandboxLimits.processes,
    undefined,
  );
  if (run.kind === 'spawn_failed') return { available: false, detail: run.detail };
  if (run.report !== parts.join('')) return { available: false, detail: setupFailure(run) };
  if (run.exit_code !== 0 || run.stdout !== '') {
    return { available: false, detail: `the probe ran but did not behave (exit ${run.exit_code})` };
  }
  if (!run.named) return { available: false, detail: unnamed };
  return { available: true };
}

/** The real path of an existing folder or file, with which it is; undefined for anything else. */
async function realEntry(path: string): Promise<{ path: string; folder: boolean } | undefined> {
  try {
    const real = await realpath(path);
    const info = await stat(real);
    return info.isDirectory() || info.isFile() ? { path: real, folder: info.isDirectory() } : undefined;
  } catch {
    return undefined;
  }
}

interface CheckedRequest {
  readonly workspace: string;
  readonly hidden: { readonly folders: string[]; readonly files: string[] };
}

/** The real workspace and the real hidden paths that exist; invalid_input for a bad request. */
async function checkRequest(request: SandboxRequest): Promise<CheckedRequest> {
  const positive = (value: number): boolean => Number.isSafeInteger(value) && value > 0;
  if (!positive(request.timeout_ms) || !positive(request.output_limit_bytes)) {
    throw new BatonError('invalid_input', 'timeout_ms and output_limit_bytes must be positive integers', {
      timeout_ms: request.timeout_ms,
      output_limit_bytes: request.output_limit_bytes,
    });
  }
  for (const path of [request.workspace, ...(request.hidden ?? [])]) {
    if (!isAbsolute(path)) {
      throw new BatonError('invalid_input', `${JSON.stringify(path)} is not an absolute path`, { path });
    }
  }
  const found = await realEntry(request.workspace);
  if (found === undefined || !found.folder) {
    throw new BatonError('invalid_input', 'the workspace is not an existing directory', {
      workspace: request.workspace,
    });
  }
  const workspace = found.path;
  const hidden = { folders: [] as string[], files: [] as string[] };
  for (const path of request.hidden ?? []) {
    const entry = await realEntry(path);
    if (entry === undefined) continue;
    if (entry.path === workspace) {
      throw new BatonError(
        'invalid_input',
        `the workspace ${workspace} is a folder the command must not see`,
        {
          workspace: request.workspace,
          hidden: path,
        },
      );
    }
    (entry.folder ? hidden.folders : hidden.files).push(entry.path);
  }
  return { workspace, hidden };
}

/** A finished command's output as evidence shows it: the command, stdout, stderr, and whether it was cut. */
export function commandOutput(
  command: string,
  result: { readonly stdout: string; readonly stderr: string; readonly truncated: boolean },
): string {
  return [
    `$ ${command}`,
    result.stdout,
    result.stderr ? `[stderr]\n${result.stderr}` : '',
    result.truncated ? '[output truncated]' : '',
  ]
    .filter((part) => part !== '')
    .join('\n');
}

/**
 * Runs `request.command` in the sandbox. Throws `invalid_input` for a bad request; every other
 * outcome is a result, and a sandbox that cannot be proven is `unavailable` with nothing run.
 */
export async function runSandboxed(
  request: SandboxRequest,
  options: SandboxOptions = {},
): Promise<SandboxResult> {
  const { workspace, hidden } = await checkRequest(request);
  const limits = checkLimits(request.limits);
  const probe = await probeSandbox(options);
  if (!probe.available) return { status: 'unavailable', reason: 'sandbox_unavailable', detail: probe.detail };
  const parts = sentinelParts();
  const args = [
    ...bwrapArguments(workspace, await homeToHide(), hidden, limits.tmpfs_bytes),
    ...guardArguments(parts, request.command, limits),
  ];
  if (options.signal?.aborted)
    return { status: 'timed_out', stdout: '', stderr: '', truncated: false, duration_ms: 0 };
  const run = await runBwrap(
    options.bwrap ?? 'bwrap',
    args,
    request.timeout_ms,
    request.output_limit_bytes,
    limits.processes,
    options.signal,
  );
  if (run.kind === 'spawn_failed')
    return { status: 'unavailable', reason: 'sandbox_unavailable', detail: run.detail };
  if (run.report !== parts.join('')) {
    return { status: 'unavailable', reason: 'sandbox_unavailable', detail: setupFailure(run) };
  }
  // The command ran, but its processes were not (or could no longer be) counted.
  if (run.uncounted !== undefined || !run.named) {
    return { status: 'unavailable', reason: 'sandbox_unavailable', detail: run.uncounted ?? unnamed };
  }
  const output = {
    stdout: run.stdout,
    stderr: run.stderr,
    truncated: run.truncated,
    duration_ms: run.duration_ms,
  };
  if (run.timed_out) return { status: 'timed_out', ...output };
  if (run.exit_code === 0) return { status: 'passed', exit_code: 0, ...output };
  const limit_hit: SandboxLimitHit | undefined = run.process_limit
    ? { limit: 'processes', value: limits.processes, seen: 'killed' }
    : limitSeen(limits, run.exit_code, run.stderr);
  return {
    status: 'failed',
    exit_code: run.exit_code,
    ...output,
    ...(limit_hit === undefined ? {} : { limit_hit }),
  };
}
