/**
 * Managed work for an agent Baton does not run, through the official MCP SDK client over stdio
 * (and, for the session's workspace, over Streamable HTTP on `baton serve`):
 * the model proposes through the work tools, Baton validates and appends, and only work_verify
 * reaches succeeded or completed. Secret canaries planted in the server's environment, in a
 * workspace file and in command output never come back in a tool result or reach the ledger.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportStream } from '../src/app/ledger.ts';
import { defaultWorkConfig } from '../src/core/work/config.ts';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { workToolNames } from '../src/mcp/work-tools.ts';
import { noAuthorityPattern, ok } from './helpers/mcp.ts';
import { runBaton, spawnServe, type ServeProcess } from './helpers/serve-process.ts';

const entry = join(import.meta.dirname, 'helpers', 'mcp-stdio-entry.ts');

/** The bounds work_revise's listed input schema states. */
function reviseLimits(tools: readonly { name: string; inputSchema: { properties?: object } }[]) {
  const revise = tools.find((tool) => tool.name === 'work_revise')!.inputSchema.properties as Record<
    string,
    { maxItems?: number; maximum?: number }
  >;
  return {
    items: revise.items?.maxItems,
    previous_revision: revise.previous_revision?.maximum,
    criteria: revise.criteria?.maxItems,
    constraints: revise.constraints?.maxItems,
    assumptions: revise.assumptions?.maxItems,
  };
}
const canary = `zz-mcp-canary-${process.pid}-${Date.now()}`;
const fileCanary = `ghp_${'Z'.repeat(36)}`;

/** A first proposal: write notes.md, checked by a file criterion and a shell one. */
const notesContract = {
  contract_id: 'work-1',
  objective: 'write the notes',
  criteria: [
    { criterion_id: 'notes', statement: 'notes exist', kind: { type: 'file_exists', path: 'notes.md' } },
    {
      criterion_id: 'says-done',
      statement: 'notes say done',
      kind: { type: 'shell', command: 'grep -q done notes.md' },
    },
  ],
  items: [{ item_id: 'write', title: 'Write notes', criterion_ids: ['notes', 'says-done'] }],
};

