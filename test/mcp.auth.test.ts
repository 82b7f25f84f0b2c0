/**
 * The authorization matrix over every MCP tool the server lists, at /mcp of `baton serve`'s app:
 * a read-only token's call of every tool that does not only read is a `forbidden` tool error; a
 * token of another project calling every tool with this project's ids gets `not_found`, a refused
 * citation or an empty view, never this project's text; nothing of this project is written.
 * The tools come from tools/list, so a new tool without a probe here fails the matrix.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access -- tool results are parsed JSON, read only in assertions */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  inputs,
  project_id,
  scope_id,
  seedWorkstream,
  snapshotHeads,
  startHarness,
  type HttpHarness,
  type Workstream,
} from './helpers/http.ts';
import { backends } from './helpers/stores.ts';
import { contractBody, revisedBody } from './helpers/work-surface.ts';

const session_id = 's1';

/** A valid call of each tool naming this project's objects (fresh ids for writes). */
function probes(w: Workstream): Record<string, Record<string, unknown>> {
  return {
    create_work_contract: inputs.contract('contract-probe', w.log),
    handoff_current_work: inputs.boundary('boundary-probe', w.log),
    commit_handoff: { scope_id, prepared: w.prepared_digest, expected_head: 0 },
    continue_handoff: { scope_id, selection: { exact: w.revision } },
    acknowledge_handoff: inputs.accept('receipt-probe', w.revision),
    record_task_outcome: inputs.outcome('outcome-probe', w.receipt, w.log),
    get_report: { scope_id },
    get_work_continuity: { scope_id },
    prepare_context: { scope_id },
    work_get: { session_id },
    work_transition: { session_id, item_id: 'code', revision: 1, to: 'skipped' },
    work_revise: { session_id, previous_revision: 1, ...revisedBody },
    work_attach_evidence: {
      session_id,
      item_id: 'code',
      revision: 1,
      evidence: { type: 'child_session', session_id: 'x' },
    },
    work_request_input: { session_id, revision: 1, question: 'which database?' },
    work_verify: { session_id },
    work_end: { session_id, status: 'aborted' },
  };
}

interface Called {
  readonly isError: boolean;
  readonly text: string;
  readonly structured: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

for (const backend of backends) {
  describe(`MCP authorization matrix over every listed tool on ${backend.name}`, () => {
    let h: HttpHarness;
    let w: Workstream;
    let before: Record<string, number>;
    const clients: Client[] = [];

    async function connect(token: string): Promise<Client> {
      const transport = new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      });
      const client = new Client({ name: 'baton-matrix', version: '0.0.0' });
      await client.connect(transport);
      clients.push(client);
      return client;
    }

    async function call(client: Client, name: string, args: Record<string, unknown>): Promise<Called> {
      const result = await client.callTool({ name, arguments: args });
      const [first] = result.content as { type: string; text?: string }[];
      return {
        isError: result.isError === true,
        text: first?.text ?? '',
        structured: result.structuredContent,
      };
    }

    beforeEach(async () => {
      h = await startHarness(backend);
      w = await seedWorkstream(h.call);
      for (const [path, body] of [
        ['/v1/sessions', { session_id }],
        [`/v1/sessions/${session_id}/work/contracts`, contractBody],
      ] as const) {
        const reply = await h.call('POST', path, { body });
        expect([path, reply.status], reply.text).toEqual([path, 200]);
      }
      before = await snapshotHeads(h.deps.store, project_id);
    });
    afterEach(async () => {
      await Promise.all(clients.splice(0).map((client) => client.close()));
      await h.dispose();
    });

    it('has a probe for every tool the server lists', async () => {
      const { tools } = await (await connect(h.tokens.writer)).listTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual(Object.keys(probes(w)).sort());
    });

    it('refuses every tool that does not only read to a read-only token, and runs every read', async () => {
      const client = await connect(h.tokens.reader);
      const { tools } = await client.listTools();
      const writes = tools.filter((tool) => tool.annotations?.readOnlyHint !== true);
      expect(writes.length).toBe(11);
      for (const tool of tools) {
        const result = await call(client, tool.name, probes(w)[tool.name]!);
        if (writes.includes(tool)) {
          expect([tool.name, result.isError, result.structured?.error?.code], result.text).toEqual([
            tool.name,
            true,
            'forbidden',
          ]);
        } else {
          expect([tool.name, result.isError], result.text).toEqual([tool.name, false]);
        }
      }
      expect(await snapshotHeads(h.deps.store, project_id)).toEqual(before);
    });

    it("never shows or changes another project's objects: not_found, a refused citation, or an empty view", async () => {
      const client = await connect(h.tokens.rival);
      const { tools } = await client.listTools();
      const outcomes: Record<string, string> = {};
      const secrets = ['acme-private', w.log.digest, w.prepared_digest, w.receipt.digest, w.outcome.digest];
      for (const tool of tools) {
        const input = probes(w)[tool.name]!;
        const result = await call(client, tool.name, input);
        for (const secret of secrets.filter((value) => !JSON.stringify(input).includes(value))) {
          expect(result.text, tool.name).not.toContain(secret);
        }
        const code = result.structured?.error?.code as string | undefined;
        const view = (result.structured?.result ?? result.structured) as Record<string, unknown> | undefined;
        outcomes[tool.name] = !result.isError
          ? view?.handoff === null ||
            view?.revision_count === 0 ||
            (view?.timeline as unknown[] | undefined)?.length === 0 ||
            (view?.workstreams as unknown[] | undefined)?.length === 0
            ? 'empty'
            : `answered ${result.text.slice(0, 200)}`
          : code === 'not_found'
            ? 'not_found'
            : /citation unavailable: missing|is missing/.test(result.text)
              ? 'refused_citation'
              : `${code}: ${result.text.slice(0, 200)}`;
      }
      expect(outcomes).toEqual({
        create_work_contract: 'refused_citation',
        handoff_current_work: 'refused_citation',
        commit_handoff: 'not_found',
        continue_handoff: 'not_found',
        acknowledge_handoff: 'not_found',
        record_task_outcome: 'refused_citation',
        get_report: 'empty',
        get_work_continuity: 'empty',
        prepare_context: 'empty',
        work_get: 'not_found',
        work_transition: 'not_found',
        work_revise: 'not_found',
        work_attach_evidence: 'not_found',
        work_request_input: 'not_found',
        work_verify: 'not_found',
        work_end: 'not_found',
      });
      expect(await snapshotHeads(h.deps.store, project_id)).toEqual(before);
    });
  });
}
