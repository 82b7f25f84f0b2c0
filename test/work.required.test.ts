/**
 * The managed-work spec's "Required tests" that no other file proved, each named by its
 * bullet: child sessions (lineage narrowing, no grandchildren), path claims, approval resume,
 * torn and unknown entries through a real import, and the audit trail of every mutation.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterEach, describe, expect, it } from 'vitest';
import { exportStream, importStream } from '../src/app/ledger.ts';
import * as work from '../src/app/work.ts';
import { systemClock } from '../src/core/clock.ts';
import { deriveModelContext } from '../src/core/work/context.ts';
import { workConfigSchema } from '../src/core/work/config.ts';
import { controlBlockLimit } from '../src/core/work/control.ts';
import { createMcpServer } from '../src/mcp/server.ts';
import type { Actor } from '../src/core/work/model.ts';
import { expectBatonError } from '../src/store/conformance/store.conformance.ts';
import type { Store } from '../src/store/store.ts';
import { backends, type OpenedStore } from './helpers/stores.ts';
import { fail, ok } from './helpers/mcp.ts';
import { activeStart, contract, ev, ledger } from './helpers/work.ts';

const model: Actor = { type: 'model', id: 'agent' };
const opened: OpenedStore[] = [];
afterEach(async () => {
  for (const store of opened.splice(0)) await store.dispose();
});

const definition = {
  objective: 'migrate the configuration loader',
  criteria: [
    { criterion_id: 'inspected', statement: 'mapped', kind: { type: 'file_exists', path: 'notes.md' } },
    { criterion_id: 'tests', statement: 'tests pass', kind: { type: 'shell', command: 'npm test' } },
  ],
  items: [
    { item_id: 'inspect', title: 'Inspect', criterion_ids: ['inspected'], readonly: true },
    { item_id: 'implement', title: 'Implement', dependencies: ['inspect'], criterion_ids: ['tests'] },
  ],
};

for (const backend of backends) {
  describe(`spec required tests on ${backend.name}`, () => {
    async function setup(): Promise<{ store: Store; deps: { store: Store; clock: typeof systemClock } }> {
      const handle = await backend.open();
      opened.push(handle);
      await handle.store.createProject('acme');
      const deps = { store: handle.store, clock: systemClock };
      await work.startSession(deps, 'acme', { session_id: 's-1', work_mode: 'managed' });
      return { store: handle.store, deps };
    }

    it('child cannot spawn another child: a session that is a child is never a parent, and nothing is written', async () => {
      const { store, deps } = await setup();
      await work.startSession(deps, 'acme', { session_id: 'child-1', parent_session_id: 's-1' });
      await expectBatonError(
        work.startSession(deps, 'acme', { session_id: 'grandchild', parent_session_id: 'child-1' }),
        'invalid_input',
        { rule: 'nested_child', parent_session_id: 'child-1', grandparent_session_id: 's-1' },
      );
      await expectBatonError(
        store.getStream({ project_id: 'acme', kind: 'session', session_id: 'grandchild' }),
        'not_found',
      );
    });

    it("child inherits narrowed capabilities: what it leaves out is its parent's, what it asks beyond is refused", async () => {
      const { deps } = await setup();
      await work.startSession(deps, 'acme', {
        session_id: 'ro',
        workspace: '/srv/app',
        capabilities: {
          write: false,
          tools: ['read_file', 'grep'],
          owners: ['parent_agent', 'worker', 'tool'],
        },
      });
      const child = await work.startSession(deps, 'acme', {
        session_id: 'ro-child',
        parent_session_id: 'ro',
        capabilities: { tools: ['grep'] },
      });
      expect(child).toMatchObject({
        workspace: '/srv/app',
        capabilities: {
          write: false,
          tools: ['grep'],
          flows: [],
          owners: ['parent_agent', 'worker', 'tool'],
        },
      });
      for (const [capabilities, field] of [
        [{ write: true }, 'write'],
        [{ tools: ['read_file', 'shell'] }, 'tools'],
        [{ flows: ['release'] }, 'flows'],
        [{ capabilities: ['network'] }, 'capabilities'],
        [{ owners: ['human'] }, 'owners'],
      ] as [work.StartSessionInput['capabilities'], string][]) {
        await expectBatonError(
          work.startSession(deps, 'acme', {
            session_id: `c-${field}`,
            parent_session_id: 'ro',
            capabilities,
          }),
          'invalid_input',
          { rule: 'capability_escalation', field, parent_session_id: 'ro' },
        );
      }
      await expectBatonError(
        work.startSession(deps, 'acme', { session_id: 'c-ws', parent_session_id: 'ro', workspace: '/srv' }),
        'invalid_input',
        { rule: 'path_outside_workspace' },
      );
    });

    it('readonly child cannot write: a child of a read-only session takes no writing item', async () => {
      const { deps } = await setup();
      await work.startSession(deps, 'acme', { session_id: 'ro', capabilities: { write: false } });
      await work.startSession(deps, 'acme', { session_id: 'ro-child', parent_session_id: 'ro' });
      await expectBatonError(
        work.createContract(deps, 'acme', { session_id: 'ro-child', ...definition }, model),
        'invalid_input',
        { rule: 'capability_escalation', id: 'implement' },
      );
    });
  });
}

/** Session s-1 of project acme on the first backend, started by the model's contract work-1. */
async function sessionWith(contract: Record<string, unknown>, config: Record<string, unknown> = {}) {
  const handle = await backends[0]!.open();
  opened.push(handle);
  await handle.store.createProject('acme');
  const deps = { store: handle.store, clock: systemClock, work: workConfigSchema.parse(config) };
  await work.createContract(deps, 'acme', { session_id: 's-1', contract_id: 'work-1', ...contract }, model, {
    startSession: {},
  });
  return deps;
}

