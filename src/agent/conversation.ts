/**
 * The agent loop's conversation, rebuilt from the session's entries each turn (docs/agent.md):
 * a person's or Baton's `user_message`, each model turn's `assistant_message` with the
 * `tool_call`s after it, and each call's `tool_result`. Nothing is kept in memory between turns,
 * so a run resumed in another process, or read back from a JSONL export, gives the model the same
 * conversation. Pure: entries in, messages out.
 */
import { z } from 'zod';
import { sessionEntrySchemas } from '../core/work/session.ts';
import type { ChatMessage, ChatToolCall } from './models.ts';

export interface ConversationEntry {
  readonly type: string;
  readonly content: unknown;
}

/** The kinds of entry the conversation is built from. */
export const conversationKinds = ['user_message', 'assistant_message', 'tool_call', 'tool_result'];

function cut(text: string, chars: number): string {
  return text.length > chars ? `${text.slice(0, chars)}\n[cut: ${text.length} characters in all]` : text;
}

/**
 * The messages of the entries, in order. A tool call's result follows its turn; a result with no
 * call of the conversation before it (the verifier's own `baton.verify.*` output) is not part
 * of it, and a call whose result never came (the run stopped between them) is answered with an
 * error result saying so, as every protocol needs each call answered. Tool output is cut to
 * `output_chars`.
 */
export function conversationOf(entries: Iterable<ConversationEntry>, output_chars: number): ChatMessage[] {
  const messages: ChatMessage[] = [];
  let turn: { text: string; tool_calls: ChatToolCall[] } | null = null;
  let open = new Map<string, string>();
  const closeTurn = () => {
    if (turn === null) return;
    messages.push({ role: 'assistant', text: turn.text, tool_calls: turn.tool_calls });
    turn = null;
  };
  const answerOpen = () => {
    for (const [tool_use_id, name] of open) {
      messages.push({
        role: 'tool',
        tool_use_id,
        name,
        output: 'no result was recorded: the run stopped before this call finished',
        is_error: true,
      });
    }
    open = new Map();
  };
  for (const entry of entries) {
    if (entry.type === 'assistant_message') {
      closeTurn();
      answerOpen();
      const parsed = sessionEntrySchemas.assistant_message.safeParse(entry.content);
      turn = { text: parsed.success ? parsed.data.text : '', tool_calls: [] };
    } else if (entry.type === 'tool_call') {
      const parsed = sessionEntrySchemas.tool_call.safeParse(entry.content);
      if (!parsed.success || turn === null) continue;
      const { tool_use_id, tool, input } = parsed.data;
      turn.tool_calls.push({ id: tool_use_id, name: tool, input });
      open.set(tool_use_id, tool);
    } else if (entry.type === 'tool_result') {
      const parsed = sessionEntrySchemas.tool_result.safeParse(entry.content);
      if (!parsed.success || !open.has(parsed.data.tool_use_id)) continue;
      closeTurn();
      open.delete(parsed.data.tool_use_id);
      messages.push({
        role: 'tool',
        tool_use_id: parsed.data.tool_use_id,
        name: parsed.data.tool,
        output: cut(parsed.data.output, output_chars),
        is_error: parsed.data.is_error,
      });
    } else if (entry.type === 'user_message') {
      const parsed = sessionEntrySchemas.user_message.safeParse(entry.content);
      if (!parsed.success) continue;
      closeTurn();
      answerOpen();
      messages.push({ role: 'user', text: parsed.data.text });
    }
  }
  closeTurn();
  answerOpen();
  return messages;
}

const fencedJson = /```(?:json)?\s*\n([\s\S]*?)\n```/;

/**
 * The JSON object a model answered a contract with: the whole reply, else its fenced JSON block,
 * else the text from its first `{` to its last `}`. null when none of them parses as an object.
 * The runtime validates the object itself afterwards (createContract); nothing here trusts it.
 */
export function readAuthoredContract(reply: string): Record<string, unknown> | null {
  const candidates = [reply.trim()];
  const fenced = fencedJson.exec(reply);
  if (fenced) candidates.push(fenced[1]!.trim());
  const first = reply.indexOf('{');
  const last = reply.lastIndexOf('}');
  if (first !== -1 && last > first) candidates.push(reply.slice(first, last + 1));
  for (const candidate of candidates) {
    try {
      const value: unknown = JSON.parse(candidate);
      const object = z.record(z.string(), z.unknown()).safeParse(value);
      if (object.success) return object.data;
    } catch {
      // Not this one.
    }
  }
  return null;
}
