/**
 * Static flows (docs/flows.md): definitions checked as baton.toml is read, nodes run in order in
 * the real read-only sandbox, receipts in the ledger (real SQLite), a linked run owning its item
 * from ready to verification without ever marking it succeeded, the verifier deciding from the
 * completion marker, the CLI, and Baton's own agent running a flow through its `flow` tool.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runAgent } from '../src/agent/loop.ts';
import { chatRoute } from '../src/agent/models.ts';
import type { AppDeps } from '../src/app/deps.ts';
import { runFlow } from '../src/app/flows.ts';
import { verifyWork } from '../src/app/verify.ts';
import * as work from '../src/app/work.ts';
import { run } from '../src/cli/run.ts';
import { systemClock } from '../src/core/clock.ts';
import { isBatonError } from '../src/core/errors.ts';
import { agentConfigSchema } from '../src/core/work/config.ts';
import { flowOrder, readFlowsConfig } from '../src/core/work/flows.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { startScriptedModel, type ScriptedModel } from './helpers/scripted-model.ts';

const secret = 'sk-live-flow-secret-9e8d7c6b';
const env = { DEPLOY_KEY: secret, AGENT_KEY: 'sk-agent' };
const human = { type: 'human' as const, id: 'ana' };

const toml = `
[flows.check]
description = "lint, then test, then report"
[[flows.check.nodes]]
node_id = "report"
command = "echo report done"
needs = ["test"]
[[flows.check.nodes]]
node_id = "lint"
command = "test -f README.md && echo lint ok"
[[flows.check.nodes]]
node_id = "test"
command = "grep -q hello NOTE.md && echo tests pass && echo $DEPLOY_KEY"
needs = ["lint"]
timeout_ms = 20000

[flows.slow]
[[flows.slow.nodes]]
node_id = "wait"
command = "sleep 30"
[[flows.slow.nodes]]
node_id = "after"
command = "echo after"
needs = ["wait"]
`;

let workspace: string;
let store: SqliteStore;
let deps: AppDeps;

beforeEach(async () => {
  workspace = mkdtempSync(join(tmpdir(), 'baton-flow-'));
  writeFileSync(join(workspace, 'README.md'), '# Demo\n');
  writeFileSync(join(workspace, 'NOTE.md'), 'hello\n');
  store = new SqliteStore({ path: ':memory:' });
  await store.createProject('acme');
  const { parse } = await import('smol-toml');
  deps = { store, clock: systemClock, flows: readFlowsConfig(parse(toml)).config };
});

afterEach(async () => {
  await store.close();
  rmSync(workspace, { recursive: true, force: true });
});

async function receipts(session_id: string) {
  const found: { purpose: string; details: Record<string, unknown> }[] = [];
  for await (const entry of store.readStream(work.sessionStream('acme', session_id), {
    kinds: ['receipt'],
  })) {
    found.push(entry.content as { purpose: string; details: Record<string, unknown> });
  }
  return found;
}

const flowOwner = { type: 'flow', name: 'check' };

/** A contract's definition: one item `checked` (owned by `owner`) decided by the check flow's completion. */
function checkDefinition(owner: Record<string, unknown> = flowOwner) {
  return {
    objective: 'Check the demo',
    criteria: [
      {
        criterion_id: 'flow-ok',
        statement: 'the check flow completed',
        kind: { type: 'flow_completed', flow: 'check' },
      },
    ],
    items: [{ item_id: 'checked', title: 'Run the checks', owner, criterion_ids: ['flow-ok'] }],
  };
}

/** A managed session granted the flows, with a contract whose item `checked` flow:check owns. */
async function managed(session_id = 'm', owner: Record<string, unknown> = flowOwner) {
  await work.startSession(deps, 'acme', {
    session_id,
    work_mode: 'managed',
    workspace,
    capabilities: { flows: ['check', 'slow'] },
  });
  await work.createContract(
    deps,
    'acme',
    { session_id, contract_id: 'c1', ...checkDefinition(owner) },
    human,
  );
}