/**
 * A person cancels session s-1's contract work-1 while its items run (no surface cancels a whole
 * contract; the ledger may hold it), then the agent starts `item_id` of a new contract work-2.
 */
async function startInNextContract(
  deps: Awaited<ReturnType<typeof sessionWith>>,
  contract: object,
  item_id: string,
) {
  await deps.store.append({ project_id: 'acme', kind: 'session', session_id: 's-1' }, [
    {
      type: 'work_event',
      source_id: 'cancel',
      content: ev.status('active', 'cancelled', 'human'),
      metadata: { kind: 'work_event' },
    },
  ]);
  await work.createContract(deps, 'acme', { session_id: 's-1', contract_id: 'work-2', ...contract }, model);
  return work.transitionItem(
    deps,
    'acme',
    { session_id: 's-1', contract_id: 'work-2', revision: 1, item_id, to: 'running' },
    model,
  );
}

describe('path claims', () => {
  const claiming = {
    objective: 'change the loader and its docs',
    criteria: [{ criterion_id: 'ok', statement: 'ok', kind: { type: 'shell', command: 'true' } }],
    items: [
      { item_id: 'loader', title: 'Loader', criterion_ids: ['ok'], path_claims: ['src/config'] },
      { item_id: 'parser', title: 'Parser', criterion_ids: ['ok'], path_claims: ['./src/config/parse.ts'] },
      { item_id: 'docs', title: 'Docs', criterion_ids: ['ok'], path_claims: ['docs/'] },
      { item_id: 'notes', title: 'Notes', criterion_ids: ['ok'], readonly: true },
    ],
  };

  async function session() {
    const deps = await sessionWith(claiming);
    const move = (
      item_id: string,
      to: 'running' | 'ready_for_verification' | 'blocked',
      actor: Actor = model,
    ) => work.transitionItem(deps, 'acme', { session_id: 's-1', revision: 1, item_id, to }, actor);
    return { deps, store: deps.store, move };
  }

  it('parallel disjoint items run concurrently', async () => {
    const { move } = await session();
    await move('loader', 'running');
    await move('docs', 'running');
    const both = await move('notes', 'running');
    expect(
      both.contract?.items.filter((item) => item.status === 'running').map((item) => item.item_id),
    ).toEqual(['loader', 'docs', 'notes']);
  });

  it('overlapping claims serialize: the second start is refused while the first holds the path, and runs after it', async () => {
    const { store, move } = await session();
    await move('loader', 'running');
    const stream = { project_id: 'acme', kind: 'session', session_id: 's-1' } as const;
    const { head } = await store.getStream(stream);
    await expectBatonError(move('parser', 'running'), 'conflict', {
      rule: 'path_claim_held',
      item_id: 'parser',
      held_by: { contract_id: 'work-1', item_id: 'loader' },
    });
    expect((await store.getStream(stream)).head).toBe(head);
    await move('loader', 'ready_for_verification');
    const after = await move('parser', 'running');
    expect(after.contract?.items.find((item) => item.item_id === 'parser')?.status).toBe('running');
  });

  it("an ended contract's item holds no claim", async () => {
    const { deps, move } = await session();
    await move('loader', 'running');
    const started = await startInNextContract(deps, claiming, 'parser');
    expect(started.contract?.items.find((item) => item.item_id === 'parser')?.status).toBe('running');
  });

  it('overlapping claims serialize under concurrent starts: exactly one of them runs', async () => {
    const { deps, move } = await session();
    const results = await Promise.allSettled([move('loader', 'running'), move('parser', 'running')]);
    expect(results.map((result) => result.status).sort()).toEqual(['fulfilled', 'rejected']);
    const refused = results.find((result) => result.status === 'rejected');
    expect(refused?.reason).toMatchObject({
      code: 'conflict',
      data: { rule: 'path_claim_held' },
    });
    const snapshot = await work.readWork(deps, 'acme', { session_id: 's-1' });
    expect(snapshot.contract?.items.filter((item) => item.status === 'running')).toHaveLength(1);
  });
});

