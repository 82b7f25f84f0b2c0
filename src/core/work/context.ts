/**
 * The model's view of a session: the message history (compacted to the latest messages) and
 * the request tail. The work control block lives only in the tail, rebuilt from the ledger on
 * every turn: compaction never summarises it, never counts it as dropped history, and never
 * duplicates it; it disappears once the contract is terminal.
 */
import { renderControlBlock } from './control.ts';
import { WorkProjector, type ProjectableEntry } from './projector.ts';
import { sessionEntrySchemas } from './session.ts';

export interface ModelMessage {
  readonly role: 'user' | 'assistant';
  readonly text: string;
  readonly position: number;
}

export interface ModelContext {
  readonly history: readonly ModelMessage[];
  /** Messages compaction left out of history. */
  readonly dropped: number;
  /** Sections rendered for this turn only: the work control block while a contract is live. */
  readonly tail: readonly string[];
}

export function deriveModelContext(
  entries: Iterable<ProjectableEntry>,
  options: { readonly keep_messages: number },
): ModelContext {
  const projector = new WorkProjector();
  const messages: ModelMessage[] = [];
  for (const entry of entries) {
    if (entry.type === 'user_message' || entry.type === 'assistant_message') {
      const parsed = sessionEntrySchemas[entry.type].safeParse(entry.content);
      if (parsed.success) {
        messages.push({
          role: entry.type === 'user_message' ? 'user' : 'assistant',
          text: parsed.data.text,
          position: entry.position,
        });
      }
      continue;
    }
    projector.applyEntry(entry);
  }
  const keep = Math.max(0, options.keep_messages);
  const history = messages.slice(Math.max(0, messages.length - keep));
  const block = renderControlBlock(projector.projection());
  return { history, dropped: messages.length - history.length, tail: block === null ? [] : [block] };
}
