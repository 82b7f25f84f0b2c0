/**
 * Two Baton servers, each with its own PostgreSQL store on the same schema, behave as one:
 * 20 concurrent commit_handoff calls on the same head, split across both, publish exactly one
 * revision; the other 19 get 409 revision_conflict naming the actual head. Three rounds.
 */
/* eslint-disable @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access -- reply bodies are parsed JSON, read only in assertions */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../src/store/postgres/postgres-store.ts';
import type { Store } from '../src/store/store.ts';
import { startServer } from '../src/http/server.ts';
import { callServer, inputs, scope_id, seedTokens, type Reply } from './helpers/http.ts';
import { dropSchema, freshSchemaName, postgresUrl } from './helpers/postgres.ts';

const contenders = 20;
const rounds = 3;

describe.skipIf(!postgresUrl)(
  'two servers on one PostgreSQL (skipped without BATON_TEST_POSTGRES_URL)',
  () => {
    const schema = freshSchemaName();
    const stores: Store[] = [];
    const servers: { url: string; close(): Promise<void> }[] = [];
    let token: string;

    beforeAll(async () => {
      stores.push(await openPostgresStore({ url: postgresUrl!, schema }));
      stores.push(await openPostgresStore({ url: postgresUrl!, schema }));
      const seeded = await seedTokens(stores[0]!);
      token = seeded.tokens.writer;
      for (const store of stores)
        servers.push(await startServer({ deps: { ...seeded.deps, store }, port: 0, logger: false }));
    });
    afterAll(async () => {
      for (const server of servers) await server.close();
      for (const store of stores) await store.close();
      await dropSchema(schema);
    });

    const call = (server: number, method: string, path: string, body?: unknown): Promise<Reply> =>
      callServer(servers[server]!.url, token, method, path, { body });

    it(`publishes exactly one of ${contenders} concurrent commits per revision`, async () => {
      const log = (await call(0, 'POST', '/v1/work/sources/capture', inputs.capture('ci-log'))).body
        .source_ref;
      for (let round = 0; round < rounds; round += 1) {
        const head = round;
        // Distinct prepared handoffs, all on the same head, prepared alternately through both servers.
        const digests: string[] = [];
        for (let n = 0; n < contenders; n += 1) {
          const reply = await call(n % 2, 'POST', '/v1/work/handoffs/prepare-current', {
            ...inputs.boundary(`boundary-${round}-${n}`, log),
            omissions: [`contender ${n} of round ${round}`],
          });
          expect(reply.body.prepared_handoff.base_revision).toBe(head);
          digests.push(reply.body.digest as string);
        }
        const replies = await Promise.all(
          digests.map((prepared, n) =>
            call(n % 2, 'POST', '/v1/work/handoffs/commit', { scope_id, prepared, expected_head: head }),
          ),
        );
        const winners = replies.filter((reply) => reply.status === 200);
        const losers = replies.filter((reply) => reply.status !== 200);
        expect(winners).toHaveLength(1);
        expect(winners[0]!.body).toMatchObject({ scope_id, revision: head + 1 });
        expect(losers).toHaveLength(contenders - 1);
        for (const loser of losers) {
          expect(loser.status, loser.text).toBe(409);
          expect(loser.body.error).toMatchObject({
            code: 'revision_conflict',
            details: { scope_id, expected_head: head, actual_head: head + 1 },
          });
        }
        // Both servers see the same head afterwards.
        for (const server of [0, 1]) {
          const resumed = await call(server, 'POST', '/v1/work/handoffs/continue', {
            scope_id,
            selection: 'latest',
          });
          expect(resumed.body.selection).toEqual({
            kind: 'exact',
            revision: head + 1,
            digest: winners[0]!.body.prepared_digest,
          });
        }
      }
    });
  },
);