describe('[work] max_parallel', () => {
  const four = {
    objective: 'four independent changes',
    criteria: [{ criterion_id: 'ok', statement: 'ok', kind: { type: 'shell', command: 'true' } }],
    items: ['a', 'b', 'c'].map((item_id) => ({ item_id, title: item_id, criterion_ids: ['ok'] })),
  };

  it('refuses a start beyond max_parallel running items, writes nothing, and lets it start once one finishes', async () => {
    const deps = await sessionWith(four, { max_parallel: 2 });
    const move = (item_id: string, to: 'running' | 'ready_for_verification' | 'blocked' | 'ready') =>
      work.transitionItem(deps, 'acme', { session_id: 's-1', revision: 1, item_id, to }, model);
    await move('a', 'running');
    await move('b', 'running');
    const stream = { project_id: 'acme', kind: 'session', session_id: 's-1' } as const;
    const { head } = await deps.store.getStream(stream);
    await expectBatonError(move('c', 'running'), 'conflict', {
      rule: 'max_parallel',
      item_id: 'c',
      limit: 2,
      running: [
        { contract_id: 'work-1', item_id: 'a', status: 'running' },
        { contract_id: 'work-1', item_id: 'b', status: 'running' },
      ],
    });
    expect((await deps.store.getStream(stream)).head).toBe(head);
    // A blocked item gives its slot back; a running one moving on does too.
    await move('a', 'blocked');
    await move('c', 'running');
    await move('a', 'ready');
    await expectBatonError(move('a', 'running'), 'conflict', { rule: 'max_parallel' });
    await move('b', 'ready_for_verification');
    const after = await move('a', 'running');
    expect(
      after.contract?.items.filter((item) => item.status === 'running').map((item) => item.item_id),
    ).toEqual(['a', 'c']);
  });

  it("gives no slot to an ended contract's items", async () => {
    const deps = await sessionWith(four, { max_parallel: 1 });
    await work.transitionItem(
      deps,
      'acme',
      { session_id: 's-1', revision: 1, item_id: 'a', to: 'running' },
      model,
    );
    const started = await startInNextContract(deps, four, 'a');
    expect(started.contract?.items.find((item) => item.item_id === 'a')?.status).toBe('running');
  });

  it('lets exactly max_parallel of concurrent starts run', async () => {
    const deps = await sessionWith(four, { max_parallel: 1 });
    const results = await Promise.allSettled(
      ['a', 'b', 'c'].map((item_id) =>
        work.transitionItem(deps, 'acme', { session_id: 's-1', revision: 1, item_id, to: 'running' }, model),
      ),
    );
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
    const snapshot = await work.readWork(deps, 'acme', { session_id: 's-1' });
    expect(snapshot.contract?.items.filter((item) => item.status === 'running')).toHaveLength(1);
  });
});

