/**
 * The chat routes (src/agent/models.ts) over real HTTP against a scripted model, for both
 * providers: how a conversation with tool calls, tool results and a tail is sent, how the model's
 * turn is read back (text, tool calls, why it stopped), and how failures become ModelErrors.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  chatRoute,
  ModelError,
  type ChatMessage,
  type ChatRequest,
  type ChatTool,
} from '../src/agent/models.ts';
import type { ModelProvider } from '../src/core/work/config.ts';
import {
  scriptedUsage,
  startScriptedModel,
  type ScriptedAnswer,
  type ScriptedModel,
} from './helpers/scripted-model.ts';

const key = 'sk-chat-key-456';

let scripted: ScriptedModel;
let answers: ScriptedAnswer[];

beforeEach(async () => {
  answers = [];
  scripted = await startScriptedModel(() => answers.shift() ?? { status: 500, body: 'script ran out' });
});

afterEach(async () => {
  await scripted.close();
});

const readTool: ChatTool = {
  name: 'read_file',
  description: 'Read a file of the workspace.',
  input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
};

/** User text, an assistant turn calling two tools, their two results (the second failed). */
const conversation: ChatMessage[] = [
  { role: 'user', text: 'Why does the login redirect loop?' },
  {
    role: 'assistant',
    text: 'Let me look.',
    tool_calls: [
      { id: 'call_a', name: 'read_file', input: { path: 'NOTES.md' } },
      { id: 'call_b', name: 'read_file', input: { path: 'missing.md' } },
    ],
  },
  { role: 'tool', tool_use_id: 'call_a', name: 'read_file', output: '# Notes', is_error: false },
  { role: 'tool', tool_use_id: 'call_b', name: 'read_file', output: 'no such file', is_error: true },
];

function request(overrides: Partial<ChatRequest> = {}): ChatRequest {
  return {
    system: 'You are Baton.',
    messages: conversation,
    tools: [readTool],
    tail: 'Control: 2 items open.',
    max_tokens: 500,
    timeout_ms: 5000,
    ...overrides,
  };
}

interface ProviderCase {
  readonly provider: ModelProvider;
  /** The base_url for the scripted server's origin. */
  readonly base: (origin: string) => string;
  readonly path: string;
  /** What the provider's answer is called in a ModelError. */
  readonly answer: string;
  /** The request body `request()` must be sent as. */
  readonly body: Record<string, unknown>;
  readonly keyHeader: (headers: Record<string, unknown>) => unknown;
  /** A raw 200 answer calling one tool; `id` is left out when undefined. */
  readonly rawToolAnswer: (id: string | undefined) => unknown;
}

const cases: ProviderCase[] = [
  {
    provider: 'openai',
    base: (origin) => `${origin}/v1`,
    path: '/v1/chat/completions',
    answer: 'chat completions',
    body: {
      model: 'chat-1',
      messages: [
        { role: 'system', content: 'You are Baton.' },
        { role: 'user', content: 'Why does the login redirect loop?' },
        {
          role: 'assistant',
          content: 'Let me look.',
          tool_calls: [
            {
              id: 'call_a',
              type: 'function',
              function: { name: 'read_file', arguments: '{"path":"NOTES.md"}' },
            },
            {
              id: 'call_b',
              type: 'function',
              function: { name: 'read_file', arguments: '{"path":"missing.md"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_a', content: '# Notes' },
        { role: 'tool', tool_call_id: 'call_b', content: 'error: no such file' },
        { role: 'user', content: 'Control: 2 items open.' },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'read_file',
            description: 'Read a file of the workspace.',
            parameters: readTool.input_schema,
          },
        },
      ],
      max_tokens: 500,
    },
    keyHeader: (headers) => headers.authorization,
    rawToolAnswer: (id) => ({
      choices: [
        {
          message: {
            content: null,
            tool_calls: [{ id, type: 'function', function: { name: 'read_file', arguments: '{}' } }],
          },
          finish_reason: 'tool_calls',
        },
      ],
    }),
  },
  {
    provider: 'anthropic',
    base: (origin) => origin,
    path: '/v1/messages',
    answer: 'messages',
    body: {
      model: 'chat-1',
      system: 'You are Baton.',
      max_tokens: 500,
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Why does the login redirect loop?' }] },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Let me look.' },
            { type: 'tool_use', id: 'call_a', name: 'read_file', input: { path: 'NOTES.md' } },
            { type: 'tool_use', id: 'call_b', name: 'read_file', input: { path: 'missing.md' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'call_a', content: '# Notes', is_error: false },
            { type: 'tool_result', tool_use_id: 'call_b', content: 'no such file', is_error: true },
            { type: 'text', text: 'Control: 2 items open.' },
          ],
        },
      ],
      tools: [
        {
          name: 'read_file',
          description: 'Read a file of the workspace.',
          input_schema: readTool.input_schema,
        },
      ],
    },
    keyHeader: (headers) => headers['x-api-key'],
    rawToolAnswer: (id) => ({
      content: [{ type: 'tool_use', id, name: 'read_file', input: {} }],
      stop_reason: 'tool_use',
    }),
  },
];

