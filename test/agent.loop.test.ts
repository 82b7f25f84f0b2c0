/**
 * Baton's own agent loop (docs/agent.md) against a scripted model over real HTTP, on both model
 * routes: the conversation rebuilt from the ledger, tools run only when the permission engine
 * allows, managed work authored then validated by the runtime, the completion gate saying why
 * the model may not stop yet, verification ending the contract, and every way a run ends
 * (completed, failed closed, needs_input then resumed, max_turns with a prepared Handoff,
 * an unreachable model).
 */
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runAgent, type AgentEvent, type AgentRunInput } from '../src/agent/loop.ts';
import { chatRoute } from '../src/agent/models.ts';
import type { AppDeps } from '../src/app/deps.ts';
import { readTranscript } from '../src/app/transcript.ts';
import * as work from '../src/app/work.ts';
import { run } from '../src/cli/run.ts';
import { systemClock } from '../src/core/clock.ts';
import { agentConfigSchema, type AgentConfig } from '../src/core/work/config.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import {
  startScriptedModel,
  type ModelCall,
  type ScriptedAnswer,
  type ScriptedModel,
} from './helpers/scripted-model.ts';

const secret = 'sk-live-agent-secret-4b3c2d1e';

let workspace: string;
let store: SqliteStore;
let deps: AppDeps;
let scripted: ScriptedModel;
let answers: ScriptedAnswer[];
/** When set, answers every call instead of the queue. */
let router: ((call: ModelCall) => ScriptedAnswer | Promise<ScriptedAnswer>) | null;

beforeEach(async () => {
  workspace = mkdtempSync(join(tmpdir(), 'baton-agent-'));
  writeFileSync(join(workspace, 'README.md'), `# Demo\nThe deploy key is ${secret}.\n`);
  execFileSync('git', ['-C', workspace, 'init', '-q']);
  store = new SqliteStore({ path: ':memory:' });
  await store.createProject('acme');
  deps = { store, clock: systemClock };
  answers = [];
  router = null;
  scripted = await startScriptedModel(
    (call) => router?.(call) ?? answers.shift() ?? { status: 500, body: 'script ran out' },
  );
});

afterEach(async () => {
  await store.close();
  await scripted.close();
  rmSync(workspace, { recursive: true, force: true });
});

type Provider = 'openai' | 'anthropic';

function config(provider: Provider, extra: Record<string, unknown> = {}): AgentConfig {
  return agentConfigSchema.parse({
    provider,
    model: 'agent-1',
    base_url: provider === 'openai' ? `${scripted.url}/v1` : scripted.url,
    api_key_env: 'AGENT_KEY',
    timeout_ms: 5000,
    ...extra,
  });
}

async function agent(
  provider: Provider,
  input: Partial<AgentRunInput> & { prompt?: string },
  extra: Record<string, unknown> = {},
) {
  const events: AgentEvent[] = [];
  const env = { AGENT_KEY: 'sk-test-route', DEPLOY_KEY: secret };
  const result = await runAgent(
    deps,
    'acme',
    {
      session_id: 's',
      start: { work_mode: 'direct', workspace },
      ...input,
    },
    {
      route: chatRoute(config(provider, extra), env),
      config: config(provider, extra),
      env,
      onEvent: (event) => events.push(event),
      retry_delay_ms: 5,
    },
  );
  return { result, events };
}

async function entries(session_id = 's') {
  const all = [];
  for await (const entry of store.readStream(work.sessionStream('acme', session_id))) all.push(entry);
  return all;
}

interface StoredResult {
  readonly tool_use_id: string;
  readonly output: string;
  readonly is_error: boolean;
}

/** The session's tool results by call id. */
async function results(session_id = 's'): Promise<Map<string, StoredResult>> {
  return new Map(
    (await entries(session_id))
      .filter((entry) => entry.type === 'tool_result')
      .map((entry) => entry.content as unknown as StoredResult)
      .map((content) => [content.tool_use_id, content]),
  );
}

/** The session's tool outputs by call id. */
async function outputsOf(session_id = 's'): Promise<Map<string, string>> {
  return new Map([...(await results(session_id))].map(([id, result]) => [id, result.output]));
}

const calls = (...list: { name: string; input: unknown; id?: string }[]): ScriptedAnswer => ({
  tool_calls: list,
});

/** Everything a request sent to the model says, as one text. */
const sent = (call: ModelCall) => JSON.stringify(call.body);

