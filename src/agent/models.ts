/**
 * Model routes (docs/judge.md): one request, one text answer, from an OpenAI-compatible chat
 * completions endpoint (OpenAI, Ollama, llama.cpp, vLLM) or Anthropic's messages endpoint. Plain
 * `fetch` with the answer checked by a schema: two small JSON calls need no SDK. Every failure is
 * a typed ModelError; the key never appears in one, nor in anything logged.
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

  constructor(kind: ModelError['kind'], message: string) {
    super(message);
    this.kind = kind;
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

/** POST a JSON body and read a JSON answer, within the timeout and the caller's signal. */
async function postJson(
  url: string,
  headers: Record<string, string>,
  body: unknown,
  request: ModelRequest,
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
    );
  }
  if (!response.ok) {
    throw new ModelError(
      'unavailable',
      `${new URL(url).origin} answered ${response.status}: ${clipText(text.replace(/\s+/g, ' ').trim(), detailChars)}`,
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

/** The route `[judge]` configures; the key is read from the environment variable it names. */
export function modelRoute(
  config: Pick<JudgeConfig, 'provider' | 'model' | 'base_url' | 'api_key_env'>,
  env: Readonly<Record<string, string | undefined>>,
): ModelRoute {
  const key = env[config.api_key_env];
  const { provider, model } = config;
  if (provider === 'openai') {
    // OpenAI's own newer models refuse max_tokens (and any temperature but their default);
    // the compatible servers (Ollama, llama.cpp, vLLM) know max_tokens.
    const tokenField =
      new URL(config.base_url).hostname === 'api.openai.com' ? 'max_completion_tokens' : 'max_tokens';
    return {
      provider,
      model,
      async complete(request) {
        const answer = await postJson(
          endpoint(config.base_url, '/chat/completions'),
          key ? { authorization: `Bearer ${key}` } : {},
          {
            model,
            messages: [
              { role: 'system', content: request.system },
              { role: 'user', content: request.prompt },
            ],
            [tokenField]: request.max_tokens,
          },
          request,
        );
        return parsed(openAiAnswer, answer, 'chat completions').choices[0]!.message.content ?? '';
      },
    };
  }
  return {
    provider,
    model,
    async complete(request) {
      const answer = await postJson(
        endpoint(config.base_url, '/v1/messages'),
        { 'anthropic-version': '2023-06-01', ...(key ? { 'x-api-key': key } : {}) },
        {
          model,
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
    },
  };
}