describe.each(cases)('the $provider chat route', (c) => {
  const route = () =>
    chatRoute(
      { provider: c.provider, model: 'chat-1', base_url: c.base(scripted.url), api_key_env: 'CHAT_KEY' },
      { CHAT_KEY: key },
    );

  it('sends the system text, the conversation, the tools and the tail in the protocol’s shape', async () => {
    answers.push('Done.');
    await route().chat(request());
    expect(scripted.calls).toHaveLength(1);
    expect(scripted.calls[0]!.path).toBe(c.path);
    expect(scripted.calls[0]!.body).toEqual(c.body);
    expect(scripted.calls[0]!.prompt).toBe('Why does the login redirect loop?');
  });

  it('carries the key from the environment in the provider’s header', async () => {
    answers.push('Done.');
    await route().chat(request());
    expect(c.keyHeader(scripted.calls[0]!.headers)).toBe(c.provider === 'openai' ? `Bearer ${key}` : key);
  });

  it('reads an answer calling tools: the ids, names and inputs, its text, and stop tool_use', async () => {
    answers.push({
      text: 'Reading both.',
      tool_calls: [
        { id: 'toolu_1', name: 'read_file', input: { path: 'a.md' } },
        { id: 'toolu_2', name: 'list_dir', input: { path: 'src', depth: 2 } },
      ],
    });
    expect(await route().chat(request())).toEqual({
      text: 'Reading both.',
      tool_calls: [
        { id: 'toolu_1', name: 'read_file', input: { path: 'a.md' } },
        { id: 'toolu_2', name: 'list_dir', input: { path: 'src', depth: 2 } },
      ],
      stop: 'tool_use',
      usage: scriptedUsage,
    });
  });

  it('reads a text-only answer as the end of the model’s turn', async () => {
    answers.push('The cookie path is /app.');
    expect(await route().chat(request())).toEqual({
      text: 'The cookie path is /app.',
      tool_calls: [],
      stop: 'end',
      usage: scriptedUsage,
    });
  });

  it('gives a call without an id one of its own, unique within the answer', async () => {
    answers.push({
      tool_calls: [
        { name: 'read_file', input: { path: 'a.md' } },
        { id: 'call_1', name: 'read_file', input: { path: 'b.md' } },
        { name: 'read_file', input: { path: 'c.md' } },
      ],
    });
    const answer = await route().chat(request());
    expect(answer.tool_calls.map((call) => call.id)).toEqual(['call_2', 'call_1', 'call_3']);
    expect(answer.tool_calls.map((call) => call.input)).toEqual([
      { path: 'a.md' },
      { path: 'b.md' },
      { path: 'c.md' },
    ]);
  });

  it('gives a call whose id is missing in a raw answer the id call_1', async () => {
    answers.push({ status: 200, body: JSON.stringify(c.rawToolAnswer(undefined)) });
    const answer = await route().chat(request());
    expect(answer).toEqual({
      text: '',
      tool_calls: [{ id: 'call_1', name: 'read_file', input: {} }],
      stop: 'tool_use',
      usage: null,
    });
  });

  it('sends no tools field when there are no tools, and nothing after the messages when there is no tail', async () => {
    answers.push('Hello.');
    await route().chat(request({ messages: [{ role: 'user', text: 'Hi' }], tools: [], tail: null }));
    const body = scripted.calls[0]!.body;
    expect(body).not.toHaveProperty('tools');
    expect((body.messages as { role: string }[]).filter((m) => m.role !== 'system')).toHaveLength(1);
    expect(scripted.calls[0]!.prompt).toBe('Hi');
  });

  it('refuses an answer of an unexpected shape as unavailable', async () => {
    answers.push({ status: 200, body: JSON.stringify({ answer: 'passed' }) });
    const error = await route()
      .chat(request())
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ kind: 'unavailable' });
    expect((error as ModelError).message).toBe(`the ${c.answer} answer has an unexpected shape`);
  });

  it('refuses a tool call without a name as unavailable', async () => {
    const raw = c.rawToolAnswer('call_x') as Record<string, unknown>;
    const nameless = JSON.stringify(raw).replace('"name":"read_file",', '');
    expect(nameless).not.toContain('read_file');
    answers.push({ status: 200, body: nameless });
    const error = await route()
      .chat(request())
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ kind: 'unavailable' });
  });

  it('gives up on a model that does not answer within the timeout', async () => {
    answers.push({ reply: 'too late', delay_ms: 2000 });
    const error = await route()
      .chat(request({ timeout_ms: 200 }))
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ kind: 'timed_out', message: 'no answer within 200 ms' });
    expect(String((error as Error).message)).not.toContain(key);
  });
});