describe.each<Provider>(['openai', 'anthropic'])('direct work over the %s route', (provider) => {
  it('reads, writes and answers: each turn rebuilt from the ledger, the secret never stored or sent', async () => {
    answers.push(
      calls(
        { id: 'c1', name: 'list_files', input: {} },
        { id: 'c2', name: 'read_file', input: { path: 'README.md' } },
      ),
      calls({ id: 'c3', name: 'write_file', input: { path: 'docs/NOTE.md', content: 'hello\n' } }),
      'I wrote docs/NOTE.md.',
    );
    const { result, events } = await agent(provider, { prompt: 'Write a note' });

    expect(result.status).toBe('completed');
    expect(result.turns).toBe(3);
    expect(result.final_text).toBe('I wrote docs/NOTE.md.');
    expect(readFileSync(join(workspace, 'docs', 'NOTE.md'), 'utf8')).toBe('hello\n');
    expect((await entries()).map((entry) => entry.type)).toEqual([
      'session_header',
      'user_message',
      'receipt',
      'assistant_message',
      'tool_call',
      'tool_call',
      'tool_result',
      'tool_result',
      'receipt',
      'assistant_message',
      'tool_call',
      'tool_result',
      'checkpoint',
      'receipt',
      'assistant_message',
      'terminal',
    ]);
    const results = (await entries())
      .filter((entry) => entry.type === 'tool_result')
      .map((entry) => entry.content as { tool_use_id: string; output: string; is_error: boolean });
    expect(results[0]).toMatchObject({ tool_use_id: 'c1', is_error: false });
    expect(results[0]!.output.split('\n')).toEqual(['README.md']);
    expect(results[1]!.output).toContain('# Demo');
    expect(results[1]!.output).not.toContain(secret);
    expect(results[2]).toMatchObject({ tool_use_id: 'c3', output: 'wrote 6 bytes to docs/NOTE.md' });

    expect(scripted.calls).toHaveLength(3);
    const [first, second, third] = scripted.calls;
    const tools = (first!.body.tools as { name?: string; function?: { name: string } }[]).map(
      (tool) => tool.name ?? tool.function!.name,
    );
    expect(tools).toEqual(['list_files', 'read_file', 'write_file', 'shell']);
    expect(sent(first!)).toContain('Write a note');
    expect(sent(second!)).toContain('# Demo');
    expect(sent(third!)).toContain('wrote 6 bytes to docs/NOTE.md');
    for (const call of scripted.calls) expect(sent(call)).not.toContain(secret);
    expect(first!.headers[provider === 'openai' ? 'authorization' : 'x-api-key']).toContain('sk-test-route');
    expect(
      events.filter((event) => event.type === 'tool').map((event) => event.type === 'tool' && event.summary),
    ).toEqual(['list_files', 'read_file README.md', 'write_file docs/NOTE.md']);

    // People read the run back as its transcript: messages, turns, calls, results, requests.
    const transcript = await readTranscript(deps, 'acme', { session_id: 's' });
    // The two turns that only called tools say nothing, and are not shown.
    expect(transcript.total).toBe(11);
    expect(transcript.entries.map((entry) => entry.type)).toEqual([
      'message',
      'model_request',
      'tool_call',
      'tool_call',
      'tool_result',
      'tool_result',
      'model_request',
      'tool_call',
      'tool_result',
      'model_request',
      'model',
    ]);
    expect(transcript.entries[0]).toMatchObject({ type: 'message', author: 'person', text: 'Write a note' });
    expect(transcript.entries[1]).toMatchObject({
      model: `${provider}/agent-1`,
      attempts: 1,
      input_tokens: 120,
    });
    expect(transcript.entries[2]).toMatchObject({ tool: 'list_files', tool_use_id: 'c1', input: '{}' });
    expect(JSON.stringify(transcript)).not.toContain(secret);
  });
});

describe('the permission engine', () => {
  it('refuses writes in a read-only session, paths outside the workspace and .git, and unknown tools: nothing runs', async () => {
    answers.push(
      calls(
        { id: 'w', name: 'write_file', input: { path: 'x.txt', content: 'no' } },
        { id: 'up', name: 'read_file', input: { path: '../outside.txt' } },
        { id: 'git', name: 'read_file', input: { path: '.git/config' } },
        { id: 'rm', name: 'delete_everything', input: {} },
        { id: 'bad', name: 'read_file', input: { file: 'README.md' } },
        { id: 'work', name: 'work', input: { operation: 'get' } },
      ),
      'Done.',
    );
    writeFileSync(join(workspace, '..', 'outside.txt'), 'outside');
    const { result } = await agent('openai', {
      prompt: 'try things',
      start: {
        work_mode: 'direct',
        workspace,
        capabilities: { write: false, tools: [], flows: [], capabilities: [], owners: ['parent_agent'] },
      },
    });
    rmSync(join(workspace, '..', 'outside.txt'));
    expect(result.status).toBe('completed');
    expect(existsSync(join(workspace, 'x.txt'))).toBe(false);
    const outputs = Object.fromEntries(
      (await entries())
        .filter((entry) => entry.type === 'tool_result')
        .map((entry) => {
          const content = entry.content as { tool_use_id: string; output: string; is_error: boolean };
          expect(content.is_error).toBe(true);
          return [content.tool_use_id, content.output];
        }),
    );
    expect(outputs).toEqual({
      w: 'denied (read_only): this session is read-only: it may not change files',
      up: '"../outside.txt" is outside the workspace',
      git: '".git/config" is inside a .git folder, which tools do not touch',
      rm: 'denied (unknown_tool): there is no tool named "delete_everything"',
      bad: expect.stringMatching(/^invalid input: /) as unknown,
      work: 'denied (not_managed): this session has no managed work',
    });
    const offered = (scripted.calls[0]!.body.tools as { function: { name: string } }[]).map(
      (tool) => tool.function.name,
    );
    expect(offered).toEqual(['list_files', 'read_file', 'shell']);
  });
});