describe('flow definitions', () => {
  it('runs nodes after what they need, otherwise in declared order, and refuses a bad graph naming it', () => {
    expect(flowOrder(deps.flows!.check!)).toEqual(['lint', 'test', 'report']);
    expect(deps.flows!.check!.nodes.find((node) => node.node_id === 'report')!.timeout_ms).toBe(600_000);
    const refused = (text: string) => {
      try {
        readFlowsConfig(JSON.parse(text), 'baton.toml');
        return null;
      } catch (error) {
        return isBatonError(error, 'invalid_input') ? error.message : String(error);
      }
    };
    const flows = (nodes: unknown[]) => JSON.stringify({ flows: { f: { nodes } } });
    expect(refused(flows([]))).toBe('baton.toml: flows.f.nodes a flow needs at least one node');
    expect(refused(flows([{ node_id: 'a', command: 'x', needs: ['b'] }]))).toBe(
      'baton.toml: flows.f.nodes.0.needs names no node b',
    );
    expect(refused(flows([{ node_id: 'a', command: 'x', needs: ['a'] }]))).toBe(
      'baton.toml: flows.f.nodes.0.needs a node cannot need itself',
    );
    expect(
      refused(
        flows([
          { node_id: 'a', command: 'x', needs: ['b'] },
          { node_id: 'b', command: 'y', needs: ['a'] },
        ]),
      ),
    ).toBe('baton.toml: flows.f.nodes the needs form a cycle');
    expect(
      refused(
        flows([
          { node_id: 'a', command: 'x' },
          { node_id: 'a', command: 'y' },
        ]),
      ),
    ).toBe('baton.toml: flows.f.nodes.1.node_id repeats a');
    expect(refused(JSON.stringify({ flows: { 'bad name': { nodes: [] } } }))).toContain(
      'not a valid flow name',
    );
    expect(refused(JSON.stringify({ flows: [] }))).toBe('baton.toml: [flows] must be a table');
    const { warnings } = readFlowsConfig({
      flows: { f: { colour: 1, nodes: [{ node_id: 'a', command: 'x', retry: 2 }] } },
    });
    expect(warnings).toEqual([
      'baton.toml: unknown key flows.f.colour is ignored',
      'baton.toml: unknown key flows.f.nodes.0.retry is ignored',
    ]);
  });
});

