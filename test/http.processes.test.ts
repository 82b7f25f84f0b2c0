/**
 * Two `baton serve` processes on one PostgreSQL schema behave as one. The project and its token
 * come from `baton init` (a third process); both servers are the real CLI in child processes on
 * free ports. Three rounds of 20 concurrent commit_handoff calls on the same head, split across
 * both servers: exactly one 200 per round, the other 19 get 409 revision_conflict naming the new
 * head, and both servers then read the same head. Both stop on SIGTERM with exit code 0.
 *
 * The CLI has no schema option: a postgres:// URL is used as given, so the schema is chosen the
 * libpq way, with `options=-c search_path=SCHEMA` in the URL. Baton creates its tables in the
 * current schema but not the schema itself, so the test creates it first.
 */
/* eslint-disable @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access -- reply bodies are parsed JSON, read only in assertions */
import { tmpdir } from 'node:os';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callServer, inputs, scope_id, type Reply } from './helpers/http.ts';
import { dropSchema, freshSchemaName, postgresUrl } from './helpers/postgres.ts';
import { runBaton, spawnServe, type ServeProcess } from './helpers/serve-process.ts';

const contenders = 20;
const rounds = 3;
const project_id = 'acme';

/** The URL with `-c search_path=SCHEMA` added to its startup options. */
function urlWithSchema(url: string, schema: string): string {
  const parsed = new URL(url);
  const given = parsed.searchParams.get('options');
  parsed.searchParams.set('options', `${given ? `${given} ` : ''}-c search_path=${schema}`);
  return parsed.toString();
}

async function withClient<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

describe.skipIf(!postgresUrl)(
  'two baton serve processes on one PostgreSQL (skipped without BATON_TEST_POSTGRES_URL)',
  () => {
    const schema = freshSchemaName();
    const database = postgresUrl ? urlWithSchema(postgresUrl, schema) : '';
    const cwd = tmpdir();
    const servers: ServeProcess[] = [];
    let token: string;

    beforeAll(async () => {
      await withClient((client) => client.query(`CREATE SCHEMA "${schema}"`));
      const init = await runBaton(['init', '--project', project_id, '--json'], database, cwd);
      expect(init.code, init.stderr).toBe(0);
      token = (JSON.parse(init.stdout) as { token: { token: string } }).token.token;
      servers.push(...(await Promise.all([spawnServe(database, cwd), spawnServe(database, cwd)])));
    });
    afterAll(async () => {
      await Promise.all(servers.map((server) => server.stop()));
      await dropSchema(schema);
    });

    const call = (server: number, method: string, path: string, body?: unknown): Promise<Reply> =>
      callServer(servers[server]!.url, token, method, path, { body });

    it('runs two separate server processes on the schema baton init set up', async () => {
      expect(servers).toHaveLength(2);
      const [a, b] = servers;
      expect(a!.child.pid).not.toBe(b!.child.pid);
      expect(a!.url).not.toBe(b!.url);
      for (const server of servers) expect(server.stdout()).toContain('(PostgreSQL)');
      // Baton's tables are in the fresh schema: the URL's search_path reached every process.
      const found = await withClient((client) =>
        client.query<{ table: string | null }>(`SELECT to_regclass($1)::text AS table`, [
          `"${schema}".handoff_revisions`,
        ]),
      );
      expect(found.rows[0]?.table).not.toBeNull();
    });

    it(`publishes exactly one of ${contenders} concurrent commits per revision`, async () => {
      const captured = await call(0, 'POST', '/v1/work/sources/capture', inputs.capture('ci-log'));
      expect(captured.status, captured.text).toBe(200);
      const log = captured.body.source_ref;
      for (let round = 0; round < rounds; round += 1) {
        const head = round;
        // Distinct prepared handoffs (distinct source_ids), all on the same head, prepared
        // alternately through both processes.
        const digests: string[] = [];
        for (let n = 0; n < contenders; n += 1) {
          const reply = await call(n % 2, 'POST', '/v1/work/handoffs/prepare-current', {
            ...inputs.boundary(`boundary-${round}-${n}`, log),
            omissions: [`contender ${n} of round ${round}`],
          });
          expect(reply.status, reply.text).toBe(200);
          expect(reply.body.prepared_handoff.base_revision).toBe(head);
          digests.push(reply.body.digest as string);
        }
        expect(new Set(digests).size).toBe(contenders);

        const replies = await Promise.all(
          digests.map((prepared, n) =>
            call(n % 2, 'POST', '/v1/work/handoffs/commit', { scope_id, prepared, expected_head: head }),
          ),
        );
        const winners = replies.filter((reply) => reply.status === 200);
        const losers = replies.filter((reply) => reply.status !== 200);
        expect(winners, replies.map((reply) => `${reply.status} ${reply.text}`).join('\n')).toHaveLength(1);
        const winner = winners[0]!.body;
        expect(winner).toMatchObject({ scope_id, revision: head + 1 });
        expect(digests).toContain(winner.prepared_digest);
        expect(losers).toHaveLength(contenders - 1);
        for (const loser of losers) {
          expect(loser.status, loser.text).toBe(409);
          expect(loser.body.error).toMatchObject({
            code: 'revision_conflict',
            details: { scope_id, expected_head: head, actual_head: head + 1 },
          });
        }

        // Both processes read the same head and the same revision at it.
        for (const server of [0, 1]) {
          const resumed = await call(server, 'POST', '/v1/work/handoffs/continue', {
            scope_id,
            selection: 'latest',
          });
          expect(resumed.status, resumed.text).toBe(200);
          expect(resumed.body.selection).toEqual({
            kind: 'exact',
            revision: head + 1,
            digest: winner.prepared_digest,
          });
          const report = await call(server, 'GET', `/v1/work/report?scope_id=${scope_id}`);
          expect(report.status, report.text).toBe(200);
          expect(report.body.revision_count).toBe(head + 1);
        }
      }

      // The shared table holds exactly one row per revision.
      const stored = await withClient((client) =>
        client.query<{ revision: number }>(
          `SELECT revision FROM "${schema}".handoff_revisions ORDER BY revision`,
        ),
      );
      expect(stored.rows.map((row) => row.revision)).toEqual([1, 2, 3]);
    });

    it('stops both processes on SIGTERM with exit code 0', async () => {
      const codes = await Promise.all(servers.map((server) => server.stop()));
      expect(codes).toEqual([0, 0]);
      for (const server of servers) expect(server.stderr()).toContain('stopped.');
    });
  },
);
