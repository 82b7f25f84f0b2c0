/**
 * Model routes (docs/judge.md): one request with one text answer (the semantic judge), or one turn
 * of a multi-turn chat with tool calling (Baton's own agent loop), from an OpenAI-compatible chat
 * completions endpoint (OpenAI, Ollama, llama.cpp, vLLM) or Anthropic's messages endpoint. Plain
 * `fetch` with the answer checked by a schema: small JSON calls need no SDK. Every failure is a
 * typed ModelError; the key never appears in one, nor in anything logged.
 */
import { z } from 'zod';
import type { JudgeConfig, ModelProvider } from '../core/work/config.ts';
import { clipText } from '../core/text.ts';

export interface ModelRequest {
  readonly system: string;
  readonly prompt: string;
  readonly max_tokens: number;
  readonly timeout_ms: number;
  readonly signal?: AbortSignal;
}

export interface ModelRoute {
  readonly provider: ModelProvider;
  readonly model: string;
  complete(request: ModelRequest): Promise<string>;
}

/** A tool the model may call: its name, what it does, and its input's JSON Schema (an object). */
export interface ChatTool {
  readonly name: string;
  readonly description: string;
  readonly input_schema: Record<string, unknown>;
}

/** One call the model asked for: `input` is the parsed arguments (null when they were not JSON). */
export interface ChatToolCall {
  readonly id: string;
  readonly name: string;
  readonly input: unknown;
}

/** One message of a conversation, in Baton's own terms; each route translates it. */
export type ChatMessage =
  | { readonly role: 'user'; readonly text: string }
  | { readonly role: 'assistant'; readonly text: string; readonly tool_calls: readonly ChatToolCall[] }
  | {
      readonly role: 'tool';
      readonly tool_use_id: string;
      readonly name: string;
      readonly output: string;
      readonly is_error: boolean;
    };

export interface ChatRequest {
  readonly system: string;
  readonly messages: readonly ChatMessage[];
  readonly tools: readonly ChatTool[];
  /**
   * Text placed after every message, rebuilt for each request and never part of the history
   * (the managed-work control block); null for none.
   */
  readonly tail: string | null;
  readonly max_tokens: number;
  readonly timeout_ms: number;
  readonly signal?: AbortSignal;
}

/** The model's turn: its text, the tools it calls (possibly none) and why it stopped. */
export interface ChatAnswer {
  readonly text: string;
  readonly tool_calls: readonly ChatToolCall[];
  /** `end`: it finished its turn; `tool_use`: it waits for tool results; `max_tokens`: cut off. */
  readonly stop: 'end' | 'tool_use' | 'max_tokens';
  /** The tokens the request read and the answer wrote, when the server said. */
  readonly usage: ChatUsage | null;
}

export interface ChatUsage {
  readonly input_tokens: number;
  readonly output_tokens: number;
}

export interface ChatRoute {
  readonly provider: ModelProvider;
  readonly model: string;
  chat(request: ChatRequest): Promise<ChatAnswer>;
}

/** Why a model gave no answer: it took too long, or it could not be reached or refused. */
export class ModelError extends Error {
  override readonly name = 'ModelError';
  readonly kind: 'timed_out' | 'unavailable' | 'cancelled';
  /**
   * Whether asking again may help: the server could not be reached, was overloaded (429) or
   * failed (5xx). A refusal (another 4xx), a bad answer or a timeout is not retried.
   */
  readonly retryable: boolean;

  constructor(kind: ModelError['kind'], message: string, retryable = false) {
    super(message);
    this.kind = kind;
    this.retryable = retryable;
  }
}

const openAiAnswer = z.object({
  choices: z.array(z.object({ message: z.object({ content: z.string().nullable() }) })).min(1),
});

const anthropicAnswer = z.object({
  content: z.array(z.looseObject({ type: z.string(), text: z.string().optional() })),
});

const detailChars = 300;
/** The most of an answer read: a judge's verdict is a few hundred bytes. */
const answerBytes = 1024 * 1024;