describe('a flow run linked to the item it owns', () => {
  it('owns the item from ready to ready_for_verification, attaches each node, and the verifier completes the contract', async () => {
    await managed();
    const seen: string[] = [];
    const result = await runFlow(
      deps,
      'acme',
      { session_id: 'm', flow: 'check', item_id: 'checked' },
      { env, onNode: (progress) => seen.push(`${progress.node_id} ${progress.status}`) },
    );

    expect(result.status).toBe('completed');
    expect(result.item_status).toBe('ready_for_verification');
    expect(result.nodes.map((node) => [node.node_id, node.status])).toEqual([
      ['lint', 'passed'],
      ['test', 'passed'],
      ['report', 'passed'],
    ]);
    expect(seen).toEqual([
      'lint running',
      'lint passed',
      'test running',
      'test passed',
      'report running',
      'report passed',
    ]);
    const stored = await receipts('m');
    const nodes = stored.filter((receipt) => receipt.purpose === 'flow_node');
    expect(nodes.map((receipt) => receipt.details.node_id)).toEqual(['lint', 'test', 'report']);
    expect(nodes[1]!.details.output).toContain('tests pass');
    // The sandbox clears the environment, and every receipt is scrubbed besides.
    expect(JSON.stringify(stored)).not.toContain(secret);
    expect(stored.at(-1)).toMatchObject({
      purpose: 'flow_completed',
      details: {
        flow: 'check',
        run_id: result.run_id,
        status: 'completed',
        contract_id: 'c1',
        item_id: 'checked',
      },
    });

    const item = result.work.contract!.items[0]!;
    expect(item.evidence.map((ref) => ref.type)).toEqual(['flow_node', 'flow_node', 'flow_node', 'receipt']);
    expect(item.evidence_availability.every((availability) => availability.status === 'available')).toBe(
      true,
    );
    // The flow moved the item as the runtime, never into succeeded.
    const moves = [];
    for await (const entry of store.readStream(work.sessionStream('acme', 'm'), { kinds: ['work_event'] })) {
      const event = entry.content as {
        kind: { type: string; to?: string };
        actor: { type: string; id: string };
      };
      if (event.kind.type === 'item_status_changed')
        moves.push(`${event.kind.to} by ${event.actor.type}:${event.actor.id}`);
    }
    expect(moves).toEqual([
      'ready by runtime:baton',
      'running by runtime:flow:check',
      'ready_for_verification by runtime:flow:check',
    ]);

    const report = await verifyWork(deps, 'acme', { session_id: 'm' }, { env });
    expect(report.verdicts).toEqual([
      expect.objectContaining({ criterion_id: 'flow-ok', verdict: 'passed' }),
    ]);
    const after = await work.readWork(deps, 'acme', { session_id: 'm' });
    expect(after.projection!.contracts[0]!.status).toBe('completed');
  });

  it('fails the item when a node fails, skips what needs it, and the criterion fails with it', async () => {
    writeFileSync(join(workspace, 'NOTE.md'), 'goodbye\n');
    await managed();
    const result = await runFlow(
      deps,
      'acme',
      { session_id: 'm', flow: 'check', item_id: 'checked' },
      { env },
    );

    expect(result.status).toBe('failed');
    expect(result.nodes.map((node) => [node.node_id, node.status, node.reason])).toEqual([
      ['lint', 'passed', 'exit code 0'],
      ['test', 'failed', 'exit code 1'],
      ['report', 'skipped', 'not run: it needs test, which did not pass'],
    ]);
    expect(result.item_status).toBe('failed');
    const item = result.work.projection!.contracts[0]!.items[0]!;
    // Skipped nodes ran nothing and are not evidence.
    expect(item.evidence.map((ref) => (ref.type === 'flow_node' ? ref.node_id : ref.type))).toEqual([
      'lint',
      'test',
      'receipt',
    ]);
  });

  it('refuses, writing nothing, a flow that does not own the item, a flow not granted or not configured, an item not ready', async () => {
    await managed('m', { type: 'parent_agent' });
    const head = async () => (await store.getStream(work.sessionStream('acme', 'm'))).head;
    const before = await head();
    const refusal = (input: Record<string, unknown>) =>
      runFlow(deps, 'acme', { session_id: 'm', ...input }, { env }).then(
        () => null,
        (error: unknown) => (isBatonError(error) ? [error.code, error.message] : String(error)),
      );
    expect(await refusal({ flow: 'check', item_id: 'checked' })).toEqual([
      'conflict',
      'item "checked" is owned by parent_agent, not flow:check: a flow runs only the items it owns',
    ]);
    expect(await refusal({ flow: 'nope', item_id: 'checked' })).toEqual([
      'not_found',
      'no flow "nope" is configured: declare it as [flows.nope] in baton.toml',
    ]);
    expect(await refusal({ flow: 'check', item_id: 'ghost' })).toEqual([
      'not_found',
      'no item "ghost" in contract c1',
    ]);
    expect(await refusal({ flow: 'check', item_id: 'checked', extra: 1 })).toEqual([
      'invalid_input',
      expect.stringContaining('extra'),
    ]);
    await work.startSession(deps, 'acme', { session_id: 'plain', workspace });
    const plain = await runFlow(deps, 'acme', { session_id: 'plain', flow: 'check' }, { env }).catch(
      (error: unknown) => error,
    );
    expect(isBatonError(plain, 'forbidden')).toBe(true);
    expect(await head()).toBe(before);
    expect((await store.getStream(work.sessionStream('acme', 'plain'))).head).toBe(1);

    await managed('m2');
    await runFlow(deps, 'acme', { session_id: 'm2', flow: 'check', item_id: 'checked' }, { env });
    const again = await runFlow(
      deps,
      'acme',
      { session_id: 'm2', flow: 'check', item_id: 'checked' },
      { env },
    ).catch((error: unknown) => error);
    expect(isBatonError(again, 'conflict')).toBe(true);
    expect((again as Error).message).toBe(
      'item "checked" is ready_for_verification: a flow starts only a ready item',
    );
  });

  it('a run that breaks down leaves its item interrupted, not running, and says why', async () => {
    await managed();
    // The workspace went away after the session started: the sandbox refuses to start in it.
    rmSync(workspace, { recursive: true, force: true });
    const broke = await runFlow(
      deps,
      'acme',
      { session_id: 'm', flow: 'check', item_id: 'checked' },
      { env },
    ).catch((error: unknown) => error);
    expect(broke).toBeInstanceOf(Error);
    const item = (await work.readWork(deps, 'acme', { session_id: 'm' })).contract!.items[0]!;
    expect(item.status).toBe('interrupted');
  });

  it('lets no one but its flow run a flow-owned item: the model may neither move it by hand nor take it away', async () => {
    await managed();
    const model = { type: 'model' as const, id: 'agent' };
    const contract = (await work.readWork(deps, 'acme', { session_id: 'm' })).contract!;
    const which = { session_id: 'm', revision: contract.revision, item_id: 'checked' };
    const moved = await work
      .transitionItem(deps, 'acme', { ...which, to: 'running' }, model)
      .catch((error: unknown) => error);
    expect(isBatonError(moved, 'conflict')).toBe(true);
    expect((moved as Error).message).toBe(
      'item "checked" is owned by flow:check: only its flow moves it (the flow tool runs it)',
    );
    const taken = await work
      .reassignItem(
        deps,
        'acme',
        { session_id: 'm', item_id: 'checked', owner: { type: 'parent_agent' } },
        model,
      )
      .catch((error: unknown) => error);
    expect(isBatonError(taken, 'conflict')).toBe(true);
    // A revision naming another owner does not move an existing item: the projector, the flow
    // and the verifier all go by the owner the item has.
    await managed('r', { type: 'parent_agent' });
    const revised = await work.reviseContract(
      deps,
      'acme',
      { session_id: 'r', previous_revision: 1, ...checkDefinition(), reason: 'let the flow run it' },
      human,
    );
    expect(revised.contract!.items[0]!.owner).toEqual({ type: 'parent_agent' });
    const mismatch = await runFlow(
      deps,
      'acme',
      { session_id: 'r', flow: 'check', item_id: 'checked' },
      { env },
    ).catch((error: unknown) => error);
    expect((mismatch as { data?: { rule: string } }).data?.rule).toBe('flow_owner_mismatch');
    // The flow still runs it, and the verifier decides.
    const result = await runFlow(
      deps,
      'acme',
      { session_id: 'm', flow: 'check', item_id: 'checked' },
      { env },
    );
    expect(result.item_status).toBe('ready_for_verification');
  });

  it('counts only a completed run linked to a flow-owned item of the contract verified', async () => {
    await managed();
    // A run linked to the item of contract c1 completes…
    await runFlow(deps, 'acme', { session_id: 'm', flow: 'check', item_id: 'checked' }, { env });
    await verifyWork(deps, 'acme', { session_id: 'm' }, { env });
    // …then a second contract's flow criterion, on an item the flow never ran: no pass.
    await work.createContract(
      deps,
      'acme',
      {
        session_id: 'm',
        contract_id: 'c2',
        objective: 'Check again',
        criteria: [
          {
            criterion_id: 'again',
            statement: 'checks pass',
            kind: { type: 'flow_completed', flow: 'check' },
          },
        ],
        items: [{ item_id: 'x', title: 'Check', criterion_ids: ['again'] }],
      },
      human,
    );
    const report = await verifyWork(deps, 'acme', { session_id: 'm', contract_id: 'c2' }, { env });
    expect(report.verdicts.map((verdict) => [verdict.criterion_id, verdict.verdict])).toEqual([
      ['again', 'unknown'],
    ]);
    // A standalone run in a session that holds contracts is refused: it would look linked.
    const unlinked = await runFlow(deps, 'acme', { session_id: 'm', flow: 'check' }, { env }).catch(
      (error: unknown) => error,
    );
    expect(isBatonError(unlinked, 'conflict')).toBe(true);
    expect((unlinked as Error).message).toContain('a run in a session with managed work runs for an item');
  });

  it('a sandbox that cannot start interrupts the item (the machine’s fault, retry-safe) instead of failing it', async () => {
    await managed();
    const result = await runFlow(
      deps,
      'acme',
      { session_id: 'm', flow: 'check', item_id: 'checked' },
      { env, sandbox: { bwrap: '/nonexistent/bwrap' } },
    );
    expect(result.status).toBe('failed');
    expect(result.nodes.map((node) => node.status)).toEqual(['unavailable', 'skipped', 'skipped']);
    expect(result.item_status).toBe('interrupted');
  });

  it('a caller whose progress callback throws still leaves the item interrupted, not running', async () => {
    await managed();
    const broke = await runFlow(
      deps,
      'acme',
      { session_id: 'm', flow: 'check', item_id: 'checked' },
      {
        env,
        onNode: (progress) => {
          if (progress.node_id === 'report' && progress.status === 'passed') throw new Error('stderr closed');
        },
      },
    ).catch((error: unknown) => error);
    expect((broke as Error).message).toBe('stderr closed');
    const item = (await work.readWork(deps, 'acme', { session_id: 'm' })).contract!.items[0]!;
    expect(item.status).toBe('interrupted');
  });

  it('a run a crash cut short is retry-safe on reopening: a flow never writes, so the agent may run it again', async () => {
    await managed();
    const contract = (await work.readWork(deps, 'acme', { session_id: 'm' })).contract!;
    // The process died while the flow ran: the item was left running with no run behind it.
    await work.transitionItem(
      deps,
      'acme',
      { session_id: 'm', revision: contract.revision, item_id: 'checked', to: 'running' },
      { type: 'runtime', id: 'flow:check' },
    );
    const reconciled = await work.reconcileWork(deps, 'acme', { session_id: 'm' });
    const item = reconciled.contract!.items[0]!;
    expect(item.status).toBe('interrupted');
    const retried = await work.transitionItem(
      deps,
      'acme',
      { session_id: 'm', revision: contract.revision, item_id: 'checked', to: 'ready' },
      { type: 'model', id: 'agent' },
    );
    expect(retried.contract!.items[0]!.status).toBe('ready');
  });

  it('a cancelled run kills the running node, runs nothing more, and leaves the item interrupted', async () => {
    await managed();
    // The slow flow owns no item here: run it standalone in the same session, then linked in another.
    const controller = new AbortController();
    const running = runFlow(
      { ...deps, flows: { ...deps.flows, check: deps.flows!.slow! } },
      'acme',
      { session_id: 'm', flow: 'check', item_id: 'checked' },
      {
        env,
        signal: controller.signal,
        onNode: (progress) => {
          if (progress.status === 'running') setTimeout(() => controller.abort(), 200);
        },
      },
    );
    const result = await running;
    expect(result.status).toBe('cancelled');
    expect(result.nodes.map((node) => [node.node_id, node.status])).toEqual([
      ['wait', 'cancelled'],
      ['after', 'cancelled'],
    ]);
    expect(result.item_status).toBe('interrupted');
    expect((await receipts('m')).at(-1)).toMatchObject({
      purpose: 'flow_completed',
      details: { status: 'cancelled', nodes: { wait: 'cancelled', after: 'cancelled' } },
    });
    // A cancelled run is no completion: the criterion fails on it.
    const report = await verifyWork(deps, 'acme', { session_id: 'm' }, { env });
    expect(report.verdicts.map((verdict) => [verdict.criterion_id, verdict.verdict])).toEqual([
      ['flow-ok', 'failed'],
    ]);
    expect(report.verdicts[0]!.reason).toContain('reports failure');
  });
});

