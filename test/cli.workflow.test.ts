/**
 * The `baton` CLI end to end in a temporary Git work tree, on the local SQLite store: the Git
 * binding, one-line handoffs, continue, ack, outcome and report; scope resolution and its
 * refusal; exit codes and messages for bad input; --json output.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cliEnv, cliMain, tempWorkTree, type CliResult, type WorkTree } from './helpers/git.ts';

let tree: WorkTree;

beforeEach(async () => {
  tree = await tempWorkTree();
});
afterEach(() => tree.dispose());

function ok(result: CliResult): CliResult {
  expect(result.code, result.stderr).toBe(0);
  return result;
}

function parsed<T = Record<string, unknown>>(result: CliResult): T {
  return JSON.parse(ok(result).stdout) as T;
}

interface HandoffJson {
  prepared: { digest: string; prepared_handoff: { scope_id: string; objective: string } };
  revision: { scope_id: string; revision: number; prepared_digest: string };
}

interface SourceRefJson {
  scope_id: string;
  source_id: string;
  digest: string;
}

/** Run `baton ARGS` in the work tree with standard input read from a file (a device, say). */
async function batonWithStdin(tree: WorkTree, args: readonly string[], input: string): Promise<CliResult> {
  const stdin = openSync(input, 'r');
  try {
    const child = spawn(process.execPath, [cliMain, ...args], {
      cwd: tree.repo,
      env: cliEnv(tree.database),
      stdio: [stdin, 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = (await once(child, 'close')) as [number];
    return { code, stdout, stderr };
  } finally {
    closeSync(stdin);
  }
}

describe('baton CLI in a Git work tree', () => {
  it('binds once, hands off twice into one workstream, continues, acknowledges, records the outcome', async () => {
    const init = ok(await tree.baton(['init']));
    expect(init.stdout).toMatch(/baton_[\w-]{20,}/);
    expect(await tree.git('status', '--porcelain')).toBe('');

    const bound = ok(await tree.baton(['bind', 'parser-work']));
    expect(bound.stdout).toContain('parser-work');
    const file = join(tree.repo, '.git', 'baton', 'binding.json');
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({
      schema: 'baton.workspace-binding/v1',
      project_id: 'default',
      scope_id: 'parser-work',
    });
    expect(await tree.git('status', '--porcelain', '--ignored')).toBe('');
    expect(
      parsed<{ binding: { scope_id: string } }>(await tree.baton(['bind', '--show', '--json'])),
    ).toMatchObject({ binding: { scope_id: 'parser-work' } });

    const first = parsed<HandoffJson>(await tree.baton(['handoff', 'Write the parser', '--json']));
    expect(first.revision).toMatchObject({ scope_id: 'parser-work', revision: 1 });
    const second = ok(await tree.baton(['handoff', 'Test the parser', '--state', 'The parser is written']));
    expect(second.stdout).toContain('Revision 2 of parser-work committed');
    // The objective carries over from the workstream's current handoff.
    expect(second.stdout).toContain('objective:   Write the parser');

    const resolution = parsed<{
      selection: { kind: string; revision: number; digest: string };
      evidence: string;
    }>(await tree.baton(['continue', '--json']));
    expect(resolution.selection).toMatchObject({ kind: 'exact', revision: 2 });
    expect(resolution.evidence).toBe('available');
    const human = ok(await tree.baton(['continue']));
    expect(human.stdout).toContain('Next action: Test the parser');
    expect(human.stdout).toContain('Trust: untrusted_history');
    expect(human.stdout).toContain('baton ack accepted --revision 2');

    const unconfirmed = await tree.baton(['ack', 'accepted', '--confirm-workspace']);
    expect(unconfirmed.code).toBe(1);
    expect(unconfirmed.stderr).toContain('fix --confirm-capability');
    expect(unconfirmed.stderr).toContain('fix --confirm-authorization');

    const ack = parsed<{
      receipt: { source_ref: SourceRefJson };
      record: { status: string; target: object };
    }>(
      await tree.baton([
        'ack',
        'accepted',
        '--confirm-workspace',
        '--confirm-capability',
        '--confirm-authorization',
        '--json',
      ]),
    );
    expect(ack.record.status).toBe('accepted');
    expect(ack.record.target).toEqual(resolution.selection);

    const awaiting = parsed<{ outcome_state: string }>(await tree.baton(['continuity', '--json']));
    expect(awaiting.outcome_state).toBe('awaiting_outcome');

    const outcome = parsed<{ record: { handoff_receipt_ref: SourceRefJson; checks: unknown[] } }>(
      await tree.baton([
        'outcome',
        '--status',
        'succeeded',
        '--summary',
        'Parser tests pass',
        '--check',
        'unit tests=passed',
        '--check',
        'docs=skipped',
        '--receipt',
        ack.receipt.source_ref.source_id,
        '--json',
      ]),
    );
    expect(outcome.record.handoff_receipt_ref).toEqual(ack.receipt.source_ref);
    expect(outcome.record.checks).toEqual([
      { name: 'unit tests', status: 'passed', basis: 'declared', evidence: [] },
      { name: 'docs', status: 'skipped', basis: 'declared', evidence: [] },
    ]);

    const report = ok(await tree.baton(['report']));
    expect(report.stdout).toContain('revision 2 of 2');
    expect(report.stdout).toContain('Transfer: **accepted** · outcome: **covered**');
    const reportJson = parsed<{ revision_count: number; continuity: { outcome_state: string } }>(
      await tree.baton(['report', '--json']),
    );
    expect(reportJson.revision_count).toBe(2);
    expect(reportJson.continuity.outcome_state).toBe('covered');

    const metrics = parsed<{ handoff_result_coverage_rate: { rate: number } }>(
      await tree.baton(['metrics', '--json']),
    );
    expect(metrics.handoff_result_coverage_rate.rate).toBe(1);
    expect(await tree.git('status', '--porcelain')).toBe('');

    ok(await tree.baton(['unbind']));
    expect(existsSync(file)).toBe(false);
    expect(ok(await tree.baton(['bind', '--show'])).stdout).toContain('not bound');
  });

  it('finds the .baton database of a parent folder from a subdirectory, and never starts a second one there', async () => {
    const local = { env: { BATON_DATABASE_URL: '' } };
    ok(await tree.baton(['init'], local));
    ok(await tree.baton(['bind', 'deep-work'], local));
    ok(await tree.baton(['handoff', 'From the root'], local));
    const src = join(tree.repo, 'src', 'parser');
    mkdirSync(src, { recursive: true });
    const inSrc = { ...local, cwd: src };
    const second = parsed<HandoffJson>(await tree.baton(['handoff', 'From a subdirectory', '--json'], inSrc));
    expect(second.revision).toMatchObject({ scope_id: 'deep-work', revision: 2 });
    expect(ok(await tree.baton(['continue'], inSrc)).stdout).toContain('From a subdirectory');
    expect(existsSync(join(tree.repo, 'src', 'parser', '.baton'))).toBe(false);
    expect(existsSync(join(tree.repo, 'src', '.baton'))).toBe(false);
  });

  it("uses the main work tree's database from a linked work tree, which keeps a binding of its own", async () => {
    const local = { env: { BATON_DATABASE_URL: '' } };
    ok(await tree.baton(['init'], local));
    ok(await tree.baton(['bind', 'main-work'], local));
    ok(await tree.baton(['handoff', 'From the main work tree'], local));
    await tree.git(
      '-c',
      'user.name=t',
      '-c',
      'user.email=t@example.test',
      'commit',
      '-q',
      '--allow-empty',
      '-m',
      'start',
    );
    const linked = join(tree.dir, 'linked');
    await tree.git('worktree', 'add', '-q', linked);
    const inLinked = { ...local, cwd: linked };
    // Not bound here: the linked tree has a git directory, and so a binding, of its own.
    expect(ok(await tree.baton(['bind', '--show'], inLinked)).stdout).toContain('not bound');
    expect(ok(await tree.baton(['continue', '--scope', 'main-work'], inLinked)).stdout).toContain(
      'From the main work tree',
    );
    ok(await tree.baton(['bind', 'linked-work'], inLinked));
    ok(await tree.baton(['handoff', 'From the linked work tree'], inLinked));
    const report = parsed<{ workstreams: { scope_id: string }[] }>(
      await tree.baton(['report', '--all', '--json'], local),
    );
    expect(report.workstreams.map((w) => w.scope_id).sort()).toEqual(['linked-work', 'main-work']);
    expect(existsSync(join(linked, '.baton'))).toBe(false);
  });

  it('looks for the database no higher than the Git work tree, and outside Git only in the working folder', async () => {
    const local = { env: { BATON_DATABASE_URL: '' } };
    // A ledger in the folder that holds the work tree: not this work tree's.
    ok(await tree.baton(['init'], { ...local, cwd: tree.dir }));
    expect(existsSync(join(tree.dir, '.baton', 'baton.db'))).toBe(true);
    for (const cwd of [tree.repo, join(tree.dir, 'notes')]) {
      mkdirSync(cwd, { recursive: true });
      const refused = await tree.baton(['continue', '--scope', 'any'], { ...local, cwd });
      expect({ cwd, code: refused.code }).toEqual({ cwd, code: 1 });
      expect(refused.stderr).toContain(`no Baton database at ${join(cwd, '.baton', 'baton.db')}`);
      expect(refused.stderr).toContain(
        `${join(tree.dir, '.baton', 'baton.db')} above is not used by default`,
      );
    }
    expect(existsSync(join(tree.repo, '.baton'))).toBe(false);
  });

  it('keeps --json stderr to the error envelope when racing handoffs lose, naming what was prepared', async () => {
    ok(await tree.baton(['init']));
    const runs = await Promise.all(
      Array.from({ length: 8 }, (_, n) => tree.baton(['handoff', `Step ${n}`, '--scope', 'race', '--json'])),
    );
    for (const run of runs) {
      if (run.code === 0) {
        expect(parsed<HandoffJson>(run).revision.scope_id).toBe('race');
        continue;
      }
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(JSON.parse(run.stderr)).toMatchObject({
        error: {
          code: 'revision_conflict',
          details: {
            prepared: expect.stringMatching(/^sha256:/) as unknown,
            base_revision: expect.any(Number) as unknown,
          },
        },
      });
    }
  });

  it('refuses to choose between workstreams when none is named or bound, and lists them', async () => {
    ok(await tree.baton(['init']));
    ok(await tree.baton(['capture', '--scope', 'alpha', '--source-id', 'n', '--text', 'a']));
    ok(await tree.baton(['capture', '--scope', 'beta', '--source-id', 'n', '--text', 'b']));

    for (const args of [['handoff', 'Do the next thing'], ['continue'], ['ack', 'accepted']]) {
      const refused = await tree.baton(args);
      expect(refused.code, args.join(' ')).toBe(2);
      expect(refused.stderr).toContain('Baton does not choose one for you');
      expect(refused.stderr).toMatch(/\n {2}alpha\n {2}beta\n/);
      expect(refused.stderr).toContain('baton bind SCOPE_ID');
    }
    // Even a single workstream is never picked silently.
    const lone = await tempWorkTree();
    try {
      ok(await lone.baton(['init']));
      ok(await lone.baton(['capture', '--scope', 'only', '--source-id', 'n', '--text', 'a']));
      const refused = await lone.baton(['continuity']);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('  only');
    } finally {
      lone.dispose();
    }
  });

  it('resolves the scope as --scope > BATON_SCOPE > binding', async () => {
    ok(await tree.baton(['init']));
    ok(await tree.baton(['bind', 'bound']));
    const env = { BATON_SCOPE: 'from-env' };
    const viaEnv = parsed<HandoffJson>(await tree.baton(['handoff', 'env wins', '--json'], { env }));
    expect(viaEnv.revision.scope_id).toBe('from-env');
    const viaOption = parsed<HandoffJson>(
      await tree.baton(['handoff', 'option wins', '--scope', 'explicit', '--json'], { env }),
    );
    expect(viaOption.revision.scope_id).toBe('explicit');
    const viaBinding = parsed<HandoffJson>(await tree.baton(['handoff', 'binding', '--json']));
    expect(viaBinding.revision.scope_id).toBe('bound');
  });

  it("never carries a binding's workstream into another project named with --project", async () => {
    ok(await tree.baton(['init']));
    ok(await tree.baton(['project', 'create', 'other']));
    ok(await tree.baton(['bind', 'bound']));
    const refused = await tree.baton(['handoff', 'meant for the bound workstream', '--project', 'other']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('bound to workstream bound of project default');
    expect(refused.stderr).toContain('--scope');
    const report = parsed<{ workstreams: unknown[] }>(
      await tree.baton(['report', '--project', 'other', '--json']),
    );
    expect(report.workstreams).toEqual([]);
    // Naming the workstream, or the bound project, is explicit and goes ahead.
    const named = parsed<HandoffJson>(
      await tree.baton(['handoff', 'explicit', '--project', 'other', '--scope', 'bound', '--json']),
    );
    expect(named.revision.scope_id).toBe('bound');
    ok(await tree.baton(['handoff', 'same project', '--project', 'default']));
  });

  it('warns when binding to a project the database does not hold, and names the ones it does', async () => {
    // Before any database, binding first and creating the project after is a way to start.
    const first = ok(await tree.baton(['bind', 'early', '--project', 'billing']));
    expect(first.stderr).toBe('');
    const created = ok(await tree.baton(['init']));
    expect(created.stdout).toContain('Project billing ready');
    ok(await tree.baton(['unbind']));
    // `baton init --project billing` then `baton bind w`: the binding says project default.
    const init = ok(await tree.baton(['init', '--project', 'shipping']));
    expect(init.stdout).toContain('baton bind SCOPE_ID --project shipping');
    const bound = ok(await tree.baton(['bind', 'w']));
    expect(bound.stdout).toContain('Bound this work tree to workstream w of project default');
    expect(bound.stderr).toContain('project default does not exist in');
    expect(bound.stderr).toContain('projects there: billing, shipping');
    expect(bound.stderr).toContain('baton bind w --project billing');
    const json = ok(await tree.baton(['bind', 'w', '--project', 'nowhere', '--json']));
    expect(JSON.parse(json.stdout)).toMatchObject({ binding: { project_id: 'nowhere', scope_id: 'w' } });
    expect(json.stderr).toContain('project nowhere does not exist');
    const fine = ok(await tree.baton(['bind', 'w', '--project', 'shipping']));
    expect(fine.stderr).toBe('');
  });

  it("init's next commands use the database --database named, and the address serve listens on", async () => {
    const database = join(tree.dir, "the team's ledger.db");
    // BATON_DATABASE_URL stays set for later commands; --database is this one command's only.
    const init = ok(await tree.baton(['init', '--database', database], { env: { BATON_DATABASE_URL: '' } }));
    const quoted = `'${database.replaceAll("'", `'\\''`)}'`;
    expect(init.stdout).toContain(`baton bind SCOPE_ID --database ${quoted}`);
    expect(init.stdout).toContain(`baton handoff "Where the work stands" --database ${quoted}`);
    expect(init.stdout).toContain(`baton serve --database ${quoted}`);
    expect(init.stdout).toContain('http://127.0.0.1:4680');
    expect(init.stdout).not.toContain('PORT');
    const started = ok(
      await tree.baton(['start', '--no-serve', '--database', database], { env: { BATON_DATABASE_URL: '' } }),
    );
    expect(started.stdout).toContain(`baton read --scope my-work --database ${quoted}`);
    // From the environment, the commands need no flag: the variable names it for them too.
    const fromEnv = ok(await tree.baton(['init', '--project', 'other']));
    expect(fromEnv.stdout).toContain('baton serve ');
    expect(fromEnv.stdout).not.toContain('--database');
  });

  it('says outside a Git work tree that there is no binding to show, exit 1', async () => {
    const outside = join(tree.dir, 'outside');
    mkdirSync(outside, { recursive: true });
    for (const args of [['bind', '--show'], ['bind', 'w'], ['unbind']]) {
      const result = await tree.baton(args, { cwd: outside });
      expect({ args, code: result.code }).toEqual({ args, code: 1 });
      expect(result.stderr).toContain('is not inside a Git work tree');
    }
  });

  it('says what to do, without a stack trace, when the binding file is a folder or damaged', async () => {
    ok(await tree.baton(['init']));
    const gitDir = (await tree.git('rev-parse', '--absolute-git-dir')).trim();
    const path = join(gitDir, 'baton', 'binding.json');
    mkdirSync(path, { recursive: true });
    for (const args of [['unbind'], ['bind', '--show'], ['bind', 'w'], ['handoff', 'x']]) {
      const result = await tree.baton(args);
      expect({ args, code: result.code }).toEqual({ args, code: 1 });
      expect(result.stderr).toContain(`${path} is a folder, not a binding file`);
      expect(result.stderr).not.toMatch(/\n\s+at /);
    }
    rmSync(path, { recursive: true });
    writeFileSync(path, '{"schema": "nope"');
    const damaged = await tree.baton(['handoff', 'x']);
    expect(damaged.code).toBe(1);
    expect(damaged.stderr).toContain('is damaged; run baton unbind');
    ok(await tree.baton(['unbind']));
    ok(await tree.baton(['bind', 'w']));
  });

  it('retries a one-line handoff without storing a second boundary, and commits a prepared one', async () => {
    ok(await tree.baton(['init']));
    ok(await tree.baton(['bind', 'w']));
    const prepared = parsed<{ digest: string; boundary_receipt: { position: number } }>(
      await tree.baton(['handoff', 'Ship it', '--no-commit', '--json']),
    );
    const again = parsed<{ digest: string; boundary_receipt: { position: number } }>(
      await tree.baton(['handoff', 'Ship it', '--no-commit', '--json']),
    );
    expect(again).toEqual(prepared);
    const committed = parsed<{ revision: number }>(
      await tree.baton(['commit', '--prepared', prepared.digest, '--expected-head', '0', '--json']),
    );
    expect(committed.revision).toBe(1);
    const stale = await tree.baton(['commit', '--prepared', prepared.digest, '--expected-head', '1']);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain('precondition_failed');
  });

  it('reads - as standard input for every file option, and commits handoff --no-commit --json output as it is', async () => {
    ok(await tree.baton(['init']));
    ok(await tree.baton(['bind', 'w']));
    const note = join(tree.dir, 'note.txt');
    writeFileSync(note, 'from standard input\n');
    const fromStdin = parsed<{ position: number }>(
      await batonWithStdin(tree, ['capture', '--source-id', 'stdin-text', '--file', '-', '--json'], note),
    );
    const json = join(tree.dir, 'note.json');
    writeFileSync(json, '{"said": "json from standard input"}');
    ok(await batonWithStdin(tree, ['capture', '--source-id', 'stdin-json', '--json-file', '-'], json));
    const read = ok(await tree.baton(['read', '--scope', 'w']));
    expect(read.stdout).toContain('from standard input\\n');
    expect(read.stdout).toContain('json from standard input');
    expect(fromStdin.position).toBeGreaterThan(0);
    // The prepared handoff, piped on exactly as --no-commit --json printed it.
    const output = join(tree.dir, 'prepared.json');
    writeFileSync(output, ok(await tree.baton(['handoff', 'Ship it', '--no-commit', '--json'])).stdout);
    const committed = parsed<{ revision: number }>(
      await batonWithStdin(
        tree,
        ['commit', '--prepared-file', '-', '--expected-head', '0', '--json'],
        output,
      ),
    );
    expect(committed.revision).toBe(1);
  });

  it('refuses bytes that are not UTF-8 from any file option or standard input, and writes nothing', async () => {
    ok(await tree.baton(['init']));
    ok(await tree.baton(['bind', 'w']));
    const latin1 = join(tree.dir, 'latin1.txt');
    writeFileSync(latin1, Buffer.from('caf\xe9 "\xff"', 'latin1'));
    ok(await tree.baton(['capture', '--source-id', 'good', '--text', 'café']));
    const before = ok(await tree.baton(['read', '--scope', 'w'])).stdout;
    for (const args of [
      ['capture', '--source-id', 'bad', '--file', latin1],
      ['capture', '--source-id', 'bad', '--json-file', latin1],
      ['call', 'capture_source', '--input-file', latin1],
      ['commit', '--prepared-file', latin1, '--expected-head', '0'],
    ]) {
      const refused = await tree.baton(args);
      expect({ args, code: refused.code }).toEqual({ args, code: 1 });
      expect(refused.stderr).toContain(`${latin1} is not UTF-8 text`);
    }
    const piped = await batonWithStdin(tree, ['capture', '--source-id', 'bad', '--file', '-'], latin1);
    expect(piped.code).toBe(1);
    expect(piped.stderr).toContain('standard input is not UTF-8 text');
    expect(ok(await tree.baton(['read', '--scope', 'w'])).stdout).toBe(before);
  });

  it('runs the same one-line handoff again without a second revision, and publishes it anew only with --again', async () => {
    ok(await tree.baton(['init']));
    ok(await tree.baton(['bind', 'w']));
    const first = parsed<HandoffJson>(await tree.baton(['handoff', 'Ship it', '--json']));
    expect(first.revision.revision).toBe(1);
    // Its answer lost, say: the same command again answers the same revision and writes nothing.
    const repeat = parsed<{ prepared: null; revision: HandoffJson['revision']; already_committed: true }>(
      await tree.baton(['handoff', 'Ship it', '--json']),
    );
    expect(repeat).toEqual({ prepared: null, revision: first.revision, already_committed: true });
    const shown = ok(await tree.baton(['handoff', 'Ship it']));
    expect(shown.stdout).toContain('Revision 1 of w already says exactly this: nothing new was written');
    const records = parsed<{ counts: Record<string, number> }>(await tree.baton(['continuity', '--json']));
    expect(records.counts['handoff-boundary']).toBe(1);

    // Another handoff, then the first words again: a revision of its own, with a boundary of its own.
    expect(parsed<HandoffJson>(await tree.baton(['handoff', 'Test it', '--json'])).revision.revision).toBe(2);
    const back = parsed<HandoffJson & { prepared: { boundary_receipt: { position: number } } }>(
      await tree.baton(['handoff', 'Ship it', '--json']),
    );
    expect(back.revision.revision).toBe(3);
    expect(back.prepared.boundary_receipt.position).toBe(3);
    const again = parsed<HandoffJson>(await tree.baton(['handoff', 'Ship it', '--again', '--json']));
    expect(again.revision.revision).toBe(4);
  });

  it('records a receiver who changes their mind back, and stores a repeated acknowledgement once', async () => {
    ok(await tree.baton(['init']));
    ok(await tree.baton(['bind', 'w']));
    ok(await tree.baton(['handoff', 'Ship it']));
    const checks = ['--confirm-workspace', '--confirm-capability', '--confirm-authorization'];
    const unclear = ['ack', 'needs-clarification', '--revision', '1', '--reason', 'data missing', '--json'];
    const receipt = (result: CliResult) => parsed<{ receipt: { source_ref: SourceRefJson } }>(result).receipt;
    const asked = receipt(await tree.baton(unclear));
    const accepted = receipt(await tree.baton(['ack', 'accepted', '--revision', '1', ...checks, '--json']));
    const askedAgain = receipt(await tree.baton(unclear));
    expect(askedAgain.source_ref.source_id).not.toBe(asked.source_ref.source_id);
    expect(accepted.source_ref.source_id).not.toBe(asked.source_ref.source_id);
    // The same command once more (its answer lost): the same receipt, nothing stored.
    expect(receipt(await tree.baton(unclear))).toEqual(askedAgain);
    const continuity = parsed<{
      transfer_state: string;
      counts: Record<string, number>;
      active_receipt_ref: SourceRefJson;
    }>(await tree.baton(['continuity', '--json']));
    expect(continuity).toMatchObject({
      transfer_state: 'needs_clarification',
      counts: { 'handoff-receipt': 3 },
      active_receipt_ref: askedAgain.source_ref,
    });
  });

  it('offers only clarification or decline while a citation is unavailable, as acceptance would be refused', async () => {
    ok(await tree.baton(['init']));
    ok(await tree.baton(['bind', 'w']));
    const committed = parsed<HandoffJson & { prepared: { boundary_receipt: { source_ref: SourceRefJson } } }>(
      await tree.baton(['handoff', 'Ship it', '--json']),
    );
    const readable = ok(await tree.baton(['continue'])).stdout;
    expect(readable).toContain('baton ack accepted --revision 1');
    const boundary = committed.prepared.boundary_receipt.source_ref.source_id;
    ok(await tree.baton(['retract', '--source-id', boundary, '--reason', 'pasted a secret']));
    const unavailable = ok(await tree.baton(['continue'])).stdout;
    expect(unavailable).toContain('Evidence: unavailable');
    expect(unavailable).toContain('It cannot be accepted while a citation is unavailable');
    expect(unavailable).not.toContain('baton ack accepted');
    expect(unavailable).toContain('baton ack needs-clarification --revision 1 --reason');
  });

  it('refuses to accept a handoff nobody read: without --revision, baton continue must have shown it', async () => {
    ok(await tree.baton(['init']));
    ok(await tree.baton(['bind', 'w']));
    ok(await tree.baton(['handoff', 'Ship it']));
    const checks = ['--confirm-workspace', '--confirm-capability', '--confirm-authorization'];
    const blind = await tree.baton(['ack', 'accepted', ...checks]);
    expect(blind.code).toBe(1);
    expect(blind.stderr).toContain(
      'accepting takes the exact handoff you inspected: read it with baton continue, or pass the --revision you read (the latest is revision 1)',
    );
    const counts = async () =>
      parsed<{ counts: Record<string, number> }>(await tree.baton(['continuity', '--json'])).counts;
    expect((await counts())['handoff-receipt']).toBe(0);
    // Asking for clarification takes nothing on: it answers the latest and says which.
    const asked = ok(await tree.baton(['ack', 'needs-clarification', '--reason', 'which environment?']));
    expect(asked.stderr).toContain('note: acknowledging revision 1, the latest right now');
    expect((await counts())['handoff-receipt']).toBe(1);
    ok(await tree.baton(['continue']));
    const accepted = parsed<{ record: { target: { revision: number } } }>(
      await tree.baton(['ack', 'accepted', ...checks, '--json']),
    );
    expect(accepted.record.target.revision).toBe(1);
  });

  it('refuses to acknowledge "latest" when it is not the revision baton continue showed', async () => {
    ok(await tree.baton(['init']));
    ok(await tree.baton(['bind', 'w']));
    ok(await tree.baton(['handoff', 'Ship it']));
    expect(ok(await tree.baton(['continue'])).stdout).toContain('Workstream w: revision 1');
    ok(await tree.baton(['handoff', 'Ship it to staging first']));
    const checks = ['--confirm-workspace', '--confirm-capability', '--confirm-authorization'];
    const unread = await tree.baton(['ack', 'accepted', ...checks]);
    expect(unread.code).toBe(1);
    expect(unread.stderr).toContain(
      'the latest handoff is revision 2, but baton continue last showed you revision 1: read the latest with baton continue, or pass --revision 1',
    );
    const continuity = parsed<{ counts: Record<string, number> }>(await tree.baton(['continuity', '--json']));
    expect(continuity.counts['handoff-receipt']).toBe(0);

    expect(ok(await tree.baton(['continue'])).stdout).toContain('Workstream w: revision 2');
    const accepted = parsed<{ record: { target: { revision: number } } }>(
      await tree.baton(['ack', 'accepted', ...checks, '--json']),
    );
    expect(accepted.record.target.revision).toBe(2);
    // What was shown stays in the git directory: the work tree has nothing new.
    expect(await tree.git('status', '--porcelain')).toBe('');
  });

  it('never passes control sequences from stored text to the terminal, and keeps them exact in --json', async () => {
    ok(await tree.baton(['init']));
    ok(await tree.baton(['bind', 'w']));
    // Colour, a clipboard write (OSC 52), a C1 CSI, a carriage return that hides what came
    // before it, and a right-to-left override: what an agent could put in a handoff for a person.
    const hostile =
      'Deploy \u001b[31mnow\u001b[0m \u001b]52;c;cm0gLXJmIH4=\u0007\u009b2J safe\rdone \u202eevil';
    const committed = parsed<HandoffJson>(await tree.baton(['handoff', hostile, '--json']));
    expect(committed.revision.revision).toBe(1);
    // eslint-disable-next-line no-control-regex -- the control characters that must not reach the terminal
    const controls = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
    // The report is Markdown, where stored punctuation is backslash-escaped to show literally.
    for (const [args, deploy] of [
      [['report'], 'Deploy \\\\u001b\\[31mnow'],
      [['continue'], 'Deploy \\u001b[31mnow'],
      [['handoff', hostile, '--no-commit'], 'Deploy \\u001b[31mnow'],
    ] as const) {
      const shown = ok(await tree.baton([...args]));
      expect(shown.stdout, args.join(' ')).not.toMatch(controls);
      expect(shown.stdout).toContain(deploy);
      expect(shown.stdout).toContain('\\u202eevil');
    }
    const json = parsed<{ next_action: { text: string } }>(await tree.baton(['continue', '--json']));
    expect(JSON.stringify(json)).toContain('Deploy');
    const raw = ok(await tree.baton(['continue', '--json'])).stdout;
    expect(raw).not.toMatch(controls);
    expect(JSON.stringify(JSON.parse(raw))).toContain(JSON.stringify(hostile).slice(1, -1));
  });

  it('records contracts and needs-clarification, and reviews experience', async () => {
    ok(await tree.baton(['init']));
    ok(await tree.baton(['bind', 'w']));
    const contract = parsed<{
      trust: string;
      record: { completion_criteria: string[]; exclusions: string[] };
    }>(
      await tree.baton([
        'contract',
        '--objective',
        'Export CSV',
        '--criterion',
        'totals match',
        '--criterion',
        'UTF-8',
        '--exclude',
        'PDF',
        '--authorization-note',
        'may not deploy',
        '--json',
      ]),
    );
    expect(contract.trust).toBe('untrusted_input');
    expect(contract.record.completion_criteria).toEqual(['totals match', 'UTF-8']);
    ok(await tree.baton(['handoff', 'Write the exporter']));
    // A person reads every part of the agreement, not only its objective.
    const context = ok(await tree.baton(['context'])).stdout;
    expect(context).toContain(
      [
        '  objective: Export CSV',
        '  excluded: PDF',
        '  done when: totals match',
        '  done when: UTF-8',
        '  authorization note: may not deploy',
      ].join('\n'),
    );
    const noReason = await tree.baton(['ack', 'needs-clarification']);
    expect(noReason.code).toBe(1);
    expect(noReason.stderr).toContain('fix --reason');
    const clarify = parsed<{ record: { status: string; reason: string } }>(
      await tree.baton([
        'ack',
        'needs-clarification',
        '--revision',
        '1',
        '--reason',
        'which encoding?',
        '--json',
      ]),
    );
    expect(clarify.record).toMatchObject({ status: 'needs_clarification', reason: 'which encoding?' });
    const outcome = ok(await tree.baton(['outcome', '--status', 'partial', '--summary', 'half done']));
    expect(outcome.stdout).toContain('Task outcome partial: half done');
    const [candidate] = parsed<{ candidate: SourceRefJson; status: string }[]>(
      await tree.baton(['experience', 'list', '--json']),
    );
    expect(candidate?.status).toBe('pending');
    const reviewed = ok(
      await tree.baton([
        'experience',
        'review',
        candidate!.candidate.source_id,
        '--decision',
        'rejected',
        '--note',
        'one attempt',
      ]),
    );
    expect(reviewed.stdout).toContain('is rejected');
  });

  it('says so when the same outcome run again wrote nothing new', async () => {
    ok(await tree.baton(['init']));
    const args = [
      'outcome',
      '--scope',
      'w',
      '--objective',
      'o',
      '--status',
      'partial',
      '--summary',
      'half done',
    ];
    const first = ok(await tree.baton(args));
    expect(first.stdout).toContain('at journal position 1');
    expect(first.stdout).not.toContain('nothing new');
    const again = ok(await tree.baton(args));
    expect(again.stdout).toContain('at journal position 1');
    expect(again.stdout).toContain('already recorded exactly so: nothing new was written');
    const other = ok(await tree.baton([...args.slice(0, -1), 'all done']));
    expect(other.stdout).toContain('at journal position 2');
    expect(other.stdout).not.toContain('nothing new');
  });

  it('answers a well-formed reference to nothing as not found (exit 1), not as a usage error', async () => {
    ok(await tree.baton(['init']));
    ok(await tree.baton(['capture', '--scope', 'w', '--source-id', 'note', '--text', 'a note']));
    const outcome = ['outcome', '--scope', 'w', '--status', 'failed', '--summary', 's', '--objective', 'o'];
    for (const [args, message] of [
      [[...outcome, '--receipt', 'ghost'], '--receipt ghost: no work record'],
      [[...outcome, '--receipt', 'active'], 'has no receipt'],
      [
        ['experience', 'review', 'ghost', '--scope', 'w', '--decision', 'approved', '--note', 'n'],
        'no experience candidate ghost',
      ],
    ] as const) {
      const missing = await tree.baton([...args, '--json']);
      expect({ args, code: missing.code }).toEqual({ args, code: 1 });
      const envelope = JSON.parse(missing.stderr) as { error: { code: string; message: string } };
      expect(envelope.error.code).toBe('not_found');
      expect(envelope.error.message).toContain(message);
    }
  });

  it('answers bad input with exit 2 (usage) or 1 (the operation failed) and says what to fix', async () => {
    ok(await tree.baton(['init']));
    const usage: [string[], string][] = [
      [['handoff', '--scope', 'w'], 'say the next action'],
      [['ack', 'maybe', '--scope', 'w'], 'is not accepted, needs-clarification or declined'],
      [['outcome', '--scope', 'w', '--status', 'great', '--summary', 's'], 'succeeded, partial'],
      [
        ['outcome', '--scope', 'w', '--status', 'failed', '--summary', 's', '--check', 'x'],
        '--check NAME=STATUS',
      ],
      [['continue', '--scope', 'w', '--revision', 'two'], '--revision takes a whole number'],
      [['contract', '--scope', 'w', '--objective', 'o'], '--criterion'],
      [['commit', '--scope', 'w', '--prepared', 'abc', '--expected-head', '0'], 'sha256:<64 hex>'],
      [['metrics', '--server', 'http://127.0.0.1:9'], 'needs a token'],
      [
        ['metrics', '--server', 'http://ann:hunter2-secret@127.0.0.1:9', '--token', 'baton_x'],
        'takes no user name or password',
      ],
      [['metrics', '--server', 'ann:hunter2-secret@127.0.0.1:9', '--token', 'baton_x'], 'takes an http://'],
      [['handoff', 'by token', '--scope', 'w', '--token', 'baton_abc'], '--token needs a server'],
      [['handoff', 'x', '--scope', ' bad'], 'not a scope_id'],
      [['bind'], 'SCOPE_ID'],
      [['experience'], 'baton experience list'],
      [['report', '--frobnicate'], "Unknown option '--frobnicate'"],
      [
        ['capture', '--scope', 'a1', '--scope', 'b1', '--source-id', 'x', '--text', 'y'],
        '--scope is given twice',
      ],
      [
        ['ack', 'accepted', '--scope', 'w', '--revision', '3', '--revision', '4'],
        '--revision is given twice',
      ],
      [['init', '--database', ''], '--database needs a SQLite file path'],
      [['read', '--scope', 'w', '--from', '0'], '--from takes a whole number from 1'],
      [
        [
          'outcome',
          '--scope',
          'w',
          '--status',
          'failed',
          '--summary',
          's',
          '--check',
          'a=passed:verified:b1@sha256:zz',
          '--objective',
          'o',
        ],
        '"sha256:zz" is not a digest',
      ],
      [
        ['experience', 'review', 'x@sha256:00', '--scope', 'w', '--decision', 'approved', '--note', 'n'],
        'is not a digest',
      ],
    ];
    const results = await Promise.all(usage.map(([args]) => tree.baton(args)));
    usage.forEach(([args, message], index) => {
      expect(results[index]!.code, args.join(' ')).toBe(2);
      expect(results[index]!.stderr, args.join(' ')).toContain(message);
      // A password in --server is never repeated back.
      expect(results[index]!.stderr, args.join(' ')).not.toContain('hunter2');
    });
    // Nothing was captured by the refused double --scope.
    expect(ok(await tree.baton(['status', '--json'])).stdout).not.toContain('"b1"');
    // Nor by the handoff whose --token had no server to go to.
    expect((await tree.baton(['report', '--scope', 'w'])).stdout).not.toContain('by token');
  });

  it('answers help, oversized or endless input, missing things and an unreachable server as documented', async () => {
    ok(await tree.baton(['init']));
    for (const args of [
      ['work', '--help'],
      ['help', 'handoff'],
      ['handoff', '--help'],
    ]) {
      const help = await tree.baton(args);
      expect({ args, code: help.code }).toEqual({ args, code: 0 });
      expect(help.stdout).toMatch(/Usage: baton (work|handoff)/);
    }
    expect((await tree.baton(['work', '--help'])).stdout).toContain('baton work show');
    const big = join(tree.dir, 'big.log');
    writeFileSync(big, Buffer.alloc(3 * 1024 * 1024, 0x61));
    for (const file of [big, '/dev/zero']) {
      for (const option of ['--file', '--json-file']) {
        const huge = await tree.baton(['capture', '--scope', 'w', '--source-id', 'huge', option, file]);
        expect({ file, option, code: huge.code }).toEqual({ file, option, code: 1 });
        expect(huge.stderr).toContain('payload_too_large');
        expect(huge.stderr).not.toMatch(/RangeError|\n\s+at /);
      }
    }
    // Input that is not JSON is a usage error that names the input, without the usage text.
    const notJson = await tree.baton(['call', 'capture_source', '--input', '{"scope_id":']);
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toContain('the input is not JSON');
    expect(notJson.stderr).not.toContain('Usage:');
    // Standard input is bounded the same way: an endless one is refused, not read forever.
    for (const args of [
      ['call', 'capture_source', '--input-file', '-'],
      ['work', 'create', 'endless', '--file', '-'],
    ]) {
      const endless = await batonWithStdin(tree, args, '/dev/zero');
      expect({ args, code: endless.code }).toEqual({ args, code: 1 });
      expect(endless.stderr).toContain('payload_too_large');
    }
    const missing = await tree.baton(['continue', '--scope', 'nothing']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('not_found');
    const jsonError = await tree.baton(['continue', '--scope', 'nothing', '--json']);
    expect(jsonError.code).toBe(1);
    expect(JSON.parse(jsonError.stderr)).toMatchObject({ error: { code: 'not_found' } });
    const noProject = await tree.baton(['metrics', '--project', 'ghost']);
    expect(noProject.code).toBe(1);
    expect(noProject.stderr).toContain('baton init --project ghost');
    const outside = await tree.baton(['bind', 'w'], { cwd: tree.dir });
    expect(outside.code).toBe(1);
    expect(outside.stderr).toContain('not inside a Git work tree');
    const unreadable = await tree.baton([
      'capture',
      '--scope',
      'w',
      '--source-id',
      'f',
      '--file',
      'missing.txt',
    ]);
    expect(unreadable.code).toBe(1);
    expect(unreadable.stderr).toContain('ENOENT');
    const unreachable = await tree.baton(['metrics', '--server', 'http://127.0.0.1:9', '--token', 'baton_x']);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toContain('unavailable');
  });
});