describe('what the tools never reach', () => {
  it('refuses .git through a link or in another case, and Baton’s own configuration; the shell sees neither .git/config nor may write', async () => {
    symlinkSync('.git', join(workspace, 'g'));
    writeFileSync(
      join(workspace, '.git', 'config'),
      '[remote "origin"]\n  url = https://me:tok3n@example.com/r.git\n',
    );
    writeFileSync(join(workspace, 'baton.toml'), '[agent]\nprovider = "openai"\nmodel = "m"\n');
    answers.push(
      calls(
        {
          id: 'hook',
          name: 'write_file',
          input: { path: 'g/hooks/pre-commit', content: '#!/bin/sh\nexit 0\n' },
        },
        { id: 'conf', name: 'read_file', input: { path: 'g/config' } },
        { id: 'case', name: 'write_file', input: { path: '.GIT/hooks/x', content: 'x' } },
        {
          id: 'toml',
          name: 'write_file',
          input: { path: 'baton.toml', content: '[agent]\nbase_url = "https://evil"\n' },
        },
        { id: 'sh', name: 'shell', input: { command: 'cat .git/config; echo ---; touch made.txt' } },
      ),
      'Done.',
    );
    const { result } = await agent('openai', { prompt: 'try' });
    expect(result.status).toBe('completed');
    expect(existsSync(join(workspace, '.git', 'hooks', 'pre-commit'))).toBe(false);
    expect(existsSync(join(workspace, 'made.txt'))).toBe(false);
    expect(readFileSync(join(workspace, 'baton.toml'), 'utf8')).toContain('model = "m"');
    const outputs = await results();
    for (const id of ['hook', 'conf', 'case']) {
      expect(outputs.get(id)).toMatchObject({
        is_error: true,
        output: expect.stringContaining('inside a .git folder') as unknown,
      });
    }
    expect(outputs.get('toml')!.output).toBe(
      `"baton.toml" is Baton's own (its ledger or configuration), which tools do not touch`,
    );
    const shell = outputs.get('sh')!;
    expect(shell.is_error).toBe(true);
    expect(shell.output).not.toContain('tok3n');
    expect(shell.output).toMatch(/^exit 1\nstdout:\n---\n/);
    // Each refusal reaches the model in its next request.
    expect(sent(scripted.calls[1]!)).toContain('inside a .git folder');
  });

  it('keeps a managed session’s writes to a running item of its own, within the item’s claims', async () => {
    answers.push(
      JSON.stringify({
        ...authored,
        items: [{ ...authored.items[0], path_claims: ['docs'] }],
        criteria: [
          {
            ...authored.criteria[0],
            kind: { type: 'file_contains', path: 'docs/NOTE.md', pattern: 'hello' },
          },
        ],
      }),
      calls({ id: 'early', name: 'write_file', input: { path: 'docs/NOTE.md', content: 'hello\n' } }),
      calls(
        { id: 'run', name: 'work', input: { operation: 'transition', item_id: 'note', to: 'running' } },
        { id: 'out', name: 'write_file', input: { path: 'src/x.ts', content: 'x' } },
        { id: 'in', name: 'write_file', input: { path: 'docs/NOTE.md', content: 'hello\n' } },
        { id: 'link', name: 'write_file', input: { path: 'docs/src/x.ts', content: 'x' } },
        {
          id: 'rfv',
          name: 'work',
          input: { operation: 'transition', item_id: 'note', to: 'ready_for_verification' },
        },
      ),
      'Done.',
    );
    // A link inside the claimed folder leads out of it: judged by where it leads.
    mkdirSync(join(workspace, 'docs'));
    mkdirSync(join(workspace, 'src'));
    symlinkSync('../src', join(workspace, 'docs', 'src'));
    const { result } = await agent('openai', { prompt: 'note', start: { work_mode: 'managed', workspace } });
    const outputs = await outputsOf();
    expect(outputs.get('early')).toMatch(/^no item you work on is running/);
    expect(outputs.get('out')).toBe(
      `${join(workspace, 'src', 'x.ts')} is outside the paths the running items claim (docs)`,
    );
    expect(outputs.get('in')).toBe('wrote 6 bytes to docs/NOTE.md');
    expect(outputs.get('link')).toMatch(/ is outside the paths the running items claim \(docs\)$/);
    expect(existsSync(join(workspace, 'src', 'x.ts'))).toBe(false);
    expect(result.status).toBe('completed');
  });
});

/** The contract a managed run's model authors: one item decided by a file's content. */
const authored = {
  objective: 'Write the release note',
  criteria: [
    {
      criterion_id: 'noted',
      statement: 'NOTE.md says hello',
      kind: { type: 'file_contains', path: 'NOTE.md', pattern: 'hello' },
    },
  ],
  items: [{ item_id: 'note', title: 'Write NOTE.md', criterion_ids: ['noted'] }],
};