describe('baton flow', () => {
  let dir: string;
  const out: string[] = [];
  const err: string[] = [];
  let io: {
    out: (text: string) => void;
    err: (text: string) => void;
    env: Record<string, string>;
    cwd: string;
  };
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'baton-flow-db-'));
    writeFileSync(join(workspace, 'baton.toml'), toml);
    out.length = 0;
    err.length = 0;
    io = {
      out: (text) => out.push(text),
      err: (text) => err.push(text),
      env: { ...env, BATON_DATABASE_URL: join(dir, 'baton.db') },
      cwd: workspace,
    };
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('lists the flows and runs one standalone, in a session of its own, telling each node on stderr', async () => {
    expect(await run(['project', 'create', 'default'], io)).toBe(0);
    out.length = 0;
    expect(await run(['flow', 'list'], io)).toBe(0);
    expect(out.join('')).toBe(
      [
        'check: lint, then test, then report',
        '  lint: test -f README.md && echo lint ok',
        '  test (after lint): grep -q hello NOTE.md && echo tests pass && echo $DEPLOY_KEY',
        '  report (after test): echo report done',
        'slow',
        '  wait: sleep 30',
        '  after (after wait): echo after',
        '',
      ].join('\n'),
    );
    out.length = 0;
    expect(await run(['flow', 'run', 'check'], io)).toBe(0);
    expect(err.join('')).toMatch(
      /^node 1\/3 lint: running…\n {2}✓ lint passed: exit code 0 \(\d+ ms\)\nnode 2\/3 test: running…\n/,
    );
    expect(out.join('')).toMatch(/^flow check run flow-[0-9a-f-]+: completed \(session flow-[0-9a-f-]+\)\n/);
    expect(out.join('')).toContain('  standalone: linked to no work item');

    out.length = 0;
    writeFileSync(join(workspace, 'NOTE.md'), 'bye\n');
    expect(await run(['flow', 'run', 'check', '--json'], io)).toBe(1);
    const result = JSON.parse(out.join('')) as { status: string; item_id: null; nodes: { status: string }[] };
    expect(result.status).toBe('failed');
    expect(result.item_id).toBeNull();
    expect(result.nodes.map((node) => node.status)).toEqual(['passed', 'failed', 'skipped']);

    err.length = 0;
    expect(await run(['flow', 'run', 'nope'], io)).toBe(1);
    expect(err.join('')).toContain('no flow "nope" is configured');
    err.length = 0;
    expect(await run(['flow', 'run', 'check', '--item', 'x'], io)).toBe(2);
    expect(err.join('')).toContain('--session and --item go together');
    err.length = 0;
    expect(await run(['flow', 'run'], io)).toBe(2);
    expect(err.join('')).toContain('name one flow to run');
    err.length = 0;
    writeFileSync(join(workspace, 'baton.toml'), '[flows.bad]\nnodes = []\n');
    expect(await run(['flow', 'list'], io)).toBe(2);
    expect(err.join('')).toContain('flows.bad.nodes a flow needs at least one node');
  });
});