describe('a session ledger with torn and unknown entries', () => {
  it('torn/unknown entries remain recoverable with warnings: imported, projected, and worked on', async () => {
    const [from, into] = [await backends[0]!.open(), await backends[0]!.open()];
    opened.push(from, into);
    await from.store.createProject('acme');
    const deps = { store: from.store, clock: systemClock };
    await work.createContract(
      deps,
      'acme',
      { session_id: 's-1', contract_id: 'work-1', ...definition },
      model,
      {
        startSession: {},
      },
    );
    const stream = { project_id: 'acme', kind: 'session', session_id: 's-1' } as const;
    const event = (kind: Record<string, unknown>) => ({
      type: 'work_event',
      content: {
        schema: 'baton.work-event/v1',
        contract_id: 'work-1',
        revision: 1,
        kind,
        actor: { type: 'runtime' },
      },
      metadata: { kind: 'work_event' },
    });
    await from.store.append(stream, [
      event({ type: 'item_paused', item_id: 'inspect' }),
      event({ type: 'item_status_changed', item_id: 'inspect', from: 'ready', to: 'paused', attempt: 1 }),
      { type: 'telemetry_sample', content: { cpu: 3 }, metadata: { kind: 'telemetry_sample' } },
    ]);
    let text = '';
    await exportStream({ store: from.store }, stream, (chunk) => {
      text += chunk;
    });
    const torn = `${text}{"content":{"schema":"baton.work-event/v1","contract_id":"wo`;

    await into.store.createProject('acme');
    const report = await importStream({ store: into.store }, torn.split('\n'));
    expect(report.warnings).toHaveLength(1);
    expect(report.warnings[0]?.message).toContain('torn last line');
    expect(report.unknown_types).toEqual({ telemetry_sample: 1 });
    const target = { store: into.store, clock: systemClock };
    const read = await work.readWork(target, 'acme', { session_id: 's-1' });
    expect(read.contract?.items.map((item) => [item.item_id, item.status])).toEqual([
      ['inspect', 'ready'],
      ['implement', 'proposed'],
    ]);
    const warned = read.warnings.map((warning) => [warning.code, warning.position]);
    expect(warned).toEqual([
      ['unknown_work_event', read.position - 2],
      ['unreadable_work_event', read.position - 1],
    ]);
    expect(read.control_block).toContain('- inspect: ready');
    // Recoverable: work goes on after them, and the warnings stay visible.
    const moved = await work.transitionItem(
      target,
      'acme',
      { session_id: 's-1', revision: 1, item_id: 'inspect', to: 'running' },
      model,
    );
    expect(moved.contract?.items[0]?.status).toBe('running');
    expect(moved.warnings.map((warning) => [warning.code, warning.position])).toEqual(warned);
  });
});

describe('resuming after approval or input', () => {
  const human: Actor = { type: 'human', id: 'ana' };
  const runtime: Actor = { type: 'runtime', id: 'baton' };

  async function session() {
    const deps = await sessionWith(definition);
    const revise = (previous_revision: number) =>
      work.reviseContract(
        deps,
        'acme',
        {
          session_id: 's-1',
          previous_revision,
          ...definition,
          objective: `${definition.objective} (r${previous_revision + 1})`,
          reason: 'narrowed',
        },
        model,
      );
    return { deps, revise };
  }

  it('approval/input resume uses the correct contract revision: an approval given on an older revision is refused', async () => {
    const { deps, revise } = await session();
    const move = (to: 'running' | 'waiting_approval', actor: Actor, revision: number) =>
      work.transitionItem(deps, 'acme', { session_id: 's-1', revision, item_id: 'inspect', to }, actor);
    await move('running', model, 1);
    await move('waiting_approval', runtime, 1);
    await revise(1);
    await expectBatonError(move('running', human, 1), 'revision_conflict', {
      rule: 'stale_revision',
      expected: 2,
      actual: 1,
    });
    const approved = await move('running', human, 2);
    expect(approved.contract).toMatchObject({ revision: 2, status: 'active' });
    expect(approved.contract?.items[0]).toMatchObject({ item_id: 'inspect', status: 'running', attempt: 1 });
  });

  it('approval/input resume uses the correct contract revision: an answer to a question asked on an older revision is refused', async () => {
    const { deps, revise } = await session();
    await work.requestInput(
      deps,
      'acme',
      { session_id: 's-1', revision: 1, question: 'which database?' },
      model,
    );
    await revise(1);
    await expectBatonError(
      work.confirmWork(deps, 'acme', { session_id: 's-1', revision: 1 }, human),
      'revision_conflict',
      { rule: 'stale_revision', expected: 2, actual: 1 },
    );
    const resumed = await work.confirmWork(deps, 'acme', { session_id: 's-1', revision: 2 }, human);
    expect(resumed.contract).toMatchObject({ revision: 2, status: 'active' });
  });
});

describe('the model context with a branch beside a live contract', () => {
  it('active work survives compaction: the older live contract stays in the control block while a branch is live', () => {
    const side = contract({
      contract_id: 'side',
      objective: 'look around',
      items: [{ item_id: 'peek', title: 'Peek', criterion_ids: ['inspected'] }],
    });
    const entries = ledger(
      ...activeStart(),
      ev.created(side, { branch: true }),
      ev.status('draft', 'active', 'human', 1, 'side'),
      ...Array.from({ length: 40 }, (_, index) => ({
        type: 'user_message',
        content: { schema: 'baton.user-message/v1', text: `message ${index}` },
      })),
    );
    const context = deriveModelContext(entries, { keep_messages: 5 });
    expect(context.dropped).toBe(35);
    expect(context.tail).toHaveLength(1);
    const block = context.tail[0]!;
    expect(block.length).toBeLessThanOrEqual(controlBlockLimit);
    // The branch is the block's contract; the other live one is named with what it still needs.
    expect(block).toContain('Objective: look around');
    expect(block).toContain('Also live: work-1 revision 1, active: 2 required items unfinished');
    // Once it ends, it leaves the model's context.
    const ended = deriveModelContext(
      [...entries, ...ledger(ev.status('active', 'cancelled', 'human'))].map((entry, index) => ({
        ...entry,
        position: index + 1,
      })),
      { keep_messages: 5 },
    );
    expect(ended.tail[0]).not.toContain('Also live');
  });
});

