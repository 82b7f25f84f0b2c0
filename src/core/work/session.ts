/**
 * The entries of a session stream: its header (with lineage), messages, tool calls and
 * results, work events, receipts, workspace checkpoints and the terminal marker. Each entry's
 * metadata.kind is its type, so a projection reads only the kinds it needs through the index.
 * Records are loose and versioned: fields added later have defaults, unknown fields are kept.
 */
import { z } from 'zod';
import { digestPattern, type Digest } from '../canonical.ts';
import { jsonObjectSchema, jsonValueSchema } from '../json.ts';
import { scopeIdSchema, storedSessionIdSchema } from '../ledger/names.ts';
import { sourceRefSchema } from '../ledger/source.ts';
import { recordSchema } from '../records.ts';
import { workEventSchema, workIdSchema } from './model.ts';

export const terminalStatuses = ['completed', 'failed', 'aborted', 'max_turns'] as const;
export type TerminalStatus = (typeof terminalStatuses)[number];

export const workModes = ['direct', 'managed', 'auto'] as const;
export type WorkMode = (typeof workModes)[number];

const text = z.string().max(64 * 1024);

/** The longest goal a session takes. */
export const goalChars = 8000;

/** What a session may do: contracts are validated against it (no escalation beyond it). */
export const sessionCapabilitiesSchema = z.looseObject({
  write: z.boolean().default(true),
  tools: z.array(workIdSchema).max(256).default([]),
  flows: z.array(workIdSchema).max(256).default([]),
  capabilities: z.array(workIdSchema).max(256).default([]),
  owners: z
    .array(z.enum(['parent_agent', 'worker', 'flow', 'tool', 'human']))
    .default(['parent_agent', 'worker', 'flow', 'tool', 'human']),
});
export type SessionCapabilities = z.output<typeof sessionCapabilitiesSchema>;

/** Where an interrupted bound session's Prepared Handoff is: its workstream, boundary and digest. */
export const interruptionHandoffSchema = z.looseObject({
  scope_id: scopeIdSchema,
  boundary_ref: sourceRefSchema,
  prepared_digest: z.string().regex(digestPattern) as z.ZodType<Digest>,
  /** The committed head it was prepared on: commit_handoff's expected_head. */
  base_revision: z.number().int().min(0),
});
export type InterruptionHandoff = z.output<typeof interruptionHandoffSchema>;

/**
 * The purpose of the `receipt` entry that records it, after the terminal marker: its details are
 * an InterruptionHandoff, and the projection reads the first one as the marker's `handoff`.
 */
export const interruptionHandoffPurpose = 'interruption_handoff';

export const sessionEntrySchemas = {
  session_header: recordSchema('baton.session-header/v1', {
    session_id: storedSessionIdSchema,
    parent_session_id: storedSessionIdSchema.nullable().default(null),
    contract_id: workIdSchema.nullable().default(null),
    work_item_id: workIdSchema.nullable().default(null),
    work_mode: z.enum(workModes).default('direct'),
    /** Absolute path of the workspace the session works in, if it has one. */
    workspace: z.string().max(4096).nullable().default(null),
    capabilities: sessionCapabilitiesSchema.default(sessionCapabilitiesSchema.parse({})),
    /**
     * The Workstream the session is bound to: each of its contracts that ends records a Task
     * Outcome there (docs/managed-work.md, "Bound to a workstream"). Written only when set, so
     * a header written before it existed reads, and is started again, unchanged.
     */
    scope_id: scopeIdSchema.optional(),
    /** The accepted receipt the session took the work under: its outcomes name it, to cover it. */
    handoff_receipt_ref: sourceRefSchema.optional(),
    /**
     * Goal mode (docs/agent.md, "Goal mode"): what must be true when the session ends. Baton's
     * agent loop ends it `completed` only after the read-only judge's goal audit passes. Written
     * only when set, never inherited by a child.
     */
    goal: z.string().min(1).max(goalChars).optional(),
  }),
  user_message: recordSchema('baton.user-message/v1', {
    text,
    /**
     * Who said it: a person, or Baton itself telling its own agent loop why it may not stop yet
     * (docs/agent.md). Either way it is input to the model, never an instruction with authority.
     */
    author: z.enum(['person', 'baton']).default('person'),
  }),
  assistant_message: recordSchema('baton.assistant-message/v1', { text }),
  tool_call: recordSchema('baton.tool-call/v1', {
    tool_use_id: z.string().min(1).max(200),
    tool: z.string().min(1).max(200),
    input: jsonValueSchema.default(null),
  }),
  tool_result: recordSchema('baton.tool-result/v1', {
    tool_use_id: z.string().min(1).max(200),
    tool: z.string().min(1).max(200),
    is_error: z.boolean().default(false),
    output: text.default(''),
  }),
  work_event: workEventSchema,
  receipt: recordSchema('baton.receipt/v1', {
    receipt_id: z.string().min(1).max(200),
    purpose: z.string().max(200).default(''),
    details: jsonObjectSchema.default({}),
  }),
  checkpoint: recordSchema('baton.checkpoint/v1', {
    /** The workspace's content hash after a mutation. */
    checkpoint: z.string().min(1).max(200),
    label: z.string().max(400).default(''),
  }),
  terminal: recordSchema('baton.terminal/v1', {
    status: z.enum(terminalStatuses),
    reason: z.string().max(4000).default(''),
  }),
} as const;

export type SessionEntryType = keyof typeof sessionEntrySchemas;
export const sessionEntryTypes = Object.keys(sessionEntrySchemas) as SessionEntryType[];
export type SessionEntryContent<T extends SessionEntryType> = z.output<(typeof sessionEntrySchemas)[T]>;
export type SessionHeader = SessionEntryContent<'session_header'>;

export function isSessionEntryType(type: string): type is SessionEntryType {
  return Object.hasOwn(sessionEntrySchemas, type);
}