/** The body as text, refused once it passes `limit` bytes (leaving the loop cancels the rest). */
async function readCapped(response: Response, limit: number): Promise<string> {
  if (!response.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > limit) {
      throw new ModelError(
        'unavailable',
        `${new URL(response.url).origin} answered more than ${limit} bytes`,
      );
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function endpoint(base_url: string, path: string): string {
  return `${base_url.replace(/\/+$/, '')}${path}`;
}

/** How long a call may take, and the caller's signal to cancel it. */
type Deadline = Pick<ModelRequest, 'timeout_ms' | 'signal'>;

/** POST a JSON body and read a JSON answer, within the timeout and the caller's signal. */
async function postJson(
  url: string,
  headers: Record<string, string>,
  body: unknown,
  request: Deadline,
): Promise<unknown> {
  const timeout = AbortSignal.timeout(request.timeout_ms);
  const signal = request.signal ? AbortSignal.any([timeout, request.signal]) : timeout;
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
      signal,
      redirect: 'error',
    });
    text = await readCapped(response, answerBytes);
  } catch (error) {
    if (error instanceof ModelError) throw error;
    if (request.signal?.aborted) throw new ModelError('cancelled', 'the caller cancelled the request');
    if (timeout.aborted) throw new ModelError('timed_out', `no answer within ${request.timeout_ms} ms`);
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new ModelError(
      'unavailable',
      `could not reach ${new URL(url).origin}: ${cause?.code ?? cause?.message ?? (error as Error).message}`,
      true,
    );
  }
  if (!response.ok) {
    throw new ModelError(
      'unavailable',
      `${new URL(url).origin} answered ${response.status}: ${clipText(text.replace(/\s+/g, ' ').trim(), detailChars)}`,
      response.status === 429 || response.status >= 500,
    );
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ModelError('unavailable', `${new URL(url).origin} answered something that is not JSON`);
  }
}

function parsed<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw new ModelError('unavailable', `the ${what} answer has an unexpected shape`);
  return result.data;
}

type RouteConfig = Pick<JudgeConfig, 'provider' | 'model' | 'base_url' | 'api_key_env'>;
type Env = Readonly<Record<string, string | undefined>>;

/** How a provider is called: a POST to its endpoint with its headers (the key among them). */
interface ProviderCall {
  readonly model: string;
  post(body: Record<string, unknown>, request: Deadline): Promise<unknown>;
  /** The body field that caps the answer's tokens. */
  readonly tokenField: 'max_tokens' | 'max_completion_tokens';
}

function providerCall(config: RouteConfig, env: Env): ProviderCall {
  const key = env[config.api_key_env];
  const to =
    (url: string, headers: Record<string, string>): ProviderCall['post'] =>
    (body, request) =>
      postJson(url, headers, body, request);
  if (config.provider === 'openai') {
    // OpenAI's own newer models refuse max_tokens (and any temperature but their default);
    // the compatible servers (Ollama, llama.cpp, vLLM) know max_tokens.
    const tokenField =
      new URL(config.base_url).hostname === 'api.openai.com' ? 'max_completion_tokens' : 'max_tokens';
    return {
      model: config.model,
      post: to(endpoint(config.base_url, '/chat/completions'), key ? { authorization: `Bearer ${key}` } : {}),
      tokenField,
    };
  }
  return {
    model: config.model,
    post: to(endpoint(config.base_url, '/v1/messages'), {
      'anthropic-version': '2023-06-01',
      ...(key ? { 'x-api-key': key } : {}),
    }),
    tokenField: 'max_tokens',
  };
}

async function openAiComplete(call: ProviderCall, request: ModelRequest): Promise<string> {
  const answer = await call.post(
    {
      model: call.model,
      messages: [
        { role: 'system', content: request.system },
        { role: 'user', content: request.prompt },
      ],
      [call.tokenField]: request.max_tokens,
    },
    request,
  );
  return parsed(openAiAnswer, answer, 'chat completions').choices[0]!.message.content ?? '';
}

