/**
 * The resource limits of a shell criterion's sandbox: what each one bounds, how the guard
 * applies it inside the sandbox, a watch from outside that counts the sandbox's processes (the
 * kernel does not hold root to a process limit), and which limit a failed run most likely hit.
 */
import { readdir, readlink } from 'node:fs/promises';
import { constants } from 'node:os';
import { BatonError } from '../core/errors.ts';

export interface SandboxLimits {
  /** Data (heap and private writable mappings, RLIMIT_DATA) of each process, in bytes. */
  readonly memory_bytes: number;
  /** Processes in the sandbox at once; where the kernel enforces RLIMIT_NPROC, threads count too. */
  readonly processes: number;
  /** Size of each writable tmpfs of the sandbox: /tmp (with $HOME), /run and /dev/shm. */
  readonly tmpfs_bytes: number;
  /** The largest file a process may write (RLIMIT_FSIZE), a memfd included. */
  readonly file_bytes: number;
}

const mib = 1024 * 1024;

/** Room for `npm test`, `tsc` and `git` on an ordinary project; a request may set others. */
export const sandboxLimits: SandboxLimits = {
  memory_bytes: 4096 * mib,
  processes: 1024,
  tmpfs_bytes: 1024 * mib,
  file_bytes: 1024 * mib,
};

export type SandboxLimitName = keyof SandboxLimits;

/**
 * Which limit a failed run most likely hit. `killed`: Baton killed the sandbox for it (certain);
 * `signal`: the command died of the signal the kernel sends for it (SIGXFSZ); `stderr`: the
 * command printed the error the limit causes. The command controls its own exit and output, so
 * this only explains a failure; it never makes one.
 */
export interface SandboxLimitHit {
  readonly limit: SandboxLimitName;
  /** The limit's value in this run. */
  readonly value: number;
  readonly seen: 'killed' | 'signal' | 'stderr';
}

/** The limits of a request: its own over the defaults; invalid_input unless positive integers. */
export function checkLimits(requested: Partial<SandboxLimits> = {}): SandboxLimits {
  const limits = { ...sandboxLimits, ...requested };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value <= 0) {
      throw new BatonError('invalid_input', `limits.${name} must be a positive integer`, {
        [name]: value,
      });
    }
  }
  return limits;
}

/**
 * The guard's lines that apply the per-process limits to itself, and so to everything it execs,
 * before it reports: `$4` data in KiB, `$5` processes, `$6` file size in 512-byte blocks (the
 * POSIX unit, also bash's as sh). Soft and hard together, so the command cannot raise them. The
 * process limit is `-u` in bash and `-p` in dash (bash's `-p`, the pipe size, cannot be set, so
 * it never passes for it). A limit that cannot be set refuses the run: the sandbox never runs
 * without one.
 */
export const guardLimitLines = [
  'ulimit -d "$4" || refuse "cannot limit memory (ulimit -d)"',
  '{ ulimit -u "$5" 2>/dev/null || ulimit -p "$5"; } || refuse "cannot limit processes (ulimit -u, -p)"',
  'ulimit -f "$6" || refuse "cannot limit file size (ulimit -f)"',
];

export function guardLimitArguments(limits: SandboxLimits): string[] {
  return [
    String(Math.ceil(limits.memory_bytes / 1024)),
    String(limits.processes),
    String(Math.ceil(limits.file_bytes / 512)),
  ];
}

/** How often the watch counts the sandbox's processes. */
const watchIntervalMs = 100;

export interface ProcessWatch {
  /** Bytes bwrap wrote to its `--info-fd`: a JSON object naming the sandbox's PID 1. */
  info(chunk: Buffer): void;
  /** The guard has begun its report: the command may run from now on. */
  started(): void;
  /** Whether bwrap named the sandbox's PID 1, so that its processes can be counted. */
  named(): boolean;
  stop(): void;
}

/**
 * Counts the processes of the sandbox's PID namespace (the entries of its own /proc, reached
 * through its PID 1's root) every 100 ms once the guard has reported, and calls `exceeded` when
 * there are `limit` or more: the caller kills the sandbox. RLIMIT_NPROC bounds an ordinary user's sandbox in the kernel, but
 * not root's (the kernel exempts uid 0, also in a user namespace), so this watch is what bounds a
 * server run as root, to within what forks in one interval. `blind` is called, and the caller
 * must kill the sandbox, when the count cannot be read while the command may run.
 */
