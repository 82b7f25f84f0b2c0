import { execFile } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isBatonError } from '../src/core/errors.ts';
import {
  probeSandbox,
  runSandboxed,
  sandboxHome,
  sandboxHostname,
  type SandboxRequest,
  type SandboxResult,
} from '../src/agent/sandbox.ts';

const exec = promisify(execFile);

let dir: string;
let workspace: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'baton-sandbox-'));
  workspace = join(dir, 'workspace');
  mkdirSync(workspace);
  writeFileSync(join(workspace, 'README'), 'workspace content\n');
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

function unique(label: string): string {
  return `${label}-${randomBytes(8).toString('hex')}`;
}

function request(command: string, overrides: Partial<SandboxRequest> = {}): SandboxRequest {
  return { command, workspace, timeout_ms: 20_000, output_limit_bytes: 64 * 1024, ...overrides };
}

function ran(result: SandboxResult): Extract<SandboxResult, { status: 'passed' | 'failed' }> {
  if (result.status !== 'passed' && result.status !== 'failed') {
    throw new Error(`expected the command to run, got ${JSON.stringify(result)}`);
  }
  return result;
}

/** Command lines of every live process on this machine that contain `needle`. */
function processesContaining(needle: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (cmdline.includes(needle)) found.push(`${entry}: ${cmdline}`);
    } catch {
      // The process exited while we looked.
    }
  }
  return found;
}