describe('the agent’s flow tool', () => {
  let model: ScriptedModel;
  afterEach(async () => model.close());

  it('runs the flow that owns an item of the authored contract; the verifier then completes it', async () => {
    const authored = checkDefinition();
    const answers = [
      JSON.stringify(authored),
      { tool_calls: [{ id: 'f1', name: 'flow', input: { flow: 'check', item_id: 'checked' } }] },
      'The checks ran.',
    ];
    model = await startScriptedModel(() => answers.shift() ?? { status: 500, body: 'script ran out' });
    const config = agentConfigSchema.parse({
      provider: 'openai',
      model: 'agent-1',
      base_url: `${model.url}/v1`,
      api_key_env: 'AGENT_KEY',
      timeout_ms: 5000,
    });
    const result = await runAgent(
      deps,
      'acme',
      {
        session_id: 'a',
        prompt: 'Run the checks',
        start: { work_mode: 'managed', workspace, capabilities: { flows: ['check'] } },
      },
      { route: chatRoute(config, env), config, env, retry_delay_ms: 5 },
    );

    expect(result.status).toBe('completed');
    expect(result.work.projection!.contracts[0]!.status).toBe('completed');
    // The authoring request named the flows the session may run; the turn offered the tool.
    expect(JSON.stringify(model.calls[0]!.body)).toContain('Static flows this session may run');
    const tools = (model.calls[1]!.body.tools as { function: { name: string } }[]).map(
      (tool) => tool.function.name,
    );
    expect(tools).toContain('flow');
    expect(JSON.stringify(model.calls[2]!.body)).toContain('flow check run flow-');
    expect(JSON.stringify(model.calls[2]!.body)).toContain('is now ready_for_verification');
  });
});