describe('managed work over MCP (stdio)', () => {
  let dir: string;
  let workspace: string;
  let client: Client;
  const transcript: string[] = [];
  /** Each work tool's listed output schema, as the first test reads them. */
  const outputSchemas = new Map<string, Record<string, unknown>>();

  async function call(name: string, args: Record<string, unknown>) {
    const result = await client.callTool({ name, arguments: args });
    transcript.push(JSON.stringify(result));
    return result;
  }

  async function expectToolError(name: string, args: Record<string, unknown>, code: string, rule?: string) {
    const result = await call(name, args);
    expect(result.isError).toBe(true);
    const error = (result.structuredContent as { error: { code: string; details: { rule?: string } } }).error;
    expect(error.code).toBe(code);
    if (rule) expect(error.details.rule).toBe(rule);
  }

  function result(called: Awaited<ReturnType<typeof call>>) {
    expect(called.isError).toBe(true);
    return called.structuredContent as { error: { code: string; message: string; details: unknown } };
  }

  async function good<T = Record<string, unknown>>(name: string, args: Record<string, unknown>): Promise<T> {
    const result = await ok<T>(client, name, args);
    transcript.push(JSON.stringify(result));
    return result;
  }

  /** Revision 1 of a workstream, through the continuity tools: its next action is to write the notes. */
  async function commitFirstRevision(scope_id: string): Promise<void> {
    const prepared = await good<{ digest: string }>('handoff_current_work', {
      scope_id,
      source_id: 'boundary-1',
      objective: 'Write the notes',
      disposition: 'continue',
      next_action: { text: 'Write notes.md', basis: 'declared' },
    });
    await good('commit_handoff', { scope_id, prepared: prepared.digest, expected_head: 0 });
  }

  /** A work_revise proposal of a named contract: one item `a`, held to one file criterion. */
  function fileProposal(session_id: string, contract_id: string) {
    return {
      session_id,
      contract_id,
      objective: contract_id,
      criteria: [{ criterion_id: 'c', statement: 's', kind: { type: 'file_exists', path: 'x' } }],
      items: [{ item_id: 'a', title: 'A', criterion_ids: ['c'] }],
    };
  }

  /** Propose revision 1 of a session's contract: one item `a`, held to one shell criterion. */
  async function proposeShell(session_id: string, criterion_id: string, command: string): Promise<void> {
    await good('work_revise', {
      session_id,
      objective: `check ${criterion_id}`,
      criteria: [{ criterion_id, statement: criterion_id, kind: { type: 'shell', command } }],
      items: [{ item_id: 'a', title: 'A', criterion_ids: [criterion_id] }],
    });
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-mcp-work-'));
    workspace = mkdtempSync(join(tmpdir(), 'baton-mcp-ws-'));
    execFileSync('git', ['init', '-q', workspace]);
    writeFileSync(join(workspace, 'secret.txt'), `${canary}\n${fileCanary}\n`);
    client = new Client({ name: 'baton-test', version: '0.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [entry, join(dir, 'baton.db'), 'acme'],
        cwd: workspace,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', BATON_MCP_CANARY: canary },
        stderr: 'inherit',
      }),
    );
  });

  afterAll(async () => {
    await client.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(workspace, { recursive: true, force: true });
  });

  it('lists the seven work tools, each saying it grants no authority', async () => {
    const { tools } = await client.listTools();
    const work = tools.filter((tool) => workToolNames.includes(tool.name));
    expect(work.map((tool) => tool.name).sort()).toEqual(
      [
        'work_attach_evidence',
        'work_end',
        'work_get',
        'work_request_input',
        'work_revise',
        'work_transition',
        'work_verify',
      ].sort(),
    );
    for (const tool of work) {
      expect(tool.description).toMatch(noAuthorityPattern);
      // A title for people, not the tool's name; and when to call it, as the continuity tools say.
      expect(tool.title, tool.name).toMatch(/^[A-Z][a-z]+( [a-z]+)+$/);
      expect(tool.annotations?.title, tool.name).toBe(tool.title);
      expect(tool.description, tool.name).toMatch(/\. Call it (only )?(when|after|as|at)\b/);
      // Listed, so the client checks every result of the tests below against it.
      expect(tool.outputSchema, tool.name).toMatchObject({ type: 'object' });
      outputSchemas.set(tool.name, tool.outputSchema!);
      expect(tool.annotations?.readOnlyHint).toBe(tool.name === 'work_get');
      expect(tool.inputSchema.properties ?? {}).not.toHaveProperty('project_id');
    }
    // The listed schema states the limits the input is held to, so a model can keep to them:
    // this server's [work] limits (the defaults here) among them.
    expect(reviseLimits(work)).toEqual({
      items: defaultWorkConfig.max_items,
      previous_revision: defaultWorkConfig.max_revisions - 1,
      criteria: 1000,
      constraints: 256,
      assumptions: 256,
    });
  });

  it('works a contract from proposal to verified completion; the model never completes it itself', async () => {
    const session_id = 'claude-1';
    const created = await good<{
      contract: { status: string; revision: number; items: { status: string }[] };
    }>('work_revise', { session_id, ...notesContract });
    expect(created.contract).toMatchObject({ status: 'active', revision: 1 });
    expect(created.contract.items[0]?.status).toBe('ready');
    const move = (to: string, operation_id?: string) =>
      call('work_transition', {
        session_id,
        revision: 1,
        item_id: 'write',
        to,
        ...(operation_id ? { operation_id } : {}),
      });

    expect((await move('running', 'op-start')).isError).toBeFalsy();
    await expectToolError(
      'work_transition',
      { session_id, revision: 1, item_id: 'write', to: 'succeeded' },
      'conflict',
      'invalid_transition',
    );
    const gated = await good<{ gate: { decision: string } }>('work_get', { session_id });
    expect(gated.gate.decision).toBe('block');
    // Ending the run completed is refused while the gate blocks.
    await expectToolError('work_end', { session_id, status: 'completed' }, 'conflict', 'work_incomplete');

    expect((await move('ready_for_verification')).isError).toBeFalsy();
    // A client that asks for progress hears of each criterion as it starts (and may keep its
    // request timeout alive with it: a shell criterion can run for a minute).
    const progress: { progress: number; total?: number; message?: string }[] = [];
    const verifying = await client.callTool({ name: 'work_verify', arguments: { session_id } }, undefined, {
      onprogress: (update) => progress.push(update),
    });
    transcript.push(JSON.stringify(verifying));
    const failed = verifying.structuredContent as {
      contract_status: string;
      verdicts: { verdict: string }[];
    };
    expect(verifying.isError).toBeFalsy();
    expect(progress.map(({ progress: done, total }) => ({ done, total }))).toEqual([
      { done: 0, total: 2 },
      { done: 1, total: 2 },
    ]);
    progress.forEach(({ message }, at) =>
      expect(message).toMatch(new RegExp(`^checking ${at + 1}/2: \\S+ \\(\\w+\\)$`)),
    );
    expect(failed.contract_status).toBe('active');
    expect(failed.verdicts.map((verdict) => verdict.verdict)).toEqual(['failed', 'failed']);

    writeFileSync(join(workspace, 'notes.md'), 'all done\n');
    expect((await move('running')).isError).toBeFalsy();
    expect((await move('ready_for_verification')).isError).toBeFalsy();
    const passed = await good<{ contract_status: string; snapshot: { gate: { decision: string } } }>(
      'work_verify',
      { session_id },
    );
    expect(passed.contract_status).toBe('completed');
    expect(passed.snapshot.gate.decision).toBe('allow');
    // Now the run may end completed, once.
    const ended = await good<{ projection: { terminal: { status: string } } }>('work_end', {
      session_id,
      status: 'completed',
    });
    expect(ended.projection.terminal.status).toBe('completed');
    await expectToolError('work_end', { session_id, status: 'aborted' }, 'conflict', 'session_ended');

    // The client held each result to its tool's schema; the schemas refuse what they do not describe.
    const validator = new AjvJsonSchemaValidator();
    const valid = (name: string, value: unknown) =>
      validator.getValidator(outputSchemas.get(name)!)(value).valid;
    expect(valid('work_verify', passed)).toBe(true);
    expect(valid('work_verify', { ...passed, contract_status: 7 })).toBe(false);
    expect(valid('work_get', gated)).toBe(true);
    expect(valid('work_get', { ...gated, gate: { decision: 'maybe' } })).toBe(false);
  });

  it('refuses bad input with invalid_input and a stale revision with revision_conflict', async () => {
    await expectToolError('work_transition', { session_id: 'claude-1', item_id: 'write' }, 'invalid_input');
    await expectToolError('work_get', { session_id: 'nobody' }, 'not_found');
    await good('work_revise', {
      session_id: 'claude-2',
      objective: 'second',
      criteria: [{ criterion_id: 'c', statement: 's', kind: { type: 'file_exists', path: 'x' } }],
      items: [{ item_id: 'a', title: 'A', criterion_ids: ['c'] }],
    });
    await good('work_revise', {
      session_id: 'claude-2',
      previous_revision: 1,
      objective: 'second, revised',
      criteria: [{ criterion_id: 'c', statement: 's', kind: { type: 'file_exists', path: 'x' } }],
      items: [{ item_id: 'a', title: 'A', criterion_ids: ['c'] }],
      reason: 'clearer',
    });
    await expectToolError(
      'work_transition',
      { session_id: 'claude-2', revision: 1, item_id: 'a', to: 'running' },
      'revision_conflict',
      'stale_revision',
    );
    await expectToolError(
      'work_revise',
      {
        session_id: 'claude-3',
        objective: 'escape',
        criteria: [],
        items: [{ item_id: 'a', title: 'A', path_claims: ['../../etc'] }],
      },
      'invalid_input',
    );
    // A refused first proposal starts no session: nothing was written.
    await expectToolError('work_get', { session_id: 'claude-3' }, 'not_found');
    await expectToolError(
      'work_revise',
      { session_id: 'claude-4', objective: 'o', items: [{ item_id: 'i1', title: 'Item one' }] },
      'invalid_input',
    );
    await expectToolError('work_get', { session_id: 'claude-4' }, 'not_found');
    // work_verify holds contract_id to the limits of every other work id, before it reads anything.
    const long = await call('work_verify', { session_id: 'claude-2', contract_id: 'c'.repeat(10_000) });
    expect(result(long).error).toMatchObject({
      code: 'invalid_input',
      details: { issues: [expect.objectContaining({ path: 'contract_id' })] },
    });
    // An unknown key of 500 KB comes back cut to about 100 characters, not twice in full.
    const huge = await call('work_get', { session_id: 'claude-2', ['k'.repeat(500_000)]: 1 });
    expect(result(huge).error.code).toBe('invalid_input');
    expect(result(huge).error.message).toContain(`"${'k'.repeat(100)}…"`);
    expect(JSON.stringify(huge).length).toBeLessThan(4_000);
    const listed = (await client.listTools()).tools.find((tool) => tool.name === 'work_verify')!;
    expect(listed.inputSchema.properties?.contract_id).toMatchObject({ maxLength: 128 });
  });

  it('revises the contract work_revise names, as HTTP does: a name that is not in the session is not_found and writes nothing', async () => {
    const session_id = 'claude-named';
    const proposal = fileProposal(session_id, 'named-1');
    const created = await good<{ position: number }>('work_revise', proposal);
    await expectToolError(
      'work_revise',
      { ...proposal, contract_id: 'someone-else', previous_revision: 1, reason: 'not mine' },
      'not_found',
    );
    const read = await good<{ position: number; contract: { contract_id: string; revision: number } }>(
      'work_get',
      { session_id },
    );
    expect(read.position).toBe(created.position);
    expect(read.contract).toMatchObject({ contract_id: 'named-1', revision: 1 });
    const revised = await good<{ contract: { contract_id: string; revision: number } }>('work_revise', {
      ...proposal,
      previous_revision: 1,
      reason: 'named again',
    });
    expect(revised.contract).toMatchObject({ contract_id: 'named-1', revision: 2 });
  });

  it('creates a branch beside the live contract when work_revise says branch, and refuses branch on a revise', async () => {
    const session_id = 'claude-branch';
    const proposal = fileProposal(session_id, 'main-1');
    await good('work_revise', proposal);
    const side = { ...proposal, contract_id: 'side-1', objective: 'side' };
    await expectToolError('work_revise', side, 'conflict', 'second_active_contract');
    const branched = await good<{
      projection: { contracts: { contract_id: string; branch: boolean; status: string }[] };
    }>('work_revise', { ...side, branch: true });
    expect(branched.projection.contracts.map(({ contract_id, branch }) => ({ contract_id, branch }))).toEqual(
      [
        { contract_id: 'main-1', branch: false },
        { contract_id: 'side-1', branch: true },
      ],
    );
    // A revision revises the contract it names; it starts no branch, and saying so is refused.
    const { position } = await good<{ position: number }>('work_get', { session_id });
    await expectToolError(
      'work_revise',
      { ...proposal, previous_revision: 1, reason: 'again', branch: true },
      'invalid_input',
    );
    expect((await good<{ position: number }>('work_get', { session_id })).position).toBe(position);
  });

  it('binds the session of a first proposal to the workstream whose handoff it accepted: verification records the covering outcome', async () => {
    const scope_id = 'mcp-bound';
    await commitFirstRevision(scope_id);
    const confirmed = { live_workspace: 'confirmed', capability: 'confirmed', authorization: 'confirmed' };
    const { receipt } = await good<{ receipt: { source_ref: Record<string, string> } }>(
      'acknowledge_handoff',
      {
        scope_id,
        source_id: 'receipt-1',
        target: { exact: 1 },
        status: 'accepted',
        receiver_checks: confirmed,
      },
    );
    const binding = { scope_id, handoff_receipt_ref: receipt.source_ref };
    // A revision binds nothing, and an existing session is not bound after the fact.
    await expectToolError(
      'work_revise',
      { ...fileProposal('claude-bound', 'notes'), previous_revision: 1, reason: 'r', ...binding },
      'invalid_input',
    );
    await good('work_revise', fileProposal('claude-unbound', 'first'));
    await expectToolError(
      'work_revise',
      { ...fileProposal('claude-unbound', 'second'), branch: true, ...binding },
      'conflict',
      'session_binding',
    );

    const session_id = 'claude-bound';
    await good('work_revise', { session_id, ...notesContract, contract_id: 'notes-1', ...binding });
    for (const to of ['running', 'ready_for_verification']) {
      await good('work_transition', { session_id, revision: 1, item_id: 'write', to });
    }
    writeFileSync(join(workspace, 'notes.md'), 'done\n');
    try {
      await good('work_verify', { session_id });
    } finally {
      rmSync(join(workspace, 'notes.md'), { force: true });
    }
    const continuity = await good<{ result: { outcome_state: string; counts: Record<string, number> } }>(
      'get_work_continuity',
      { scope_id },
    );
    expect(continuity.result).toMatchObject({ outcome_state: 'covered', counts: { 'task-outcome': 1 } });
  });

  it('answers work_end of an interrupted bound session with the Handoff Baton prepared, which continue_handoff reads', async () => {
    const scope_id = 'mcp-interrupted';
    await commitFirstRevision(scope_id);
    const session_id = 'claude-out-of-turns';
    await good('work_revise', { session_id, ...notesContract, contract_id: 'notes-1', scope_id });
    await good('work_transition', { session_id, revision: 1, item_id: 'write', to: 'running' });
    // The client validates this answer against work_end's listed output schema.
    const ended = await good<{
      terminal: {
        status: string;
        handoff: { scope_id: string; prepared_digest: string; base_revision: number };
      };
    }>('work_end', { session_id, status: 'max_turns', reason: 'ran out of turns' });
    expect(ended.terminal).toMatchObject({ status: 'max_turns', handoff: { scope_id, base_revision: 1 } });
    const read = await good<{ handoff: { next_action: { text: string } }; evidence: string }>(
      'continue_handoff',
      {
        scope_id,
        selection: { prepared: ended.terminal.handoff.prepared_digest },
      },
    );
    expect(read.evidence).toBe('available');
    expect(read.handoff.next_action.text).toMatch(
      /^Resume item write "Write notes" of contract notes-1 revision 1/,
    );
    const continuity = await good<{ result: { timeline: { kind: string; session_id?: string }[] } }>(
      'get_work_continuity',
      { scope_id },
    );
    expect(continuity.result.timeline.at(-1)).toMatchObject({ kind: 'handoff-boundary', session_id });
  });

  it('marks attached evidence available when it resolves in the ledger, and unavailable with the reason', async () => {
    const session_id = 'claude-evidence';
    await good('work_revise', {
      session_id,
      objective: 'evidence',
      criteria: [{ criterion_id: 'c', statement: 's', kind: { type: 'file_exists', path: 'missing.md' } }],
      items: [{ item_id: 'a', title: 'A', criterion_ids: ['c'] }],
    });
    // The verdict cites the tool_result entry Baton wrote of the check's output.
    const report = await good<{ verdicts: { evidence: Record<string, unknown>[] }[] }>('work_verify', {
      session_id,
    });
    const written = report.verdicts[0]!.evidence[0]!;
    expect(written).toMatchObject({ type: 'tool_result', session_id });
    const attach = (evidence: Record<string, unknown>) =>
      good<{
        contract: { items: { evidence: unknown[]; evidence_availability: unknown[] }[] };
      }>('work_attach_evidence', { session_id, revision: 1, item_id: 'a', evidence });
    await attach(written);
    // The agent's own transcript is outside Baton's ledger: kept, marked unavailable.
    const agents = { type: 'tool_result', session_id, tool_use_id: 'toolu_01' };
    const attached = await attach(agents);
    expect(attached.contract.items[0]).toMatchObject({
      evidence: [written, agents],
      evidence_availability: [{ status: 'available' }, { status: 'unavailable', reason: 'missing_entry' }],
    });
    // The listed output schema states the decision and refuses one it does not describe.
    const validator = new AjvJsonSchemaValidator();
    const schema = validator.getValidator(outputSchemas.get('work_attach_evidence')!);
    expect(schema(attached).valid).toBe(true);
    const maybe = structuredClone(attached);
    maybe.contract.items[0]!.evidence_availability[0] = { status: 'maybe' };
    expect(schema(maybe).valid).toBe(false);
  });

  it('starts the session of a first proposal in the same append as its contract', async () => {
    await good('work_revise', {
      session_id: 'claude-5',
      objective: 'fresh',
      criteria: [{ criterion_id: 'c', statement: 's', kind: { type: 'file_exists', path: 'x' } }],
      items: [{ item_id: 'a', title: 'A', criterion_ids: ['c'] }],
    });
    const work = await good<{ position: number; contract: { revision: number } }>('work_get', {
      session_id: 'claude-5',
    });
    expect(work.contract.revision).toBe(1);
    const store = await openSqliteStore({ path: join(dir, 'baton.db') });
    try {
      const lines: string[] = [];
      await exportStream(
        { store },
        { project_id: 'acme', kind: 'session', session_id: 'claude-5' },
        (line) => {
          lines.push(line);
        },
      );
      const types = lines.slice(1).map((line) => (JSON.parse(line) as { type: string }).type);
      expect(types[0]).toBe('session_header');
      expect(types.slice(1).every((type) => type === 'work_event')).toBe(true);
      expect(JSON.parse(lines[1]!)).toMatchObject({ content: { work_mode: 'managed', workspace } });
    } finally {
      await store.close();
    }
  });

  it('answers work_verify promptly when a criterion prints 64 KiB of one long word', async () => {
    // Output is scrubbed on the server's event loop before it is stored; a scrubber that
    // backtracked over long runs of name characters froze the server for minutes here.
    const session_id = 'claude-long-word';
    await proposeShell(session_id, 'long', "yes password | tr -d '\\n' | head -c 65536");
    const started = Date.now();
    const result = await client.callTool({ name: 'work_verify', arguments: { session_id } }, undefined, {
      timeout: 20_000,
    });
    expect(result.isError).toBeFalsy();
    expect((result.structuredContent as { verdicts: { verdict: string }[] }).verdicts).toEqual([
      expect.objectContaining({ verdict: 'passed' }),
    ]);
    expect(Date.now() - started).toBeLessThan(10_000);
  }, 30_000);

  it('stops running criteria when the client gives up on work_verify, and records nothing of it', async () => {
    const session_id = 'claude-gives-up';
    // A sleep no other test or process runs, to find on the host: the sandbox's processes are
    // visible from outside its PID namespace.
    const marker = `${40 + (process.pid % 1000) / 1000}`;
    const running = () => {
      try {
        return execFileSync('pgrep', ['-f', `^sleep ${marker}$`], { encoding: 'utf8' }).trim() !== '';
      } catch {
        return false;
      }
    };
    await good('work_revise', {
      session_id,
      objective: 'slow checks',
      criteria: ['one', 'two'].map((criterion_id) => ({
        criterion_id,
        statement: 'sleeps',
        kind: { type: 'shell', command: `sleep ${marker}` },
      })),
      items: [{ item_id: 'a', title: 'A', criterion_ids: ['one', 'two'] }],
    });
    const before = await good<{ position: number }>('work_get', { session_id });
    // The SDK client cancels a request it stops waiting for (notifications/cancelled).
    await expect(
      client.callTool({ name: 'work_verify', arguments: { session_id } }, undefined, { timeout: 1500 }),
    ).rejects.toThrow(/timed out/i);
    const deadline = Date.now() + 5000;
    while (running() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(running()).toBe(false);
    // Still nothing recorded once the second criterion would have started.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(running()).toBe(false);
    const after = await good<{ position: number }>('work_get', { session_id });
    expect(after.position).toBe(before.position);
  }, 30_000);

  it('secret canaries from the environment, a workspace file and command output reach no result and no ledger entry', async () => {
    const session_id = 'claude-secrets';
    await proposeShell(session_id, 'leak', 'cat secret.txt; env; exit 1');
    await call('work_transition', { session_id, revision: 1, item_id: 'a', to: 'running' });
    await call('work_transition', { session_id, revision: 1, item_id: 'a', to: 'ready_for_verification' });
    const report = await good<{ verdicts: { verdict: string }[] }>('work_verify', { session_id });
    expect(report.verdicts[0]?.verdict).toBe('failed');
    await good('work_get', { session_id });
    const store = await openSqliteStore({ path: join(dir, 'baton.db') });
    let ledger = '';
    try {
      for (const id of ['claude-1', 'claude-2', session_id]) {
        await exportStream({ store }, { project_id: 'acme', kind: 'session', session_id: id }, (chunk) => {
          ledger += chunk;
        });
      }
    } finally {
      await store.close();
    }
    const everything = `${transcript.join('\n')}\n${ledger}`;
    expect(everything).toContain('[redacted]');
    expect(everything).not.toContain(canary);
    expect(everything).not.toContain(fileCanary);
  });
});