async function until(condition: () => boolean, limitMs: number): Promise<boolean> {
  const deadline = Date.now() + limitMs;
  while (Date.now() < deadline) {
    if (condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return condition();
}

function fakeBwrap(name: string, script: string): string {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\n${script}\n`);
  chmodSync(path, 0o755);
  return path;
}

describe('the sandbox on this machine', () => {
  it('is available (CI installs bubblewrap; the tests below need it)', async () => {
    expect(await probeSandbox()).toEqual({ available: true });
  });

  it('runs the command in the workspace, reading it, and maps the exit code', async () => {
    const passed = ran(await runSandboxed(request('pwd; cat README; echo to-stderr >&2')));
    expect(passed).toMatchObject({ status: 'passed', exit_code: 0, truncated: false });
    expect(passed.stdout).toBe(`${workspace}\nworkspace content\n`);
    expect(passed.stderr).toBe('to-stderr\n');
    const failed = ran(await runSandboxed(request('echo partial; exit 7')));
    expect(failed).toMatchObject({ status: 'failed', exit_code: 7, stdout: 'partial\n' });
  });

  it('sees only PATH, HOME and LANG in its environment', async () => {
    const result = ran(await runSandboxed(request('env | sort')));
    const names = result.stdout
      .trim()
      .split('\n')
      .map((line) => line.split('=')[0]);
    expect(names).toEqual(['HOME', 'LANG', 'PATH', 'PWD']);
    expect(result.stdout).toContain(`HOME=${sandboxHome}\n`);
  });
});

describe('a shell criterion cannot write', () => {
  it('into the workspace, and the file does not exist afterwards', async () => {
    const name = unique('written');
    const result = ran(await runSandboxed(request(`echo x > ${name}`)));
    expect(result.status).toBe('failed');
    expect(result.stderr).toMatch(/Read-only file system/);
    expect(existsSync(join(workspace, name))).toBe(false);
  });

  it("into the real user's home or /etc, which stay unchanged", async () => {
    const own = mkdtempSync(join(homedir(), '.baton-sandbox-test-'));
    const existing = join(own, 'existing');
    writeFileSync(existing, 'original\n');
    const hostname = readFileSync('/etc/hostname', 'utf8');
    const created = [
      join(homedir(), unique('baton-sandbox-canary')),
      join('/etc', unique('baton-sandbox-canary')),
    ];
    try {
      for (const command of [
        ...created.map((target) => `echo x > ${target}`),
        `echo x > ${existing}`,
        'echo x >> /etc/hostname',
      ]) {
        const result = ran(await runSandboxed(request(command)));
        expect(result.status).toBe('failed');
      }
      for (const target of created) expect(existsSync(target)).toBe(false);
      expect(readFileSync(existing, 'utf8')).toBe('original\n');
      expect(readFileSync('/etc/hostname', 'utf8')).toBe(hostname);
    } finally {
      rmSync(own, { recursive: true, force: true });
    }
  });

  it("into the kernel's settings under /proc/sys, even when Baton runs as root (root without capabilities may write them)", async () => {
    // Checked with access(2), not written: kernel.core_pattern names a program the kernel runs
    // as root, outside any sandbox, when a process dumps core.
    const settings = [
      '/proc/sys/kernel/core_pattern',
      '/proc/sys/kernel/printk_ratelimit',
      '/proc/sys/vm/swappiness',
    ];
    const result = ran(
      await runSandboxed(
        request(settings.map((file) => `[ -w ${file} ] && echo "writable ${file}"`).join('; ') + '; true'),
      ),
    );
    expect(result).toMatchObject({ status: 'passed', stdout: '' });
    // Still readable, and per-namespace settings read the sandbox's own.
    const read = ran(await runSandboxed(request('cat /proc/sys/kernel/hostname')));
    expect(read).toMatchObject({ status: 'passed', stdout: `${sandboxHostname}\n` });
  });

  it('anywhere that outlives the run: its /tmp and $HOME are private tmpfs', async () => {
    const name = unique('scratch');
    const result = ran(
      await runSandboxed(request(`echo x > /tmp/${name} && echo y > "$HOME/${name}" && cat /tmp/${name}`)),
    );
    expect(result).toMatchObject({ status: 'passed', stdout: 'x\n' });
    expect(existsSync(join('/tmp', name))).toBe(false);
    expect(existsSync(join(sandboxHome, name))).toBe(false);
  });
});

describe('a shell criterion cannot read secrets', () => {
  it('planted in the caller environment', async () => {
    const name = `BATON_CANARY_${randomBytes(4).toString('hex')}`;
    const value = unique('zz-canary');
    process.env[name] = value;
    try {
      const result = ran(await runSandboxed(request(`echo "[$${name}]"; env; cat /proc/*/environ; true`)));
      expect(result.status).toBe('passed');
      expect(result.stdout).toContain('[]');
      expect(result.stdout + result.stderr).not.toContain(value);
    } finally {
      delete process.env[name];
    }
  });

  it("in a file under the real user's home, which is hidden", async () => {
    const secretDir = mkdtempSync(join(homedir(), '.baton-sandbox-test-'));
    const value = unique('zz-home-canary');
    writeFileSync(join(secretDir, 'credentials'), value);
    try {
      const result = ran(await runSandboxed(request(`cat ${join(secretDir, 'credentials')}`)));
      expect(result.status).toBe('failed');
      expect(result.stdout + result.stderr).not.toContain(value);
    } finally {
      rmSync(secretDir, { recursive: true, force: true });
    }
  });
});

describe("a shell criterion cannot read hidden paths (the ledger's files)", () => {
  /** A folder outside /tmp and the home folder, which the sandbox leaves readable unless hidden. */
  let visible: string;

  beforeAll(() => {
    visible = mkdtempSync(join('/var/tmp', 'baton-sandbox-hidden-'));
  });

  afterAll(() => {
    rmSync(visible, { recursive: true, force: true });
  });

  it('inside the workspace: the folder is empty, the rest of the workspace readable', async () => {
    const ledger = join(workspace, '.baton');
    mkdirSync(ledger, { recursive: true });
    const value = unique('zz-ledger-canary');
    writeFileSync(join(ledger, 'baton.db'), value);
    const command = 'cat README; cat .baton/baton.db; ls -A .baton; true';
    expect(ran(await runSandboxed(request(command))).stdout).toContain(value);
    const result = ran(await runSandboxed(request(command, { hidden: [ledger] })));
    expect(result.stdout).toContain('workspace content');
    expect(result.stdout + result.stderr).not.toContain(value);
    expect(result.stdout).not.toContain('baton.db');
    expect(ran(await runSandboxed(request('touch .baton/x', { hidden: [ledger] }))).status).toBe('failed');
  });

  it('outside the workspace, also when the workspace lies inside the hidden folder', async () => {
    const value = unique('zz-outside-canary');
    writeFileSync(join(visible, 'baton.db'), value);
    const inner = join(visible, 'work');
    mkdirSync(inner, { recursive: true });
    writeFileSync(join(inner, 'notes.md'), 'inner notes\n');
    const command = `cat ${join(visible, 'baton.db')}; true`;
    expect(ran(await runSandboxed(request(command))).stdout).toContain(value);
    const elsewhere = ran(await runSandboxed(request(command, { hidden: [visible] })));
    expect(elsewhere.stdout + elsewhere.stderr).not.toContain(value);
    const within = ran(
      await runSandboxed(request(`cat notes.md; ${command}`, { workspace: inner, hidden: [visible] })),
    );
    expect(within.stdout).toContain('inner notes');
    expect(within.stdout + within.stderr).not.toContain(value);
  });

  it('reads a hidden file as empty, in the workspace or outside it, and cannot replace it', async () => {
    const value = unique('zz-file-canary');
    writeFileSync(join(workspace, 'baton.db'), value);
    writeFileSync(join(visible, 'other.db'), value);
    const hidden = [join(workspace, 'baton.db'), join(visible, 'other.db')];
    const command = `cat README baton.db ${join(visible, 'other.db')}; test ! -s baton.db`;
    const shown = ran(await runSandboxed(request(`${command}; true`)));
    expect(shown.stdout).toContain(value);
    const result = ran(await runSandboxed(request(command, { hidden })));
    expect(result.status).toBe('passed');
    expect(result.stdout).toContain('workspace content');
    expect(result.stdout + result.stderr).not.toContain(value);
    // A link to it leads to the same emptied file.
    symlinkSync(join(workspace, 'baton.db'), join(workspace, 'link.db'));
    expect(ran(await runSandboxed(request('cat link.db', { hidden }))).stdout).toBe('');
  });

  it('refuses to hide the workspace itself, and skips a hidden folder that does not exist', async () => {
    const error: unknown = await runSandboxed(request('true', { hidden: [workspace] })).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(isBatonError(error, 'invalid_input')).toBe(true);
    const skipped = await runSandboxed(request('true', { hidden: [join(dir, 'missing')] }));
    expect(skipped.status).toBe('passed');
  });

  it("sees no host daemon's socket under /run (PostgreSQL's, Docker's)", async () => {
    const socket = join('/run', unique('baton-sandbox-test'));
    const server = createServer();
    try {
      await new Promise<void>((resolve, reject) => server.once('error', reject).listen(socket, resolve));
    } catch (error) {
      // Only root can create one here; the check needs one.
      if ((error as NodeJS.ErrnoException).code === 'EACCES') return;
      throw error;
    }
    try {
      const result = ran(await runSandboxed(request(`test -e ${socket} || test -e /var${socket}`)));
      expect(result.status).toBe('failed');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('a shell criterion has no network', () => {
  let server: Server;
  let port: number;
  let connections = 0;

  beforeAll(async () => {
    server = createServer((socket) => {
      connections += 1;
      socket.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it('cannot reach a port on 127.0.0.1 that the host can reach', async () => {
    const connect = `exec 3<>/dev/tcp/127.0.0.1/${port}`;
    await exec('bash', ['-c', connect]);
    expect(await until(() => connections === 1, 5_000)).toBe(true);
    const result = ran(await runSandboxed(request(`bash -c '${connect}'`)));
    expect(result.status).toBe('failed');
    expect(result.stderr).toMatch(/Connection refused|Network is unreachable/);
    expect(connections).toBe(1);
  });
});

describe('the timeout', () => {
  it('kills the whole process tree, including a child in its own session', async () => {
    const tag = `${randomInt(1e8, 1e9)}`;
    const child = `30.${tag}1`;
    const main = `30.${tag}2`;
    const running = runSandboxed(
      request(`setsid sleep ${child} & sleep ${main}; echo finished`, { timeout_ms: 4_000 }),
    );
    // While the command runs, both sleeps are visible from here: the check below can fail.
    expect(await until(() => processesContaining(tag).length >= 2, 3_500)).toBe(true);
    const result = await running;
    expect(result).toMatchObject({ status: 'timed_out', stdout: '' });
    expect(result.status === 'timed_out' && result.duration_ms).toBeGreaterThanOrEqual(4_000);
    expect(result.status === 'timed_out' && result.duration_ms).toBeLessThan(15_000);
    expect(await until(() => processesContaining(tag).length === 0, 5_000)).toBe(true);
  });
});

describe('resource limits', () => {
  const mib = 1024 * 1024;

  it('end a fork bomb quickly with a failure, not at the timeout, and leave the machine usable', async () => {
    // Bounded even without a limit: at most 2,000 sleeps, killed with the tree at the timeout.
    const tag = `${randomInt(1e8, 1e9)}`;
    const bomb = `i=0; while [ $i -lt 2000 ]; do sleep 30.${tag} & i=$((i+1)); done; wait`;
    const result = await runSandboxed(request(bomb, { timeout_ms: 10_000, limits: { processes: 64 } }));
    expect(result).toMatchObject({ status: 'failed', limit_hit: { limit: 'processes' } });
    expect(result.status === 'failed' && result.duration_ms).toBeLessThan(5_000);
    expect(await until(() => processesContaining(tag).length === 0, 5_000)).toBe(true);
    expect(await runSandboxed(request('true'))).toMatchObject({ status: 'passed' });
  });

  it('let an ordinary command with a few dozen processes and a 32 MiB string pass under the defaults', async () => {
    const command = [
      'for i in $(seq 40); do sleep 0.2 & done; wait',
      'awk \'BEGIN { s = "x"; while (length(s) < 33554432) s = s s; print length(s) }\'',
      'head -c 10485760 /dev/zero > /tmp/ten && wc -c < /tmp/ten',
    ].join('; ');
    const result = ran(await runSandboxed(request(command)));
    expect(result).toMatchObject({ status: 'passed', stdout: '33554432\n10485760\n' });
    expect(result).not.toHaveProperty('limit_hit');
  });

  it('bound each writable tmpfs: writing past it fails with ENOSPC', async () => {
    const limits = { tmpfs_bytes: 4 * mib, file_bytes: 64 * mib };
    for (const folder of ['/tmp', sandboxHome, '/dev/shm', ...(existsSync('/run') ? ['/run'] : [])]) {
      const command = `head -c ${8 * mib} /dev/zero > ${folder}/fill; echo "exit $?"; wc -c < ${folder}/fill; exit 1`;
      const result = ran(await runSandboxed(request(command, { limits })));
      expect(result.stderr).toMatch(/No space left on device/);
      const [status, kept] = result.stdout.trim().split('\n');
      expect(status).not.toBe('exit 0');
      expect(Number(kept)).toBeLessThanOrEqual(4 * mib);
      expect(result).toMatchObject({ status: 'failed', limit_hit: { limit: 'tmpfs_bytes', seen: 'stderr' } });
    }
  });

  it('leave /dev itself read-only (its tmpfs cannot be sized)', async () => {
    const result = ran(await runSandboxed(request('echo x > /dev/fill')));
    expect(result.status).toBe('failed');
    expect(result.stderr).toMatch(/Read-only file system/);
    expect(ran(await runSandboxed(request('echo x > /dev/null')))).toMatchObject({ status: 'passed' });
  });

  it('never run the command without a limit the guard cannot set: unavailable, nothing run', async () => {
    // Above the hard process limit Baton itself runs under, which nothing without
    // CAP_SYS_RESOURCE may raise.
    const { stdout } = await exec('sh', ['-c', 'ulimit -Hu 2>/dev/null || ulimit -Hp']);
    // Only a hard limit can be exceeded; this machine has none.
    if (stdout.trim() === 'unlimited') return;
    const marker = join(dir, unique('marker'));
    const result = await runSandboxed(
      request(`echo ran > ${marker}`, { limits: { processes: Number(stdout.trim()) + 1 } }),
    );
    expect(result).toMatchObject({ status: 'unavailable', reason: 'sandbox_unavailable' });
    expect(result.status === 'unavailable' && result.detail).toMatch(/refused: cannot limit processes/);
    expect(existsSync(marker)).toBe(false);
  });

  it('bound the memory of each process: allocating past it fails', async () => {
    const command = 'awk \'BEGIN { s = "x"; while (length(s) < 134217728) s = s s; print length(s) }\'';
    const result = ran(await runSandboxed(request(command, { limits: { memory_bytes: 32 * mib } })));
    expect(result).toMatchObject({ status: 'failed', stdout: '', limit_hit: { limit: 'memory_bytes' } });
  });

  it('bound the size of a file a process writes: it is killed by SIGXFSZ', async () => {
    const command = `head -c ${2 * mib} /dev/zero > /tmp/big`;
    const result = ran(await runSandboxed(request(command, { limits: { file_bytes: mib } })));
    expect(result).toMatchObject({
      status: 'failed',
      exit_code: 128 + 25,
      limit_hit: { limit: 'file_bytes', seen: 'signal' },
    });
  });
});

describe('output', () => {
  it('keeps exactly the cap of each stream and marks it truncated, draining the rest', async () => {
    const command = 'head -c 5000000 /dev/zero | tr "\\0" a; head -c 3000 /dev/zero | tr "\\0" b >&2';
    const result = ran(await runSandboxed(request(command, { output_limit_bytes: 1000 })));
    expect(result).toMatchObject({ status: 'passed', truncated: true });
    expect(result.stdout).toBe('a'.repeat(1000));
    expect(result.stderr).toBe('b'.repeat(1000));
  });

  it('is not truncated when it fits exactly', async () => {
    const result = ran(
      await runSandboxed(request('head -c 1000 /dev/zero | tr "\\0" a', { output_limit_bytes: 1000 })),
    );
    expect(result).toMatchObject({ status: 'passed', truncated: false, stdout: 'a'.repeat(1000) });
  });
});

describe('an unavailable sandbox never runs the command', () => {
  function markerCommand(): { command: string; marker: string } {
    const marker = join(dir, unique('marker'));
    return { command: `echo ran > ${marker}`, marker };
  }

  it('when bwrap is missing', async () => {
    const { command, marker } = markerCommand();
    const result = await runSandboxed(request(command), { bwrap: '/nonexistent/bwrap' });
    expect(result).toMatchObject({ status: 'unavailable', reason: 'sandbox_unavailable' });
    expect(result.status === 'unavailable' && result.detail).toMatch(/ENOENT/);
    expect(existsSync(marker)).toBe(false);
    expect(await probeSandbox({ bwrap: '/nonexistent/bwrap' })).toMatchObject({ available: false });
  });

  it('when bwrap refuses to create the namespaces', async () => {
    const bwrap = fakeBwrap(
      'bwrap-refused',
      'echo "bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces." >&2\nexit 1',
    );
    const { command, marker } = markerCommand();
    const result = await runSandboxed(request(command), { bwrap });
    expect(result).toMatchObject({ status: 'unavailable', reason: 'sandbox_unavailable' });
    expect(result.status === 'unavailable' && result.detail).toMatch(
      /No permissions to creating new namespace/,
    );
    expect(existsSync(marker)).toBe(false);
  });

  it('when a fake bwrap runs everything after "--" without a sandbox', async () => {
    const bwrap = fakeBwrap('bwrap-passthrough', 'while [ "$1" != "--" ]; do shift; done\nshift\nexec "$@"');
    const { command, marker } = markerCommand();
    const result = await runSandboxed(request(command), { bwrap });
    expect(result).toMatchObject({ status: 'unavailable', reason: 'sandbox_unavailable' });
    expect(result.status === 'unavailable' && result.detail).toMatch(/sandbox guard refused/);
    expect(existsSync(marker)).toBe(false);
  });

  it('when a fake bwrap runs its last argument as the command', async () => {
    const bwrap = fakeBwrap('bwrap-last', 'for last; do :; done\nexec /bin/sh -c "$last"');
    const { command, marker } = markerCommand();
    const result = await runSandboxed(request(command), { bwrap });
    expect(result).toMatchObject({ status: 'unavailable', reason: 'sandbox_unavailable' });
    expect(existsSync(marker)).toBe(false);
  });

  it('when bwrap passes the probe but fails setting up the run, unlike a command exiting 1', async () => {
    const bwrap = fakeBwrap(
      'bwrap-flaky',
      'case " $* " in *" --chdir / "*) exec bwrap "$@";; esac\necho "bwrap: Can\'t mount tmpfs on /newroot/tmp: No space left on device" >&2\nexit 1',
    );
    expect(await probeSandbox({ bwrap })).toEqual({ available: true });
    const result = await runSandboxed(request('exit 1'), { bwrap });
    expect(result).toMatchObject({ status: 'unavailable', reason: 'sandbox_unavailable' });
    expect(result.status === 'unavailable' && result.detail).toMatch(/exit 1.*Can't mount tmpfs/s);
    expect(await runSandboxed(request('exit 1'))).toMatchObject({ status: 'failed', exit_code: 1 });
  });
});

describe('a fake bwrap that leaves a process holding the output pipes', () => {
  it('does not hang the caller: the run ends after the timeout, unavailable', async () => {
    const tag = `${randomInt(1e8, 1e9)}`;
    const bwrap = fakeBwrap(
      'bwrap-lingering',
      `case " $* " in *" --chdir / "*) exec bwrap "$@";; esac\nsleep 60.${tag} &\nexit 0`,
    );
    try {
      const result = await runSandboxed(request('true', { timeout_ms: 1_000 }), { bwrap });
      expect(result).toMatchObject({ status: 'unavailable', reason: 'sandbox_unavailable' });
    } finally {
      for (const line of processesContaining(`60.${tag}`))
        process.kill(Number(line.split(':')[0]), 'SIGKILL');
    }
  });
});

describe('a bad request', () => {
  it('is rejected as invalid_input before anything runs', async () => {
    for (const bad of [
      request('true', { workspace: 'relative/path' }),
      request('true', { workspace: join(dir, 'missing') }),
      request('true', { workspace: join(workspace, 'README') }),
      request('true', { timeout_ms: 0 }),
      request('true', { output_limit_bytes: -1 }),
      request('true', { limits: { processes: 0 } }),
      request('true', { limits: { memory_bytes: 1.5 } }),
    ]) {
      const error: unknown = await runSandboxed(bad).then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(isBatonError(error, 'invalid_input')).toBe(true);
    }
  });
});