describe('the openai chat route', () => {
  const route = () =>
    chatRoute(
      { provider: 'openai', model: 'chat-1', base_url: `${scripted.url}/v1`, api_key_env: 'CHAT_KEY' },
      { CHAT_KEY: key },
    );

  it('reads arguments that are not JSON as input null, for the loop to report', async () => {
    answers.push({
      status: 200,
      body: JSON.stringify({
        choices: [
          {
            message: {
              content: null,
              tool_calls: [
                { id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{"path": ' } },
              ],
            },
            finish_reason: 'tool_calls',
          },
        ],
      }),
    });
    expect(await route().chat(request())).toEqual({
      text: '',
      tool_calls: [{ id: 'c1', name: 'read_file', input: null }],
      stop: 'tool_use',
      usage: null,
    });
  });

  it('maps finish_reason length to max_tokens, and tool calls to tool_use whatever the reason', async () => {
    const answer = (finish_reason: string, tool_calls?: unknown[]) =>
      JSON.stringify({ choices: [{ message: { content: 'cut', tool_calls }, finish_reason }] });
    answers.push({ status: 200, body: answer('length') });
    answers.push({
      status: 200,
      body: answer('stop', [{ id: 'c1', type: 'function', function: { name: 'x', arguments: '{}' } }]),
    });
    expect((await route().chat(request())).stop).toBe('max_tokens');
    expect((await route().chat(request())).stop).toBe('tool_use');
  });
});

describe('the anthropic chat route', () => {
  const route = () =>
    chatRoute(
      { provider: 'anthropic', model: 'chat-1', base_url: scripted.url, api_key_env: 'CHAT_KEY' },
      { CHAT_KEY: key },
    );

  it('merges tool results and the user text after them into one user message', async () => {
    answers.push('Done.');
    await route().chat(
      request({
        messages: [...conversation, { role: 'user', text: 'Also check the cookie.' }],
        tail: null,
      }),
    );
    const messages = scripted.calls[0]!.body.messages as { role: string; content: { type: string }[] }[];
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(messages[2]!.content).toEqual([
      { type: 'tool_result', tool_use_id: 'call_a', content: '# Notes', is_error: false },
      { type: 'tool_result', tool_use_id: 'call_b', content: 'no such file', is_error: true },
      { type: 'text', text: 'Also check the cookie.' },
    ]);
  });

  it('puts the tail in a new user message after an assistant turn, and sends an assistant turn without text as tool_use blocks only', async () => {
    answers.push('Done.');
    await route().chat(
      request({
        messages: [
          { role: 'user', text: 'Go.' },
          { role: 'assistant', text: '', tool_calls: [{ id: 't1', name: 'read_file', input: null }] },
        ],
      }),
    );
    expect(scripted.calls[0]!.body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Go.' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'read_file', input: {} }] },
      { role: 'user', content: [{ type: 'text', text: 'Control: 2 items open.' }] },
    ]);
  });

  it('maps stop_reason max_tokens to max_tokens', async () => {
    answers.push({
      status: 200,
      body: JSON.stringify({ content: [{ type: 'text', text: 'cut' }], stop_reason: 'max_tokens' }),
    });
    expect(await route().chat(request())).toEqual({
      text: 'cut',
      tool_calls: [],
      stop: 'max_tokens',
      usage: null,
    });
  });
});
