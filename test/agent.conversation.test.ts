/**
 * The agent loop's conversation as rebuilt from session entries (src/agent/conversation.ts), and
 * the contract read out of an authoring answer: pure functions, so every case is exact.
 */
import { describe, expect, it } from 'vitest';
import { conversationOf, readAuthoredContract } from '../src/agent/conversation.ts';

const user = (text: string, author = 'person') => ({
  type: 'user_message',
  content: { schema: 'baton.user-message/v1', text, author },
});
const said = (text: string) => ({
  type: 'assistant_message',
  content: { schema: 'baton.assistant-message/v1', text },
});
const call = (tool_use_id: string, tool: string, input: unknown = {}) => ({
  type: 'tool_call',
  content: { schema: 'baton.tool-call/v1', tool_use_id, tool, input },
});
const result = (tool_use_id: string, tool: string, output: string, is_error = false) => ({
  type: 'tool_result',
  content: { schema: 'baton.tool-result/v1', tool_use_id, tool, output, is_error },
});

describe('conversationOf', () => {
  it('groups each turn with its calls, follows them with their results, and keeps Baton’s own messages', () => {
    expect(
      conversationOf(
        [
          { type: 'session_header', content: {} },
          user('fix it'),
          said('Looking.'),
          call('c1', 'read_file', { path: 'a' }),
          call('c2', 'shell', { command: 'ls' }),
          result('c1', 'read_file', 'A'),
          result('c2', 'shell', 'exit 1', true),
          said(''),
          user('Baton: you cannot stop yet.', 'baton'),
        ],
        100,
      ),
    ).toEqual([
      { role: 'user', text: 'fix it' },
      {
        role: 'assistant',
        text: 'Looking.',
        tool_calls: [
          { id: 'c1', name: 'read_file', input: { path: 'a' } },
          { id: 'c2', name: 'shell', input: { command: 'ls' } },
        ],
      },
      { role: 'tool', tool_use_id: 'c1', name: 'read_file', output: 'A', is_error: false },
      { role: 'tool', tool_use_id: 'c2', name: 'shell', output: 'exit 1', is_error: true },
      { role: 'assistant', text: '', tool_calls: [] },
      { role: 'user', text: 'Baton: you cannot stop yet.' },
    ]);
  });

  it('leaves out results no call of the conversation asked for, answers a call whose result never came, and cuts long output', () => {
    const messages = conversationOf(
      [
        user('go'),
        result('verify-1', 'baton.verify.shell', 'verifier output'),
        said(''),
        call('c1', 'shell', { command: 'sleep 100' }),
        said('again'),
        call('c2', 'read_file', { path: 'big' }),
        result('c2', 'read_file', 'x'.repeat(50)),
      ],
      10,
    );
    expect(messages).toEqual([
      { role: 'user', text: 'go' },
      {
        role: 'assistant',
        text: '',
        tool_calls: [{ id: 'c1', name: 'shell', input: { command: 'sleep 100' } }],
      },
      {
        role: 'tool',
        tool_use_id: 'c1',
        name: 'shell',
        output: 'no result was recorded: the run stopped before this call finished',
        is_error: true,
      },
      {
        role: 'assistant',
        text: 'again',
        tool_calls: [{ id: 'c2', name: 'read_file', input: { path: 'big' } }],
      },
      {
        role: 'tool',
        tool_use_id: 'c2',
        name: 'read_file',
        output: `${'x'.repeat(10)}\n[cut: 50 characters in all]`,
        is_error: false,
      },
    ]);
  });
});

describe('readAuthoredContract', () => {
  it('reads the whole reply, a fenced block, or the text between the first and last brace', () => {
    expect(readAuthoredContract('{"objective":"a"}')).toEqual({ objective: 'a' });
    expect(readAuthoredContract('Sure:\n```json\n{"objective":"b","items":[{"x":{}}]}\n```\nDone.')).toEqual({
      objective: 'b',
      items: [{ x: {} }],
    });
    expect(readAuthoredContract('The contract is {"objective":"c"} as asked.')).toEqual({ objective: 'c' });
  });

  it('is null for no object at all: prose, an array, broken JSON', () => {
    expect(readAuthoredContract('I would rather not.')).toBeNull();
    expect(readAuthoredContract('[1, 2]')).toBeNull();
    expect(readAuthoredContract('{"objective": "a",')).toBeNull();
  });
});
