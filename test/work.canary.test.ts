/**
 * Secret canaries end to end ("no secret in projection, evidence or responses"): unique fake
 * secrets are planted in the server's environment, in a workspace file, in a file under the real
 * $HOME and in a command's output (a GitHub-format token the command prints). A shell criterion
 * reads them all and fails; verification runs against the store a real server serves, while a
 * subscriber holds the session's event stream and every request is logged at trace level with
 * its headers. Then the ledger, the projection over HTTP, the SSE frames, the log lines and the
 * MCP results (over Streamable HTTP, with the official client) are searched: zero hits, while the
 * stored output shows the redaction marker, so the output was there and was scrubbed.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportStream } from '../src/app/ledger.ts';
import { verifyWork } from '../src/app/verify.ts';
import { sessionStream } from '../src/app/work.ts';
import { probeSandbox } from '../src/agent/sandbox.ts';
import { startHarness, project_id, traceLogging, type HttpHarness } from './helpers/http.ts';
import { backends } from './helpers/stores.ts';
import { openSse, type SseConnection } from './helpers/work-surface.ts';

const random = () => randomBytes(12).toString('hex');

for (const backend of backends) {
  describe(`secret canaries through a running server on ${backend.name}`, () => {
    const envName = `BATON_CANARY_${random().toUpperCase()}`;
    const envCanary = `zz-env-canary-${random()}`;
    const fileCanary = `zz-file-canary-${random()}`;
    const homeCanary = `zz-home-canary-${random()}`;
    // Printed by the command, never written in the contract: only its output holds it.
    const outputCanary = `ghp_${random()}${random()}`.slice(0, 40);
    const canaries = { envCanary, fileCanary, homeCanary, outputCanary };
    const lines: string[] = [];
    let h: HttpHarness;
    let workspace: string;
    let homeFile: string;
    let sse: SseConnection | undefined;

    beforeAll(async () => {
      process.env[envName] = envCanary;
      workspace = mkdtempSync(join(tmpdir(), 'baton-canary-'));
      execFileSync('git', ['init', '-q', workspace]);
      // The file canary is a secret assignment, the env canary's value appears in the file too.
      writeFileSync(join(workspace, 'config.env'), `API_TOKEN=${fileCanary}\nCOPY=${envCanary}\n`);
      homeFile = join(homedir(), `.baton-canary-${random()}`);
      writeFileSync(homeFile, `${homeCanary}\n`);
      h = await startHarness(backend, { ...traceLogging(lines), workspaceRoots: [workspace] });
    });

    afterAll(async () => {
      sse?.close();
      await h?.dispose();
      delete process.env[envName];
      rmSync(workspace, { recursive: true, force: true });
      rmSync(homeFile, { force: true });
    });

    // Needs the bubblewrap sandbox, as every shell criterion does (CI installs it).
    it('finds no canary in the ledger, the projection, the SSE events, the logs or the MCP results', async () => {
      expect(await probeSandbox()).toEqual({ available: true });
      const post = async (path: string, body: unknown) => {
        const reply = await h.call('POST', path, { body });
        expect(reply.status, reply.text).toBe(200);
        return reply;
      };
      await post('/v1/sessions', { session_id: 's1', workspace, work_mode: 'managed' });
      sse = await openSse(h.url, '/v1/sessions/s1/events', { authorization: `Bearer ${h.tokens.writer}` });
      expect(sse.status).toBe(200);

      const command = [
        'cat config.env',
        `echo "env=$${envName}"`,
        `cat ${JSON.stringify(homeFile)}`,
        // The token is assembled at run time, so only the output carries it.
        `printf 'token %s%s\\n' ghp_ ${JSON.stringify(outputCanary.slice(4))}`,
        'env',
        'exit 1',
      ].join('; ');
      await post('/v1/sessions/s1/work/contracts', {
        contract_id: 'leaky',
        objective: 'prove nothing leaks',
        criteria: [
          { criterion_id: 'leak', statement: 'prints secrets', kind: { type: 'shell', command } },
          {
            criterion_id: 'has-token',
            statement: 'the config names a token',
            kind: { type: 'file_contains', path: 'config.env', pattern: 'API_TOKEN=' },
          },
        ],
        items: [{ item_id: 'a', title: 'A', criterion_ids: ['leak', 'has-token'] }],
      });
      // The agent moves its item over MCP (a person may not start an agent's item).
      const mcp = new Client({ name: 'canary-test', version: '0.0.0' });
      await mcp.connect(
        new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), {
          requestInit: { headers: { Authorization: `Bearer ${h.tokens.writer}` } },
        }),
      );
      const mcpResults = [];
      for (const to of ['running', 'ready_for_verification']) {
        const result = await mcp.callTool({
          name: 'work_transition',
          arguments: { session_id: 's1', revision: 1, item_id: 'a', to },
        });
        expect(result.isError, JSON.stringify(result)).toBeFalsy();
        mcpResults.push(result);
      }

      const report = await verifyWork(h.deps, project_id, { session_id: 's1' });
      expect(report.verdicts.map((v) => [v.criterion_id, v.verdict])).toEqual([
        ['leak', 'failed'],
        ['has-token', 'passed'],
      ]);

      const snapshot = await h.call('GET', '/v1/sessions/s1/work');
      expect(snapshot.status).toBe(200);

      let ledger = '';
      await exportStream(h.deps, sessionStream(project_id, 's1'), (chunk) => {
        ledger += chunk;
      });
      // Every work event of the ledger arrives on the stream before it is searched.
      const workEvents = ledger.split('\n').filter((line) => line.includes('"type":"work_event"')).length;
      expect(workEvents).toBeGreaterThan(3);
      const frames = await sse.take(workEvents);

      mcpResults.push(
        await mcp.callTool({ name: 'work_get', arguments: { session_id: 's1' } }),
        await mcp.callTool({ name: 'work_verify', arguments: { session_id: 's1' } }),
      );
      await mcp.close();

      // The verifier's stored output is in the ledger, scrubbed: the command did print them.
      expect(ledger).toContain('[redacted]');
      expect(ledger).toContain('token [redacted]');
      expect(lines.length).toBeGreaterThan(10);
      const places = {
        ledger,
        projection: snapshot.text,
        sse: JSON.stringify(frames),
        logs: lines.join('\n'),
        mcp: JSON.stringify(mcpResults),
        report: JSON.stringify(report),
      };
      const hits = Object.entries(places).flatMap(([place, text]) =>
        Object.entries(canaries)
          .filter(([, canary]) => text.includes(canary))
          .map(([name]) => `${name} in ${place}`),
      );
      expect(hits).toEqual([]);
    });
  });
}