describe('a session ledger written before managed work', () => {
  async function imported() {
    const handle = await backends[0]!.open();
    opened.push(handle);
    await handle.store.createProject('acme');
    const text = readFileSync(join(import.meta.dirname, 'fixtures', 'work-ledgers', 'direct.jsonl'), 'utf8');
    await importStream({ store: handle.store }, text.split('\n'));
    return { store: handle.store, deps: { store: handle.store, clock: systemClock } };
  }

  it('old ledgers open without migration: reopening the session as it was started is a no-op, not a conflict', async () => {
    const { store, deps } = await imported();
    const stream = { project_id: 'acme', kind: 'session', session_id: 'direct-1' } as const;
    const { head } = await store.getStream(stream);
    const header = await work.startSession(deps, 'acme', {
      session_id: 'direct-1',
      work_mode: 'direct',
      workspace: '/srv/app',
    });
    expect(header).toMatchObject({ session_id: 'direct-1', workspace: '/srv/app', parent_session_id: null });
    expect((await store.getStream(stream)).head).toBe(head);
  });

  it('old ledgers open without migration: managed work starts on a session recorded before it', async () => {
    const { deps } = await imported();
    const created = await work.createContract(
      deps,
      'acme',
      { session_id: 'direct-1', contract_id: 'work-1', ...definition },
      model,
    );
    expect(created.contract).toMatchObject({ status: 'active', revision: 1 });
    expect(created.warnings).toEqual([]);
  });
});

describe('the MCP work tools', () => {
  const clients: Client[] = [];
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.close();
  });

  /** Two MCP clients of one store: a writer token's and a read-only token's. */
  async function connect() {
    const handle = await backends[0]!.open();
    opened.push(handle);
    await handle.store.createProject('acme');
    const deps = { store: handle.store, clock: systemClock };
    const open = async (read_only: boolean) => {
      const server = createMcpServer({
        deps,
        principal: { project_id: 'acme', token_id: 'tok-1', read_only },
      });
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await server.connect(serverSide);
      const client = new Client({ name: 'baton-test', version: '0.0.0' });
      await client.connect(clientSide);
      clients.push(client);
      return client;
    };
    return { store: handle.store, writer: await open(false), reader: await open(true) };
  }

  it("work tool events are authorized and committed: a read-only token proposes nothing, a writer's proposal is in the ledger as the model's", async () => {
    const { store, writer, reader } = await connect();
    const session_id = 's-mcp';
    const proposal = { session_id, contract_id: 'work-1', ...definition };
    const stream = { project_id: 'acme', kind: 'session', session_id } as const;
    const start = { session_id, revision: 1, item_id: 'inspect', to: 'running' };
    for (const [name, args] of [
      ['work_revise', proposal],
      ['work_transition', start],
      [
        'work_attach_evidence',
        { session_id, revision: 1, item_id: 'inspect', evidence: { type: 'child_session', session_id: 'x' } },
      ],
      ['work_request_input', { session_id, revision: 1, question: 'which?' }],
      ['work_verify', { session_id }],
    ] as const) {
      expect(await fail(reader, name, args), name).toMatchObject({ code: 'forbidden' });
    }
    await expectBatonError(store.getStream(stream), 'not_found');

    await ok(writer, 'work_revise', proposal);
    const { head } = await store.getStream(stream);
    expect(await fail(reader, 'work_transition', start)).toMatchObject({ code: 'forbidden' });
    expect((await store.getStream(stream)).head).toBe(head);
    const moved = await ok(writer, 'work_transition', start);
    const after = await store.getStream(stream);
    expect(after.head).toBe(head + 1);
    const last: unknown[] = [];
    for await (const entry of store.readStream(stream, { from: after.head })) last.push(entry.content);
    expect(last).toHaveLength(1);
    expect(last[0]).toMatchObject({
      actor: { type: 'model', id: 'token:tok-1' },
      kind: { type: 'item_status_changed', item_id: 'inspect', to: 'running' },
    });
    expect(JSON.stringify(moved)).toContain('"running"');
    // Reading stays open to the read-only token.
    expect((await ok(reader, 'work_get', { session_id })).trust).toBe('untrusted_history');
  });
});