describe('managed work over MCP (Streamable HTTP on baton serve)', () => {
  let dir: string;
  let workspace: string;
  let server: ServeProcess;
  let client: Client;
  let token: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-mcp-http-work-'));
    workspace = mkdtempSync(join(tmpdir(), 'baton-mcp-http-ws-'));
    execFileSync('git', ['init', '-q', workspace]);
    writeFileSync(join(workspace, 'notes.md'), 'all done\n');
    writeFileSync(join(workspace, 'baton.toml'), '[work]\nmax_items = 5\nmax_revisions = 3\n');
    const database = join(dir, 'baton.db');
    const init = await runBaton(['init', '--project', 'acme', '--json'], database, workspace);
    expect(init.code, init.stderr).toBe(0);
    token = (JSON.parse(init.stdout) as { token: { token: string } }).token.token;
    server = await spawnServe(database, workspace);
    client = new Client({ name: 'baton-test', version: '0.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
  });

  afterAll(async () => {
    await client?.close();
    expect(await server?.stop()).toBe(0);
    rmSync(dir, { recursive: true, force: true });
    rmSync(workspace, { recursive: true, force: true });
  });

  it("states the [work] limits of baton serve's baton.toml, in the tool list and in the OpenAPI document", async () => {
    const { tools } = await client.listTools();
    expect(reviseLimits(tools)).toEqual({
      items: 5,
      previous_revision: 2,
      criteria: 1000,
      constraints: 256,
      assumptions: 256,
    });
    const document = (await (await fetch(`${server.url}/v1/openapi.json`)).json()) as {
      paths: Record<string, { post: { requestBody: { content: Record<string, { schema: unknown }> } } }>;
    };
    const body = (path: string) =>
      document.paths[path]!.post.requestBody.content['application/json']!.schema as {
        properties: Record<string, { maxItems?: number; maximum?: number }>;
      };
    expect(body('/v1/sessions/{session_id}/work/contracts').properties.items!.maxItems).toBe(5);
    expect(body('/v1/sessions/{session_id}/work/revise').properties.previous_revision!.maximum).toBe(2);
  });

  it('starts a session in the workspace baton serve runs in, so file and shell criteria are checked there', async () => {
    const session_id = 'http-agent-1';
    await ok(client, 'work_revise', { session_id, ...notesContract });
    for (const to of ['running', 'ready_for_verification'])
      await ok(client, 'work_transition', { session_id, revision: 1, item_id: 'write', to });
    const verified = await ok<{ contract_status: string; verdicts: { verdict: string; reason?: string }[] }>(
      client,
      'work_verify',
      { session_id },
    );
    expect(verified.verdicts.map(({ verdict }) => verdict)).toEqual(['passed', 'passed']);
    expect(verified.contract_status).toBe('completed');
  });

  it('refuses a second work_verify of a session while one runs, from another MCP session of the same server', async () => {
    const session_id = 'http-twice';
    await ok(client, 'work_revise', {
      session_id,
      objective: 'one slow check',
      criteria: [{ criterion_id: 'slow', statement: 'sleeps', kind: { type: 'shell', command: 'sleep 1' } }],
      items: [{ item_id: 'a', title: 'A', criterion_ids: ['slow'] }],
    });
    const other = new Client({ name: 'baton-test-other', version: '0.0.0' });
    await other.connect(
      new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
    try {
      const first = ok<{ verdicts: { verdict: string }[] }>(client, 'work_verify', { session_id });
      await new Promise((resolve) => setTimeout(resolve, 300));
      const second = await other.callTool({ name: 'work_verify', arguments: { session_id } });
      expect(second.isError).toBe(true);
      expect(second.structuredContent).toMatchObject({
        error: { code: 'conflict', details: { rule: 'verification_running', session_id } },
      });
      expect((await first).verdicts).toEqual([expect.objectContaining({ verdict: 'passed' })]);
    } finally {
      await other.close();
    }
  }, 30_000);

  it('stops work_verify when its client drops the connection without cancelling, and records nothing', async () => {
    const session_id = 'http-drops';
    const marker = `${50 + (process.pid % 1000) / 1000}`;
    const running = () => {
      try {
        return execFileSync('pgrep', ['-f', `^sleep ${marker}$`], { encoding: 'utf8' }).trim() !== '';
      } catch {
        return false;
      }
    };
    await ok(client, 'work_revise', {
      session_id,
      objective: 'slow checks',
      criteria: ['one', 'two'].map((criterion_id) => ({
        criterion_id,
        statement: 'sleeps',
        kind: { type: 'shell', command: `sleep ${marker}` },
      })),
      items: [{ item_id: 'a', title: 'A', criterion_ids: ['one', 'two'] }],
    });
    const before = await ok<{ position: number }>(client, 'work_get', { session_id });
    // A second client of the same token, whose connection goes away mid-call: close() aborts its
    // open POST and sends no notifications/cancelled, as a crashed agent or a lost network would.
    const leaving = new Client({ name: 'baton-test-leaving', version: '0.0.0' });
    await leaving.connect(
      new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
    const call = leaving.callTool({ name: 'work_verify', arguments: { session_id } });
    const started = Date.now() + 5000;
    while (!running() && Date.now() < started) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(running()).toBe(true);
    await leaving.close();
    await expect(call).rejects.toThrow(/closed/i);
    const deadline = Date.now() + 5000;
    while (running() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(running()).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(running()).toBe(false);
    const after = await ok<{ position: number }>(client, 'work_get', { session_id });
    expect(after.position).toBe(before.position);
  }, 30_000);
});