export function watchProcesses(
  limit: number,
  exceeded: () => void,
  blind: (detail: string) => void,
): ProcessWatch {
  let infoText = '';
  let target: { pid: number; ns: string } | undefined;
  let startedAt: number | undefined;
  let ticks = 0;
  let done = false;
  let busy = false;
  const stop = (): void => {
    done = true;
    clearInterval(timer);
  };
  const tick = async (): Promise<void> => {
    if (done || busy) return;
    ticks += 1;
    // Until the guard reports, PID 1's root may still be the host's, and its /proc the host's.
    if (startedAt === undefined) return;
    if (target === undefined) {
      // bwrap writes its info before it lets the sandbox start, so it is here by the tick after.
      if (ticks > startedAt + 1) {
        stop();
        blind('bwrap did not name the sandbox, so its processes cannot be counted');
      }
      return;
    }
    busy = true;
    try {
      // The same PID namespace: a PID 1 that exited and whose number was reused is not counted.
      if ((await readlink(`/proc/${target.pid}/ns/pid`)) !== target.ns) return stop();
      const entries = await readdir(`/proc/${target.pid}/root/proc`);
      const count = entries.filter((entry) => /^\d+$/.test(entry)).length;
      if (!done && count >= limit) {
        stop();
        exceeded();
      }
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // The sandbox ended between two looks.
      if (code === 'ENOENT' || code === 'ESRCH') return stop();
      stop();
      blind(`cannot count the sandbox's processes: ${(error as Error).message}`);
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void tick(), watchIntervalMs);
  return {
    info(chunk) {
      if (target !== undefined) return;
      infoText += chunk.toString('utf8');
      try {
        const parsed = JSON.parse(infoText) as { 'child-pid'?: unknown; 'pid-namespace'?: unknown };
        const pid = parsed['child-pid'];
        const ns = parsed['pid-namespace'];
        if (typeof pid === 'number' && typeof ns === 'number') target = { pid, ns: `pid:[${ns}]` };
      } catch {
        // Not all of it yet.
      }
    },
    started() {
      if (startedAt !== undefined) return;
      startedAt = ticks;
      void tick();
    },
    named: () => target !== undefined,
    stop,
  };
}

const signalled = (name: NodeJS.Signals): number => 128 + constants.signals[name];

/** What a failed run's exit code and stderr say about a limit it hit, if anything. */
export function limitSeen(
  limits: SandboxLimits,
  exitCode: number,
  stderr: string,
): SandboxLimitHit | undefined {
  const hit = (limit: SandboxLimitName, seen: SandboxLimitHit['seen']): SandboxLimitHit => ({
    limit,
    value: limits[limit],
    seen,
  });
  if (exitCode === signalled('SIGXFSZ')) return hit('file_bytes', 'signal');
  // Only the sandbox's tmpfs mounts are writable: a full one is the only full device it has.
  if (/No space left on device/i.test(stderr)) return hit('tmpfs_bytes', 'stderr');
  if (/Cannot allocate memory|out of memory|MemoryError|bad_alloc/i.test(stderr))
    return hit('memory_bytes', 'stderr');
  if (/Cannot fork|fork: (retry: )?Resource temporarily unavailable/i.test(stderr))
    return hit('processes', 'stderr');
  return undefined;
}

function size(bytes: number): string {
  if (bytes % (1024 * mib) === 0) return `${bytes / (1024 * mib)} GiB`;
  return bytes % mib === 0 ? `${bytes / mib} MiB` : `${bytes} bytes`;
}

/** The limit hit, in words for a verdict's reason: "killed on reaching the process limit (64)". */
export function describeLimitHit(hit: SandboxLimitHit): string {
  const limit = {
    memory_bytes: `the memory limit (${size(hit.value)} per process)`,
    processes: `the process limit (${hit.value})`,
    tmpfs_bytes: `a full tmpfs (${size(hit.value)} each)`,
    file_bytes: `the file size limit (${size(hit.value)})`,
  }[hit.limit];
  const how = { killed: 'killed on reaching', signal: 'killed by', stderr: 'its stderr reports' }[hit.seen];
  return `${how} ${limit}`;
}