async function anthropicComplete(call: ProviderCall, request: ModelRequest): Promise<string> {
  const answer = await call.post(
    {
      model: call.model,
      system: request.system,
      max_tokens: request.max_tokens,
      temperature: 0,
      messages: [{ role: 'user', content: request.prompt }],
    },
    request,
  );
  return parsed(anthropicAnswer, answer, 'messages')
    .content.filter((block) => block.type === 'text')
    .map((block) => block.text ?? '')
    .join('');
}

/** The route `[judge]` configures; the key is read from the environment variable it names. */
export function modelRoute(config: RouteConfig, env: Env): ModelRoute {
  const call = providerCall(config, env);
  const complete = config.provider === 'openai' ? openAiComplete : anthropicComplete;
  return { provider: config.provider, model: config.model, complete: (request) => complete(call, request) };
}

const openAiChatAnswer = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.string().nullish(),
          tool_calls: z
            .array(
              z.object({
                id: z.string().nullish(),
                function: z.object({ name: z.string(), arguments: z.string() }),
              }),
            )
            .nullish(),
        }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
  usage: z.looseObject({ prompt_tokens: z.number(), completion_tokens: z.number() }).nullish().catch(null),
});

const anthropicChatAnswer = z.object({
  content: z.array(z.looseObject({ type: z.string() })),
  stop_reason: z.string().nullish(),
  usage: z.looseObject({ input_tokens: z.number(), output_tokens: z.number() }).nullish().catch(null),
});
const anthropicText = z.object({ text: z.string() });
const anthropicToolUse = z.object({ id: z.string().nullish(), name: z.string(), input: z.unknown() });

/** The calls with the ids the model gave kept, and `call_<n>` (unique in the answer) for the missing. */
function withIds(calls: readonly { id?: string | null; name: string; input: unknown }[]): ChatToolCall[] {
  const taken = new Set(calls.map((call) => call.id).filter(Boolean));
  let n = 0;
  return calls.map(({ id, name, input }) => {
    if (id) return { id, name, input };
    let made: string;
    do made = `call_${++n}`;
    while (taken.has(made));
    taken.add(made);
    return { id: made, name, input };
  });
}

function jsonOrNull(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

function chatAnswer(
  text: string,
  tool_calls: ChatToolCall[],
  reason: string | null | undefined,
  reasons: { readonly tool_use: string; readonly max_tokens: string },
  usage: ChatUsage | null,
): ChatAnswer {
  // Cut off is said first: a call in an answer cut off may have lost the end of its input.
  const stop =
    reason === reasons.max_tokens
      ? 'max_tokens'
      : tool_calls.length > 0 || reason === reasons.tool_use
        ? 'tool_use'
        : 'end';
  return { text, tool_calls, stop, usage };
}

function openAiChatMessage(message: ChatMessage): Record<string, unknown> {
  switch (message.role) {
    case 'user':
      return { role: 'user', content: message.text };
    case 'assistant':
      return {
        role: 'assistant',
        // null only beside tool calls: an assistant message with neither is refused by OpenAI.
        content: message.text || (message.tool_calls.length > 0 ? null : ''),
        ...(message.tool_calls.length > 0 && {
          tool_calls: message.tool_calls.map((call) => ({
            id: call.id,
            type: 'function',
            function: { name: call.name, arguments: JSON.stringify(call.input) },
          })),
        }),
      };
    case 'tool':
      // The protocol has no error flag: the content says so.
      return {
        role: 'tool',
        tool_call_id: message.tool_use_id,
        content: message.is_error ? `error: ${message.output}` : message.output,
      };
  }
}

type AnthropicBlock = Record<string, unknown>;
interface AnthropicMessage {
  readonly role: 'user' | 'assistant';
  readonly content: AnthropicBlock[];
}

function anthropicBlocks(message: ChatMessage): AnthropicMessage {
  switch (message.role) {
    case 'user':
      return { role: 'user', content: [{ type: 'text', text: message.text }] };
    case 'assistant':
      return {
        role: 'assistant',
        content: [
          ...(message.text ? [{ type: 'text', text: message.text }] : []),
          ...message.tool_calls.map((call) => ({
            type: 'tool_use',
            id: call.id,
            name: call.name,
            input: call.input ?? {},
          })),
        ],
      };
    case 'tool':
      return {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: message.tool_use_id,
            content: message.output,
            is_error: message.is_error,
          },
        ],
      };
  }
}

