/**
 * MCP test helpers over any connected official SDK Client: call a tool expecting success or a
 * tool error, and walk one whole continuity loop through the nine tools.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'vitest';

/** An initialize request as a raw client sends it (id 0). */
export const rawInitialize = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: {
    protocolVersion: LATEST_PROTOCOL_VERSION,
    capabilities: {},
    clientInfo: { name: 'raw', version: '0' },
  },
};

export const toolNames = [
  'create_work_contract',
  'handoff_current_work',
  'commit_handoff',
  'continue_handoff',
  'acknowledge_handoff',
  'record_task_outcome',
  'get_report',
  'get_work_continuity',
  'prepare_context',
] as const;

export const readTools = ['continue_handoff', 'get_report', 'get_work_continuity', 'prepare_context'];

export const noAuthorityPattern = /grants no tool, network, credential or execution authority/;

export const confirmed = {
  live_workspace: 'confirmed',
  capability: 'confirmed',
  authorization: 'confirmed',
} as const;

type Structured = Record<string, unknown> & { trust?: string };
interface SourceRef {
  scope_id: string;
  source_id: string;
  digest: string;
}
interface Stored {
  receipt: { source_ref: SourceRef };
  trust: string;
}

function textOf(result: Awaited<ReturnType<Client['callTool']>>): string {
  const [first] = result.content as { type: string; text?: string }[];
  expect(first?.type).toBe('text');
  return first!.text!;
}

/** A successful call: its structured content, which its text content repeats as JSON. */
export async function ok<T = Structured>(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<T> {
  const result = await client.callTool({ name, arguments: args });
  if (result.isError) throw new Error(`${name} failed: ${textOf(result)}`);
  const structured = result.structuredContent as Structured;
  expect(JSON.parse(textOf(result))).toEqual(structured);
  expect(structured.trust).toMatch(/^untrusted_(input|history|observation)$/);
  return structured as T;
}

export interface ToolError {
  readonly code: string;
  readonly message: string;
  readonly details: Record<string, unknown>;
  readonly text: string;
}

/** A call that must come back as a tool error (`isError: true`), not a protocol error. */
export async function fail(client: Client, name: string, args: Record<string, unknown>): Promise<ToolError> {
  const result = await client.callTool({ name, arguments: args });
  expect(result.isError).toBe(true);
  const { error } = result.structuredContent as { error: Omit<ToolError, 'text'> };
  const text = textOf(result);
  expect(text).toBe(`${error.code}: ${error.message}`);
  return { ...error, text };
}

/**
 * Contract, boundary, commit, continue latest, acknowledge the exact revision, an outcome linked
 * to that receipt, the report in both formats, continuity (covered) and prepared context.
 */
export async function runContinuityLoop(client: Client, scope_id: string): Promise<void> {
  const contract = await ok<Stored>(client, 'create_work_contract', {
    scope_id,
    source_id: 'contract-1',
    objective: 'Add safe auto-refresh to Handoff Report',
    completion_criteria: ['The switching test passes'],
    authorization_notes: ['May push to the feature branch'],
  });
  expect(contract).toMatchObject({
    record: { authorization_notes: ['May push to the feature branch'] },
    trust: 'untrusted_input',
  });

  const prepared = await ok<{ digest: string }>(client, 'handoff_current_work', {
    scope_id,
    source_id: 'boundary-1',
    objective: 'Add safe auto-refresh to Handoff Report',
    current_state: [{ text: 'Polling is implemented', basis: 'declared' }],
    disposition: 'continue',
    next_action: { text: 'Fix the frozen selection comparison', basis: 'declared' },
  });
  expect(prepared).toMatchObject({ prepared_handoff: { base_revision: 0 }, trust: 'untrusted_input' });

  const committed = await ok(client, 'commit_handoff', {
    scope_id,
    prepared: prepared.digest,
    expected_head: 0,
  });
  expect(committed).toEqual({
    result: {
      scope_id,
      revision: 1,
      prepared_digest: prepared.digest,
      committed_at: expect.any(String) as string,
    },
    trust: 'untrusted_history',
  });

  const resolved = await ok<{ selection: { revision: number } }>(client, 'continue_handoff', {
    scope_id,
    selection: 'latest',
  });
  const exact = { kind: 'exact', revision: 1, digest: prepared.digest };
  expect(resolved).toMatchObject({ selection: exact, evidence: 'available', trust: 'untrusted_history' });

  const acknowledged = await ok<Stored>(client, 'acknowledge_handoff', {
    scope_id,
    source_id: 'receipt-1',
    target: { exact: resolved.selection.revision },
    status: 'accepted',
    receiver_checks: confirmed,
    receiver: 'agent-b',
  });
  expect(acknowledged).toMatchObject({ record: { target: exact }, trust: 'untrusted_observation' });

  const outcome = await ok<Stored>(client, 'record_task_outcome', {
    scope_id,
    source_id: 'outcome-1',
    objective: 'Add safe auto-refresh',
    status: 'partial',
    summary: 'Auto-refresh works; the docs build has no result yet',
    handoff_receipt_ref: acknowledged.receipt.source_ref,
    checks: [{ name: 'docs build', status: 'timed_out', basis: 'declared' }],
  });
  expect(outcome).toMatchObject({
    record: { handoff_receipt_ref: acknowledged.receipt.source_ref, checks: [{ status: 'timed_out' }] },
    trust: 'untrusted_observation',
  });

  expect(await ok(client, 'get_report', { scope_id })).toMatchObject({
    scope_id,
    revision_count: 1,
    current: { revision: 1, digest: prepared.digest },
    trust: 'untrusted_history',
  });
  const markdown = await ok<{ result: { markdown: string } }>(client, 'get_report', {
    scope_id,
    format: 'markdown',
  });
  expect(markdown).toMatchObject({ trust: 'untrusted_history' });
  expect(markdown.result.markdown).toContain('Fix the frozen selection comparison');
  expect(await ok(client, 'get_report', {})).toMatchObject({
    result: {
      schema: 'baton.handoff-report/v1',
      workstreams: expect.arrayContaining([expect.objectContaining({ scope_id })]) as unknown[],
    },
    trust: 'untrusted_history',
  });

  expect(await ok(client, 'get_work_continuity', { scope_id })).toMatchObject({
    result: {
      scope_id,
      transfer_state: 'accepted',
      outcome_state: 'covered',
      active_receipt_ref: acknowledged.receipt.source_ref,
      covering_outcome_ref: outcome.receipt.source_ref,
    },
    trust: 'untrusted_history',
  });

  expect(await ok(client, 'prepare_context', { scope_id })).toMatchObject({
    result: {
      scope_id,
      handoff: { revision: 1, digest: prepared.digest, trust: 'untrusted_history' },
      work_contract: { source_ref: contract.receipt.source_ref, trust: 'untrusted_input' },
    },
    trust: 'untrusted_history',
  });
}