describe.each<Provider>(['openai', 'anthropic'])('managed work over the %s route', (provider) => {
  it('authors a contract the runtime validates, gates an early stop, refuses the model a success, and completes only once verified', async () => {
    answers.push(
      `Here is the contract:\n\`\`\`json\n${JSON.stringify(authored)}\n\`\`\``,
      'All done!',
      calls(
        { id: 'm1', name: 'work', input: { operation: 'transition', item_id: 'note', to: 'running' } },
        { id: 'm2', name: 'write_file', input: { path: 'NOTE.md', content: 'hello world\n' } },
      ),
      calls(
        { id: 'm3', name: 'work', input: { operation: 'transition', item_id: 'note', to: 'succeeded' } },
        {
          id: 'm4',
          name: 'work',
          input: { operation: 'attach_evidence', item_id: 'note', tool_use_id: 'm2' },
        },
        {
          id: 'm5',
          name: 'work',
          input: { operation: 'transition', item_id: 'note', to: 'ready_for_verification' },
        },
      ),
      'NOTE.md is written.',
    );
    const { result, events } = await agent(provider, {
      prompt: 'Write the release note',
      start: { work_mode: 'managed', workspace },
    });

    expect(result.status).toBe('completed');
    expect(result.reason).toBe('the contract completed: every required item and criterion verified');
    expect(result.turns).toBe(4);
    expect(result.work.terminal?.status).toBe('completed');
    const contract = result.work.projection!.contracts[0]!;
    expect(contract.status).toBe('completed');
    expect(contract.items[0]).toMatchObject({ item_id: 'note', status: 'succeeded' });

    // The authoring dispatch: no tools, the person's task, a JSON Schema to answer with.
    expect(scripted.calls[0]!.body.tools).toBeUndefined();
    expect(sent(scripted.calls[0]!)).toContain('Write the release note');
    // Turn 1 carries the control block after the conversation; the early stop is refused.
    expect(sent(scripted.calls[1]!)).toContain('<work_contract revision=\\"1\\">');
    const gateSaid = sent(scripted.calls[2]!);
    expect(gateSaid).toContain('Baton: you cannot stop yet');
    expect(gateSaid).toContain('required item \\"note\\" is ready');
    expect(events).toContainEqual(expect.objectContaining({ type: 'gate', decision: 'block' }));

    const outputs = await results();
    expect(outputs.get('m3')!.is_error).toBe(true);
    expect(outputs.get('m3')!.output).toMatch(/^refused \(conflict, /);
    expect(outputs.get('m4')!.is_error).toBe(false);
    expect(outputs.get('m5')!.is_error).toBe(false);
    const receipts = (await entries())
      .filter((entry) => entry.type === 'receipt')
      .map((entry) => entry.content as { purpose: string; details: Record<string, unknown> });
    expect(receipts.find((receipt) => receipt.purpose === 'plan')).toMatchObject({
      details: { status: 'created', contract_id: contract.contract_id },
    });
    // The contract stood before any tool ran.
    const types = (await entries()).map((entry) =>
      entry.type === 'receipt' ? (entry.content as { purpose: string }).purpose : entry.type,
    );
    expect(types.indexOf('plan')).toBeGreaterThan(-1);
    expect(types.indexOf('plan')).toBeLessThan(types.indexOf('tool_call'));
    // Each model request (the authoring one too) is recorded with what it cost.
    const spent = receipts.filter((receipt) => receipt.purpose === 'model_turn');
    expect(spent.map((receipt) => receipt.details.for)).toEqual(['plan', 'turn', 'turn', 'turn', 'turn']);
    expect(spent[0]!.details).toMatchObject({
      provider,
      model: 'agent-1',
      attempts: 1,
      input_tokens: 120,
      output_tokens: 30,
    });
    expect(result.usage).toEqual({ requests: 5, input_tokens: 600, output_tokens: 150 });
  });
});

describe('how a managed run ends', () => {
  it('fails closed on an invalid authored contract: no tool runs, the refusal is recorded', async () => {
    answers.push(
      JSON.stringify({
        ...authored,
        items: [
          { item_id: 'a', title: 'A', dependencies: ['b'], criterion_ids: ['noted'] },
          { item_id: 'b', title: 'B', dependencies: ['a'], criterion_ids: ['noted'] },
        ],
      }),
    );
    const { result } = await agent('anthropic', { prompt: 'go', start: { work_mode: 'managed', workspace } });
    expect(result.status).toBe('failed');
    expect(result.reason).toMatch(/^managed work needs a valid contract; the contract was refused \(/);
    expect(result.work.projection).toBeNull();
    const types = (await entries()).map((entry) => entry.type);
    expect(types).not.toContain('tool_call');
    expect(types.at(-1)).toBe('terminal');
    expect(scripted.calls).toHaveLength(1);
  });

  it('fails closed when the model answers no JSON at all', async () => {
    answers.push('I would rather just start.');
    const { result } = await agent('openai', { prompt: 'go', start: { work_mode: 'managed', workspace } });
    expect(result.status).toBe('failed');
    expect(result.reason).toBe(
      'managed work needs a valid contract; the model did not answer with a JSON object',
    );
  });

  it('stops for a person when the contract needs confirmation, then the same session continues to completion', async () => {
    answers.push(
      JSON.stringify({
        ...authored,
        assumptions: [
          { assumption_id: 'tone', text: 'The note may be informal', requires_confirmation: true },
        ],
      }),
    );
    const first = await agent('openai', { prompt: 'go', start: { work_mode: 'managed', workspace } });
    expect(first.result.status).toBe('needs_input');
    expect(first.result.work.terminal).toBeNull();
    expect(scripted.calls).toHaveLength(1);

    await work.confirmWork(
      deps,
      'acme',
      { session_id: 's', revision: 1, resolutions: [{ assumption_id: 'tone', resolution: 'yes' }] },
      { type: 'human', id: 'ann' },
    );
    answers.push(
      calls(
        { id: 'r1', name: 'work', input: { operation: 'transition', item_id: 'note', to: 'running' } },
        { id: 'r2', name: 'write_file', input: { path: 'NOTE.md', content: 'hello\n' } },
        {
          id: 'r3',
          name: 'work',
          input: { operation: 'transition', item_id: 'note', to: 'ready_for_verification' },
        },
      ),
      'Done.',
    );
    const second = await agent('openai', {});
    expect(second.result.status).toBe('completed');
    expect(second.result.turns).toBe(2);
    // The resumed run's conversation is the ledger's: the task given to the first run is in it.
    expect(sent(scripted.calls[1]!)).toContain('"content":"go"');
  });

  it('lets the model read the contract whole and revise it, as the model: the next turn sees revision 2', async () => {
    const revised = {
      ...authored,
      criteria: [
        ...authored.criteria,
        {
          criterion_id: 'changelog',
          statement: 'CHANGES.md exists',
          kind: { type: 'file_exists', path: 'CHANGES.md' },
        },
      ],
      items: [...authored.items, { item_id: 'log', title: 'Write CHANGES.md', criterion_ids: ['changelog'] }],
    };
    answers.push(
      JSON.stringify(authored),
      calls({ id: 'g', name: 'work', input: { operation: 'get' } }),
      calls({
        id: 'r',
        name: 'work',
        input: { operation: 'revise', ...revised, reason: 'a changelog is needed too' },
      }),
      { status: 503, body: 'stop here' },
      { status: 503, body: 'stop here' },
      { status: 503, body: 'stop here' },
    );
    const { result } = await agent('openai', { prompt: 'go', start: { work_mode: 'managed', workspace } });
    const outputs = await outputsOf();
    expect(outputs.get('g')).toContain('"objective":"Write the release note"');
    expect(outputs.get('r')).toContain('<work_contract revision="2">');
    expect(sent(scripted.calls[3]!)).toContain('<work_contract revision=\\"2\\">');
    const contract = result.work.projection!.contracts[0]!;
    expect(contract.revision).toBe(2);
    expect(contract.items.map((item) => item.item_id)).toEqual(['note', 'log']);
    const revision = (await entries()).find(
      (entry) =>
        entry.type === 'work_event' &&
        (entry.content as { kind: { type: string } }).kind.type === 'contract_revised',
    );
    expect((revision!.content as { actor: unknown }).actor).toEqual({ type: 'model', id: 'openai/agent-1' });
  });

  it('pauses when the model asks the person: nothing effectful runs after the question, the session stays open', async () => {
    answers.push(
      JSON.stringify(authored),
      calls(
        { id: 'q1', name: 'work', input: { operation: 'transition', item_id: 'note', to: 'running' } },
        { id: 'q2', name: 'work', input: { operation: 'request_input', question: 'Formal or informal?' } },
        { id: 'q3', name: 'write_file', input: { path: 'NOTE.md', content: 'hello\n' } },
      ),
    );
    const { result } = await agent('openai', { prompt: 'go', start: { work_mode: 'managed', workspace } });
    expect(result.status).toBe('needs_input');
    expect(result.reason).toContain('Formal or informal?');
    expect(result.work.terminal).toBeNull();
    expect(existsSync(join(workspace, 'NOTE.md'))).toBe(false);
    const q3 = (await entries()).find(
      (entry) =>
        entry.type === 'tool_result' && (entry.content as { tool_use_id: string }).tool_use_id === 'q3',
    );
    expect((q3!.content as { output: string }).output).toMatch(/^denied \(awaiting_input\): /);
    expect(scripted.calls).toHaveLength(2);
    // The item it was working on waits on the question, so reopening does not interrupt it.
    expect(result.work.contract!.items[0]).toMatchObject({
      status: 'blocked',
      blocker: 'waiting for a person: Formal or informal?',
    });

    // The person answers; the same session goes on from the answer to completion.
    await work.confirmWork(deps, 'acme', { session_id: 's', revision: 1 }, { type: 'human', id: 'ann' });
    answers.push(
      calls(
        { id: 'r1', name: 'work', input: { operation: 'transition', item_id: 'note', to: 'ready' } },
        { id: 'r2', name: 'work', input: { operation: 'transition', item_id: 'note', to: 'running' } },
        { id: 'r3', name: 'write_file', input: { path: 'NOTE.md', content: 'hello\n' } },
        {
          id: 'r4',
          name: 'work',
          input: { operation: 'transition', item_id: 'note', to: 'ready_for_verification' },
        },
      ),
      'Done.',
    );
    const resumed = await agent('openai', { prompt: 'Informal.' });
    expect(resumed.result.status).toBe('completed');
    expect(sent(scripted.calls[2]!)).toContain('Informal.');
  });

  it('does not run a tool call cut off at max_tokens: its input may be incomplete', async () => {
    answers.push(
      {
        status: 200,
        body: JSON.stringify({
          choices: [
            {
              message: {
                content: null,
                tool_calls: [
                  { id: 'ok', type: 'function', function: { name: 'list_files', arguments: '{}' } },
                  {
                    id: 'cut',
                    type: 'function',
                    function: { name: 'write_file', arguments: '{"path":"a.md","con' },
                  },
                ],
              },
              finish_reason: 'length',
            },
          ],
        }),
      },
      'Done.',
    );
    await agent('openai', { prompt: 'go' });
    const outputs = await outputsOf();
    expect(outputs.get('ok')).toBe('README.md');
    expect(outputs.get('cut')).toMatch(/^not run: your answer was cut off at max_tokens/);
  });

  it('ends max_turns when the turns run out, and a bound session prepares a Handoff for whoever continues', async () => {
    for (let turn = 0; turn < 3; turn += 1)
      answers.push(calls({ id: `l${turn}`, name: 'list_files', input: {} }));
    answers.unshift(JSON.stringify(authored));
    const { result } = await agent(
      'openai',
      { prompt: 'go', start: { work_mode: 'managed', workspace, scope_id: 'release' } },
      { max_turns: 2 },
    );
    expect(result.status).toBe('max_turns');
    expect(result.turns).toBe(2);
    expect(result.work.terminal).toMatchObject({ status: 'max_turns' });
    expect(result.work.terminal?.handoff).toMatchObject({ scope_id: 'release', base_revision: 0 });
    expect(scripted.calls).toHaveLength(3);
  });

  it('asks again when the server is overloaded or fails, and ends failed, saying why, when it keeps failing', async () => {
    answers.push({ status: 503, body: 'overloaded' }, { status: 429, body: 'slow down' }, 'Done.');
    const recovered = await agent('openai', { prompt: 'go' });
    expect(recovered.result.status).toBe('completed');
    expect(recovered.events.filter((event) => event.type === 'retry')).toEqual([
      expect.objectContaining({ attempt: 1, delay_ms: 5 }),
      expect.objectContaining({ attempt: 2, delay_ms: 20 }),
    ]);
    const spent = (await entries())
      .filter((entry) => entry.type === 'receipt')
      .map((entry) => entry.content as { details: Record<string, unknown> });
    expect(spent[0]!.details).toMatchObject({ attempts: 3 });

    answers.push(
      { status: 503, body: 'overloaded' },
      { status: 502, body: 'bad gateway' },
      { status: 500, body: 'still broken' },
    );
    const { result } = await agent('openai', { session_id: 's2', prompt: 'go' });
    expect(result.status).toBe('failed');
    expect(result.reason).toMatch(
      /^the model gave no answer: http:\/\/127\.0\.0\.1:\d+ answered 500: still broken$/,
    );
    expect(result.work.terminal?.status).toBe('failed');
    expect(scripted.calls).toHaveLength(6);
  });

  it('does not ask again when the server refuses the request', async () => {
    answers.push({ status: 400, body: 'unknown model' }, 'never sent');
    const { result, events } = await agent('anthropic', { prompt: 'go' });
    expect(result.status).toBe('failed');
    expect(result.reason).toMatch(/answered 400: unknown model$/);
    expect(events.some((event) => event.type === 'retry')).toBe(false);
    expect(scripted.calls).toHaveLength(1);
  });

  it('goes on after an answer cut off at max_tokens, instead of taking it for the end', async () => {
    answers.push(
      {
        status: 200,
        body: JSON.stringify({ choices: [{ message: { content: 'Half an ans' }, finish_reason: 'length' }] }),
      },
      'Done.',
    );
    const { result } = await agent('openai', { prompt: 'go' });
    expect(result.status).toBe('completed');
    expect(result.turns).toBe(2);
    expect(sent(scripted.calls[1]!)).toContain('Baton: your answer was cut off at max_tokens (4096)');
  });

  it('keeps every tool call id unique in the session, whatever ids the model repeats', async () => {
    answers.push(
      calls({ id: 'a', name: 'list_files', input: {} }),
      calls({ id: 'a~2', name: 'list_files', input: {} }, { id: 'a', name: 'list_files', input: {} }),
      'Done.',
    );
    await agent('anthropic', { prompt: 'go' });
    const ids = (await entries())
      .filter((entry) => entry.type === 'tool_call')
      .map((entry) => (entry.content as { tool_use_id: string }).tool_use_id);
    expect(ids).toEqual(['a', 'a_2', 'a_3']);
    const results = (await entries()).filter((entry) => entry.type === 'tool_result');
    expect(results.map((entry) => (entry.content as { tool_use_id: string }).tool_use_id)).toEqual(ids);
  });

  it('writes nothing for a new session without a task, or with one too long', async () => {
    await expect(agent('openai', {})).rejects.toMatchObject({ code: 'invalid_input' });
    await expect(agent('openai', { prompt: 'x'.repeat(64 * 1024 + 1) })).rejects.toMatchObject({
      code: 'invalid_input',
    });
    await expect(store.getStream(work.sessionStream('acme', 's'))).rejects.toMatchObject({
      code: 'not_found',
    });
    expect(scripted.calls).toHaveLength(0);
  });

  it('never stores a secret the model puts in a tool call', async () => {
    answers.push(
      calls({ id: 'w', name: 'write_file', input: { path: 'n.txt', content: `key ${secret}` } }),
      'Done.',
    );
    await agent('openai', { prompt: 'go' });
    const call = (await entries()).find((entry) => entry.type === 'tool_call')!;
    expect(JSON.stringify(call.content)).not.toContain(secret);
  });

  it('ends aborted when cancelled, even during its last turn', async () => {
    const controller = new AbortController();
    router = () => {
      controller.abort();
      return calls({ id: 'l', name: 'list_files', input: {} });
    };
    const env = { AGENT_KEY: 'k' };
    const result = await runAgent(
      deps,
      'acme',
      { session_id: 's', prompt: 'go', start: { work_mode: 'direct', workspace } },
      {
        route: chatRoute(config('openai', { max_turns: 1 }), env),
        config: config('openai', { max_turns: 1 }),
        env,
        signal: controller.signal,
      },
    );
    expect(result.status).toBe('aborted');
    expect(result.work.terminal?.status).toBe('aborted');
  });

  it('refuses to run an ended session', async () => {
    answers.push('Done.');
    await agent('openai', { prompt: 'go' });
    await expect(agent('openai', { prompt: 'again' })).rejects.toMatchObject({
      code: 'conflict',
      data: { rule: 'session_ended' },
    });
  });
});

describe('workers', () => {
  const twoNotes = {
    objective: 'Write two notes',
    criteria: [
      {
        criterion_id: 'a-done',
        statement: 'A.md says alpha',
        kind: { type: 'file_contains', path: 'A.md', pattern: 'alpha' },
      },
      {
        criterion_id: 'b-done',
        statement: 'A.md was checked: it says alpha',
        kind: { type: 'file_contains', path: 'A.md', pattern: 'alpha' },
      },
    ],
    items: [
      { item_id: 'a', title: 'Write A.md', criterion_ids: ['a-done'], path_claims: ['A.md'] },
      { item_id: 'b', title: 'Check A.md', criterion_ids: ['b-done'], path_claims: ['B.md'], readonly: true },
    ],
  };

  it('hands two items to child sessions that run at the same time, narrowed, and verifies what they did', async () => {
    const parent: ScriptedAnswer[] = [
      JSON.stringify(twoNotes),
      calls(
        { id: 't1', name: 'task', input: { item_id: 'a' } },
        { id: 't2', name: 'task', input: { item_id: 'b', instructions: 'Say beta.' } },
      ),
      calls({ id: 't3', name: 'write_file', input: { path: 'B.md', content: 'beta\n' } }),
      'Both notes are written.',
    ];
    // Each worker's first call is held until the other's has arrived: only workers that run at
    // the same time get past it (one at a time, the first would time out).
    let arrived = 0;
    let release!: () => void;
    const both = new Promise<void>((resolve) => (release = resolve));
    router = async (call) => {
      const text = sent(call);
      const worker = /Work only item \\"(\w)\\"/.exec(text)?.[1];
      if (worker === undefined) return parent.shift() ?? { status: 500, body: 'script ran out' };
      if (text.includes('wrote ') || text.includes('denied')) return `Item ${worker}: done.`;
      arrived += 1;
      if (arrived === 2) release();
      await both;
      const [file, word] = worker === 'a' ? ['A.md', 'alpha'] : ['B.md', 'beta'];
      return calls({ id: 'w1', name: 'write_file', input: { path: file, content: `${word}\n` } });
    };
    const { result, events } = await agent('anthropic', {
      prompt: 'Write two notes',
      start: { work_mode: 'managed', workspace },
    });

    const children = scripted.calls.filter((call) => sent(call).includes('Work only item'));
    const offered = (call: ModelCall) => (call.body.tools as { name: string }[]).map((tool) => tool.name);
    expect(offered(scripted.calls[1]!)).toEqual([
      'list_files',
      'read_file',
      'write_file',
      'shell',
      'work',
      'task',
    ]);
    // A worker cannot start workers or change the contract; a readonly item's worker cannot write.
    const first = (item: string) => children.find((call) => sent(call).includes(`item \\"${item}\\"`))!;
    expect(offered(first('a'))).toEqual(['list_files', 'read_file', 'write_file', 'shell']);
    expect(offered(first('b'))).toEqual(['list_files', 'read_file', 'shell']);

    expect(readFileSync(join(workspace, 'A.md'), 'utf8')).toBe('alpha\n');
    const a = await work.readSessionHeader(deps, 'acme', 's.a.1');
    expect(a).toMatchObject({ parent_session_id: 's', work_item_id: 'a', capabilities: { write: true } });
    const b = await work.readSessionHeader(deps, 'acme', 's.b.1');
    expect(b).toMatchObject({ parent_session_id: 's', work_item_id: 'b', capabilities: { write: false } });
    const childResults = (await entries('s.b.1')).filter((entry) => entry.type === 'tool_result');
    expect(childResults.map((entry) => (entry.content as { output: string }).output)).toEqual([
      'denied (read_only): this session is read-only: it may not change files',
    ]);

    // Worker b could not write and said it was done: its end put b up for verification, and
    // the verifier, not the worker's word, decided. The parent, with no item of its own
    // running, may not write either.
    const outputs = await outputsOf();
    expect(outputs.get('t1')).toMatch(/^child session s\.a\.1 ended completed after 2 turns: /);
    expect(outputs.get('t1')).toContain('item "a" is now ready_for_verification');
    expect(outputs.get('t3')).toBe(
      'no item you work on is running: move the item this change is for to running first (work transition)',
    );
    expect(outputs.get('t2')).toMatch(/^child session s\.b\.1 ended completed after 2 turns: /);
    expect(events).toContainEqual(expect.objectContaining({ type: 'child', session_id: 's.a.1' }));

    expect(result.status).toBe('completed');
    const contract = result.work.projection!.contracts[0]!;
    expect(contract.status).toBe('completed');
    for (const item of contract.items) {
      expect(item.status).toBe('succeeded');
      expect(item.evidence).toContainEqual(expect.objectContaining({ type: 'child_session' }));
    }
  });
});

describe('workers, again', () => {
  const oneNote = {
    objective: 'Write A.md',
    criteria: [
      {
        criterion_id: 'alpha',
        statement: 'A.md says alpha',
        kind: { type: 'file_contains', path: 'A.md', pattern: 'alpha' },
      },
    ],
    items: [{ item_id: 'a', title: 'Write A.md', criterion_ids: ['alpha'] }],
  };

  it('leaves the parent’s own running item running when a worker ends: only the worker’s item is reconciled', async () => {
    const two = {
      objective: 'Write A.md and B.md',
      criteria: [
        ...oneNote.criteria,
        {
          criterion_id: 'beta',
          statement: 'B.md says beta',
          kind: { type: 'file_contains', path: 'B.md', pattern: 'beta' },
        },
      ],
      items: [
        { item_id: 'a', title: 'Write A.md', criterion_ids: ['alpha'], path_claims: ['A.md'] },
        { item_id: 'b', title: 'Write B.md', criterion_ids: ['beta'], path_claims: ['B.md'] },
      ],
    };
    const parent: ScriptedAnswer[] = [
      JSON.stringify(two),
      calls(
        { id: 'p1', name: 'work', input: { operation: 'transition', item_id: 'b', to: 'running' } },
        { id: 'p2', name: 'task', input: { item_id: 'a' } },
      ),
      calls({ id: 'p3', name: 'write_file', input: { path: 'B.md', content: 'beta\n' } }),
      'Stopping here.',
    ];
    router = (call) => {
      const text = sent(call);
      if (!text.includes('Work only item')) return parent.shift() ?? { status: 500, body: 'script ran out' };
      return text.includes('wrote ')
        ? 'A is done.'
        : calls({ id: 'w1', name: 'write_file', input: { path: 'A.md', content: 'alpha\n' } });
    };
    await agent(
      'openai',
      { prompt: 'Write both', start: { work_mode: 'managed', workspace } },
      { max_turns: 3 },
    );

    const outputs = await outputsOf();
    expect(outputs.get('p2')).toContain('item "a" is now ready_for_verification');
    // The parent was still working on b: its write went through, b was never interrupted.
    expect(outputs.get('p3')).toBe('wrote 5 bytes to B.md');
    const moves = (await entries())
      .filter((entry) => entry.type === 'work_event')
      .map((entry) => entry.content as { kind: { type: string; item_id?: string; to?: string } })
      .filter((event) => event.kind.type === 'item_status_changed' && event.kind.item_id === 'b')
      .map((event) => event.kind.to);
    expect(moves).not.toContain('interrupted');
  });

  it('hands an item out again after its verification failed, to a new child session', async () => {
    const parent: ScriptedAnswer[] = [
      JSON.stringify(oneNote),
      calls({ id: 't1', name: 'task', input: { item_id: 'a' } }),
      'Done.',
      calls({ id: 't2', name: 'task', input: { item_id: 'a', instructions: 'It must say alpha.' } }),
      'Done now.',
    ];
    const words = ['beta', 'alpha'];
    router = (call) => {
      const text = sent(call);
      if (!text.includes('Work only item')) return parent.shift() ?? { status: 500, body: 'script ran out' };
      if (text.includes('wrote ')) return 'Written.';
      return calls({ id: 'w', name: 'write_file', input: { path: 'A.md', content: `${words.shift()}\n` } });
    };
    const { result } = await agent('openai', { prompt: 'go', start: { work_mode: 'managed', workspace } });
    expect(result.status).toBe('completed');
    const outputs = await outputsOf();
    expect(outputs.get('t1')).toMatch(/^child session s\.a\.1 ended completed/);
    expect(outputs.get('t2')).toMatch(/^child session s\.a\.1-2 ended completed/);
    expect(readFileSync(join(workspace, 'A.md'), 'utf8')).toBe('alpha\n');
  });

  it('gives a read-only item’s worker the parent’s tools, and write taken away, nothing more', async () => {
    const tools = ['list_files', 'read_file', 'work', 'task'];
    answers.push(
      JSON.stringify({
        objective: 'Look',
        criteria: [
          {
            criterion_id: 'there',
            statement: 'README.md is there',
            kind: { type: 'file_exists', path: 'README.md' },
          },
        ],
        items: [{ item_id: 'look', title: 'Look at README.md', criterion_ids: ['there'], readonly: true }],
      }),
      calls({ id: 't', name: 'task', input: { item_id: 'look' } }),
      'Looked.',
      'Done.',
    );
    const { result } = await agent('anthropic', {
      prompt: 'look',
      start: {
        work_mode: 'managed',
        workspace,
        capabilities: { write: true, tools, flows: [], capabilities: [], owners: ['parent_agent', 'worker'] },
      },
    });
    expect(result.status).toBe('completed');
    const child = await work.readSessionHeader(deps, 'acme', 's.look.1');
    expect(child?.capabilities).toMatchObject({ write: false, tools });
    const offered = (scripted.calls[2]!.body.tools as { name: string }[]).map((tool) => tool.name);
    expect(offered).toEqual(['list_files', 'read_file']);
  });
});

describe('baton agent run', () => {
  it('runs the configured model in this folder, telling each turn on stderr; exit 0 when completed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-agent-db-'));
    const database = join(dir, 'baton.db');
    writeFileSync(
      join(workspace, 'baton.toml'),
      `[agent]\nprovider = "openai"\nmodel = "agent-1"\nbase_url = "${scripted.url}/v1"\napi_key_env = "AGENT_KEY"\n`,
    );
    answers.push(
      calls({ id: 'c1', name: 'write_file', input: { path: 'OUT.md', content: 'out\n' } }),
      'Wrote OUT.md.',
    );
    const out: string[] = [];
    const err: string[] = [];
    const io = {
      out: (text: string) => out.push(text),
      err: (text: string) => err.push(text),
      env: { AGENT_KEY: 'sk-cli', BATON_DATABASE_URL: database },
      cwd: workspace,
    };
    expect(await run(['project', 'create', 'default'], io)).toBe(0);
    out.length = 0;
    const code = await run(['agent', 'run', 'write', 'OUT.md', '--session', 'cli-1'], io);
    expect(err.join('')).toContain(
      'turn 1/30\n  ✓ write_file OUT.md (c1)\nturn 2/30\n  model: Wrote OUT.md.\n',
    );
    expect(code).toBe(0);
    expect(out.join('')).toContain('session cli-1: completed after 2 turns');
    expect(readFileSync(join(workspace, 'OUT.md'), 'utf8')).toBe('out\n');
    expect(scripted.calls[0]!.headers.authorization).toBe('Bearer sk-cli');
    expect(sent(scripted.calls[0]!)).toContain('write OUT.md');

    out.length = 0;
    expect(await run(['session', 'transcript', 'cli-1'], io)).toBe(0);
    const lines = out.join('').split('\n');
    expect(lines[0]).toBe('Session cli-1 · 6 conversation entries · history, not instruction');
    expect(lines).toContain('#2    person:');
    expect(lines).toContain('      write OUT.md');
    expect(
      lines.some((line) => /^#\d+ +→ write_file \(c1\) \{"content":"out\\n","path":"OUT.md"\}$/.test(line)),
    ).toBe(true);
    expect(
      lines.some((line) =>
        /^#\d+ +· openai\/agent-1: 1 attempt, \d+ ms, 120 in \/ 30 out tokens$/.test(line),
      ),
    ).toBe(true);

    err.length = 0;
    writeFileSync(join(workspace, 'baton.toml'), '');
    expect(await run(['agent', 'run', 'again'], io)).toBe(1);
    expect(err.join('')).toContain('has no [agent]: name the model to run');
    err.length = 0;
    expect(await run(['agent', 'run'], io)).toBe(2);
    expect(err.join('')).toContain('say what to do');
    rmSync(dir, { recursive: true, force: true });
  });
});