/** Anthropic wants the roles to alternate: consecutive messages of one role become one message. */
function anthropicMessages(request: ChatRequest): AnthropicMessage[] {
  const messages: AnthropicMessage[] = [];
  const tail: AnthropicMessage[] =
    request.tail === null ? [] : [{ role: 'user', content: [{ type: 'text', text: request.tail }] }];
  for (const next of [...request.messages.map(anthropicBlocks), ...tail]) {
    if (next.content.length === 0) continue;
    const last = messages.at(-1);
    if (last?.role === next.role) last.content.push(...next.content);
    else messages.push({ role: next.role, content: [...next.content] });
  }
  return messages;
}

async function openAiChat(call: ProviderCall, request: ChatRequest): Promise<ChatAnswer> {
  const answer = await call.post(
    {
      model: call.model,
      messages: [
        { role: 'system', content: request.system },
        ...request.messages.map(openAiChatMessage),
        ...(request.tail === null ? [] : [{ role: 'user', content: request.tail }]),
      ],
      ...(request.tools.length > 0 && {
        tools: request.tools.map((tool) => ({
          type: 'function',
          function: { name: tool.name, description: tool.description, parameters: tool.input_schema },
        })),
      }),
      [call.tokenField]: request.max_tokens,
    },
    request,
  );
  const { choices, usage } = parsed(openAiChatAnswer, answer, 'chat completions');
  const choice = choices[0]!;
  const calls = (choice.message.tool_calls ?? []).map((made) => ({
    id: made.id,
    name: made.function.name,
    input: jsonOrNull(made.function.arguments),
  }));
  return chatAnswer(
    choice.message.content ?? '',
    withIds(calls),
    choice.finish_reason,
    {
      tool_use: 'tool_calls',
      max_tokens: 'length',
    },
    usage ? { input_tokens: usage.prompt_tokens, output_tokens: usage.completion_tokens } : null,
  );
}

async function anthropicChat(call: ProviderCall, request: ChatRequest): Promise<ChatAnswer> {
  const answer = await call.post(
    {
      model: call.model,
      system: request.system,
      max_tokens: request.max_tokens,
      messages: anthropicMessages(request),
      ...(request.tools.length > 0 && {
        tools: request.tools.map(({ name, description, input_schema }) => ({
          name,
          description,
          input_schema,
        })),
      }),
    },
    request,
  );
  const { content, stop_reason, usage } = parsed(anthropicChatAnswer, answer, 'messages');
  const text = content
    .filter((block) => block.type === 'text')
    .map((block) => parsed(anthropicText, block, 'messages').text)
    .join('');
  const calls = content
    .filter((block) => block.type === 'tool_use')
    .map((block) => parsed(anthropicToolUse, block, 'messages'));
  return chatAnswer(
    text,
    withIds(calls),
    stop_reason,
    { tool_use: 'tool_use', max_tokens: 'max_tokens' },
    usage ? { input_tokens: usage.input_tokens, output_tokens: usage.output_tokens } : null,
  );
}

/** A multi-turn route with tool calling, configured as `[judge]` is; the key comes from `env`. */
export function chatRoute(config: RouteConfig, env: Env): ChatRoute {
  const call = providerCall(config, env);
  const chat = config.provider === 'openai' ? openAiChat : anthropicChat;
  return { provider: config.provider, model: config.model, chat: (request) => chat(call, request) };
}
