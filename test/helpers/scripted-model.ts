/**
 * A scripted model: a real HTTP server that speaks the two protocols Baton's model routes use
 * (OpenAI-compatible chat completions at /v1/chat/completions, Anthropic messages at
 * /v1/messages) and answers from a script. The one stand-in the project allows for a paid model.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ModelCall {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Record<string, unknown>;
  /** The prompt it was sent: the first user message's text (its text blocks joined). */
  readonly prompt: string;
}

/** A tool call the script makes; without an id, the answer carries none. */
export interface ScriptedToolCall {
  readonly id?: string;
  readonly name: string;
  readonly input: unknown;
}

/**
 * What the script answers one call with: a reply text, tool calls (with some text), or a status
 * and raw body, after a delay.
 */
export type ScriptedAnswer =
  | string
  | { readonly status: number; readonly body: string; readonly delay_ms?: number }
  | { readonly reply: string; readonly delay_ms: number }
  | { readonly tool_calls: readonly ScriptedToolCall[]; readonly text?: string };

export interface ScriptedModel {
  /** The server's origin, e.g. http://127.0.0.1:PORT. */
  readonly url: string;
  readonly calls: ModelCall[];
  close(): Promise<void>;
}

function promptOf(body: Record<string, unknown>): string {
  const messages = (body.messages ?? []) as { role: string; content: unknown }[];
  const content = messages.find((message) => message.role === 'user')?.content ?? '';
  if (typeof content === 'string') return content;
  return (content as { type: string; text?: string }[])
    .filter((block) => block.type === 'text')
    .map((block) => block.text ?? '')
    .join('');
}

/** The tokens every scripted answer says it used. */
export const scriptedUsage = { input_tokens: 120, output_tokens: 30 } as const;

function answerBody(path: string, text: string, calls: readonly ScriptedToolCall[]): unknown {
  return path.endsWith('/messages')
    ? {
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        content: [
          ...(text || calls.length === 0 ? [{ type: 'text', text }] : []),
          ...calls.map(({ id, name, input }) => ({ type: 'tool_use', id, name, input })),
        ],
        stop_reason: calls.length > 0 ? 'tool_use' : 'end_turn',
        usage: { input_tokens: scriptedUsage.input_tokens, output_tokens: scriptedUsage.output_tokens },
      }
    : {
        id: 'chatcmpl-1',
        object: 'chat.completion',
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: calls.length > 0 ? text || null : text,
              ...(calls.length > 0 && {
                tool_calls: calls.map(({ id, name, input }) => ({
                  id,
                  type: 'function',
                  function: { name, arguments: JSON.stringify(input) },
                })),
              }),
            },
            finish_reason: calls.length > 0 ? 'tool_calls' : 'stop',
          },
        ],
        usage: {
          prompt_tokens: scriptedUsage.input_tokens,
          completion_tokens: scriptedUsage.output_tokens,
          total_tokens: scriptedUsage.input_tokens + scriptedUsage.output_tokens,
        },
      };
}

export async function startScriptedModel(
  /** May answer later (a promise): a test can hold one call until another has arrived. */
  script: (call: ModelCall) => ScriptedAnswer | Promise<ScriptedAnswer>,
): Promise<ScriptedModel> {
  const calls: ModelCall[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    const respond = async () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
      const call: ModelCall = {
        path: request.url ?? '',
        headers: request.headers,
        body,
        prompt: promptOf(body),
      };
      calls.push(call);
      const known = call.path === '/v1/chat/completions' || call.path === '/v1/messages';
      const answer: ScriptedAnswer = known ? await script(call) : { status: 404, body: 'no such route' };
      const send = () => {
        if (response.destroyed) return;
        if (typeof answer === 'string' || !('status' in answer)) {
          const [text, calls] =
            typeof answer === 'string'
              ? [answer, []]
              : 'reply' in answer
                ? [answer.reply, []]
                : [answer.text ?? '', answer.tool_calls];
          response.writeHead(200, { 'content-type': 'application/json' });
          response.end(JSON.stringify(answerBody(call.path, text, calls)));
        } else {
          response.writeHead(answer.status, { 'content-type': 'application/json' });
          response.end(answer.body);
        }
      };
      const delay = typeof answer === 'string' || !('delay_ms' in answer) ? 0 : (answer.delay_ms ?? 0);
      if (delay > 0) setTimeout(send, delay);
      else send();
    };
    request.on('end', () => void respond());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
