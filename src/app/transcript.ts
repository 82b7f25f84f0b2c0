/**
 * A session's conversation as people read it (docs/agent.md, "Reading a run"): the person's
 * and Baton's messages, the model's turns, each tool call with its input and result, and what
 * each model request cost, in ledger order. The newest `transcriptLimit` entries; long texts are
 * cut. Everything in it was scrubbed when it was stored, and it is history, never instruction:
 * the answer says so (`trust`). Progress is the work snapshot's, never this.
 */
import { z } from 'zod';
import { parseRecord } from '../core/records.ts';
import { sessionIdSchema } from '../core/ledger/names.ts';
import { scrubSecrets } from '../core/secrets.ts';
import { clipText } from '../core/text.ts';
import { goalAuditPurpose, goalAuditSchema } from '../core/work/goal.ts';
import { verdicts } from '../core/work/model.ts';
import { sessionEntrySchemas } from '../core/work/session.ts';
import type { AppDeps } from './deps.ts';
import { sessionStream } from './work.ts';

/** The most entries one transcript holds: the newest. */
export const transcriptLimit = 500;
/** The most characters of one text or tool output shown. */
export const transcriptTextChars = 8000;

const base = { position: z.number().int().min(1), recorded_at: z.string() };
export const transcriptEntrySchema = z.discriminatedUnion('type', [
  z.object({ ...base, type: z.literal('message'), author: z.enum(['person', 'baton']), text: z.string() }),
  z.object({ ...base, type: z.literal('model'), text: z.string() }),
  z.object({
    ...base,
    type: z.literal('tool_call'),
    tool_use_id: z.string(),
    tool: z.string(),
    /** The call's input as JSON text, cut. */
    input: z.string(),
  }),
  z.object({
    ...base,
    type: z.literal('tool_result'),
    tool_use_id: z.string(),
    tool: z.string(),
    is_error: z.boolean(),
    output: z.string(),
  }),
  z.object({
    ...base,
    type: z.literal('model_request'),
    model: z.string(),
    attempts: z.number().int().min(0),
    duration_ms: z.number().min(0),
    input_tokens: z.number().int().min(0).nullable(),
    output_tokens: z.number().int().min(0).nullable(),
  }),
  /** Goal mode: the judge's audit of the session's goal (docs/agent.md). */
  z.object({
    ...base,
    type: z.literal('goal_audit'),
    verdict: z.enum(verdicts),
    reason: z.string(),
  }),
]);
export type TranscriptEntry = z.output<typeof transcriptEntrySchema>;

export const transcriptSchema = z.object({
  session_id: z.string(),
  /** The session's goal (goal mode), or null. */
  goal: z.string().nullable(),
  entries: z.array(transcriptEntrySchema).readonly(),
  /** Conversation entries in the whole session; more than `entries` holds when older ones were left out. */
  total: z.number().int().min(0),
  trust: z.literal('untrusted_history'),
});
export type Transcript = z.output<typeof transcriptSchema>;

export const transcriptFields = { session_id: sessionIdSchema };

const kinds = ['session_header', 'user_message', 'assistant_message', 'tool_call', 'tool_result', 'receipt'];

const modelTurn = z.object({
  model: z.string().default(''),
  provider: z.string().default(''),
  attempts: z.number().int().min(0).catch(0),
  duration_ms: z.number().min(0).catch(0),
  input_tokens: z.number().int().min(0).nullable().catch(null),
  output_tokens: z.number().int().min(0).nullable().catch(null),
});

/** One entry as the transcript shows it, or null for an entry that is not part of it. */
function shown(entry: { type: string; content: unknown; position: number; recorded_at: string }) {
  const at = { position: entry.position, recorded_at: entry.recorded_at };
  // Scrubbed again as it is read, as the control block is: what a run stored is served to every
  // reader of the project, and a secret its environment did not name may still look like one.
  const cut = (text: string) => clipText(scrubSecrets(text).text, transcriptTextChars);
  switch (entry.type) {
    case 'user_message': {
      const parsed = sessionEntrySchemas.user_message.safeParse(entry.content);
      return parsed.success
        ? { ...at, type: 'message' as const, author: parsed.data.author, text: cut(parsed.data.text) }
        : null;
    }
    case 'assistant_message': {
      const parsed = sessionEntrySchemas.assistant_message.safeParse(entry.content);
      // A turn that only called tools says nothing: its calls are the entries that follow.
      return parsed.success && parsed.data.text.trim() !== ''
        ? { ...at, type: 'model' as const, text: cut(parsed.data.text) }
        : null;
    }
    case 'tool_call': {
      const parsed = sessionEntrySchemas.tool_call.safeParse(entry.content);
      if (!parsed.success) return null;
      const { tool_use_id, tool, input } = parsed.data;
      return { ...at, type: 'tool_call' as const, tool_use_id, tool, input: cut(JSON.stringify(input)) };
    }
    case 'tool_result': {
      const parsed = sessionEntrySchemas.tool_result.safeParse(entry.content);
      if (!parsed.success) return null;
      const { tool_use_id, tool, is_error, output } = parsed.data;
      return { ...at, type: 'tool_result' as const, tool_use_id, tool, is_error, output: cut(output) };
    }
    case 'receipt': {
      const parsed = sessionEntrySchemas.receipt.safeParse(entry.content);
      if (!parsed.success) return null;
      if (parsed.data.purpose === goalAuditPurpose) {
        const audit = goalAuditSchema.safeParse(parsed.data.details);
        return audit.success
          ? {
              ...at,
              type: 'goal_audit' as const,
              verdict: audit.data.verdict,
              reason: cut(audit.data.reason),
            }
          : null;
      }
      if (parsed.data.purpose !== 'model_turn') return null;
      const turn = modelTurn.safeParse(parsed.data.details);
      if (!turn.success) return null;
      const { provider, model, ...rest } = turn.data;
      return {
        ...at,
        type: 'model_request' as const,
        model: provider ? `${provider}/${model}` : model,
        ...rest,
      };
    }
    default:
      return null;
  }
}

/** The session's transcript: its newest conversation entries (not_found for no such session). */
export async function readTranscript(deps: AppDeps, project_id: string, input: unknown): Promise<Transcript> {
  const { session_id } = parseRecord(z.strictObject(transcriptFields), input, 'transcript request');
  const stream = sessionStream(project_id, session_id);
  const { head } = await deps.store.getStream(stream);
  const kept: TranscriptEntry[] = [];
  let total = 0;
  let goal: string | null = null;
  for await (const entry of deps.store.readStream(stream, { to: head, kinds })) {
    if (entry.type === 'session_header') {
      const header = sessionEntrySchemas.session_header.safeParse(entry.content);
      if (header.success && goal === null)
        goal = clipText(scrubSecrets(header.data.goal ?? '').text, transcriptTextChars) || null;
      continue;
    }
    const item = shown(entry);
    if (item === null) continue;
    total += 1;
    kept.push(item);
    if (kept.length > transcriptLimit) kept.shift();
  }
  return { session_id, goal, entries: kept, total, trust: 'untrusted_history' };
}
