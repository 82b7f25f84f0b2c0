/**
 * The SQLite store's group commit: the writes of one event-loop turn share one transaction and
 * one COMMIT, yet each keeps its own outcome. A failing write takes nothing else with it; a read
 * never sees a write before its COMMIT (so never one that could still be lost); other processes
 * see every acknowledged write, and this one theirs, though one turn's reads share a snapshot;
 * close commits what is waiting.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { expectBatonError } from '../src/store/conformance/store.conformance.ts';
import { openSqliteStore, type SqliteStore } from '../src/store/sqlite/sqlite-store.ts';

const stream = { project_id: 'acme', kind: 'scope', scope_id: 'relay' } as const;
const scope = { project_id: 'acme', scope_id: 'relay' } as const;

describe('SQLite group commit', () => {
  let dir: string;
  let path: string;
  let store: SqliteStore;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-group-'));
    path = join(dir, 'baton.db');
    store = await openSqliteStore({ path });
    await store.createProject('acme');
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Positions and source ids as another connection (another process) sees them. */
  function committed(): { position: number; source_id: string | null }[] {
    const other = new DatabaseSync(path, { readOnly: true });
    try {
      return other
        .prepare('SELECT position, source_id FROM entries ORDER BY position')
        .all()
        .map((row) => ({ position: Number(row.position), source_id: row.source_id as string | null }));
    } finally {
      other.close();
    }
  }

  it('commits concurrent writes together, each with its own gap-free position', async () => {
    const receipts = await Promise.all(
      Array.from({ length: 40 }, (_, n) =>
        store.captureSource(scope, { source_id: `s-${n}`, content: { n } }),
      ),
    );
    expect(receipts.map((receipt) => receipt.position)).toEqual(Array.from({ length: 40 }, (_, n) => n + 1));
    expect(committed()).toHaveLength(40);
  });

  it('fails one write of a group alone: the others commit, the failed one leaves no trace', async () => {
    const outcomes = await Promise.allSettled([
      store.append(stream, [{ type: 'note', source_id: 'a', content: 1 }]),
      store.append(stream, [{ type: 'note', source_id: 'b', content: 2 }], { expected_head: 0 }),
      store.append(stream, [{ type: 'note', source_id: 'c', content: 3 }]),
      // The same source_id with another content is a conflict inside the group.
      store.append(stream, [{ type: 'note', source_id: 'a', content: 'changed' }]),
      store.append(stream, [
        { type: 'note', source_id: 'd', content: 4 },
        { type: 'note', source_id: 'c', content: 'changed' },
      ]),
    ]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual([
      'fulfilled',
      'rejected',
      'fulfilled',
      'rejected',
      'rejected',
    ]);
    const codes = outcomes.map((outcome) =>
      outcome.status === 'rejected' ? (outcome.reason as { code?: string }).code : 'ok',
    );
    expect(codes).toEqual(['ok', 'revision_conflict', 'ok', 'conflict', 'conflict']);
    expect(committed()).toEqual([
      { position: 1, source_id: 'a' },
      { position: 2, source_id: 'c' },
    ]);
    expect((await store.getStream(stream)).head).toBe(2);
  });

  it('never lets a read see a write before its COMMIT', async () => {
    await store.captureSource(scope, { source_id: 'first', content: 1 });
    const pending = store.captureSource(scope, { source_id: 'second', content: 2 });
    // Same turn: the second write sits in the open transaction, not yet committed.
    const before = await store.getStream(stream);
    const check = await store.checkSource('acme', {
      scope_id: 'relay',
      source_id: 'second',
      digest: `sha256:${'0'.repeat(64)}`,
    });
    expect(before.head).toBe(1);
    expect(check.status).toBe('unavailable');
    const receipt = await pending;
    expect(receipt.position).toBe(2);
    expect((await store.getStream(stream)).head).toBe(2);
    expect((await store.checkSource('acme', receipt.source_ref)).status).toBe('available');
  });

  it('acknowledges a write only once another connection can read it', async () => {
    const receipt = await store.captureSource(scope, { source_id: 'durable', content: 1 });
    expect(committed()).toEqual([{ position: receipt.position, source_id: 'durable' }]);
  });

  it("reads another process's acknowledged write from the next turn on, though reads share a snapshot", async () => {
    const ref = (source_id: string) =>
      ({ scope_id: 'relay', source_id, digest: `sha256:${'0'.repeat(64)}` }) as const;
    const other = await openSqliteStore({ path });
    try {
      // This turn's reads share one read transaction...
      expect((await store.checkSource('acme', ref('elsewhere'))).status).toBe('unavailable');
      // ...which ends with the turn: the other store's write, once acknowledged, reads here.
      const receipt = await other.captureSource(scope, { source_id: 'elsewhere', content: 1 });
      expect((await store.checkSource('acme', receipt.source_ref)).status).toBe('available');
      expect((await store.getStream(stream)).head).toBe(1);
      // And this store's own write reads back at once, whatever snapshot this turn opened.
      expect((await store.getStream(stream)).head).toBe(1);
      const own = await store.captureSource(scope, { source_id: 'here', content: 2 });
      expect((await store.checkSource('acme', own.source_ref)).status).toBe('available');
      expect((await other.getStream(stream)).head).toBe(2);
    } finally {
      await other.close();
    }
  });

  it('remembers a committed revision and prepared body, and reads a missing one again', async () => {
    const other = await openSqliteStore({ path });
    try {
      await store.captureSource(scope, { source_id: 'first', content: 1 });
      await expectBatonError(store.getRevision(scope, 1), 'not_found');
      await expectBatonError(store.getPrepared('acme', `sha256:${'a'.repeat(64)}`), 'not_found');
      const revision = await other.commitRevision(scope, 0, { schema: 'test', n: 1 });
      await new Promise((resolve) => setImmediate(resolve));
      expect(await store.getRevision(scope, 1)).toEqual(revision);
      expect(await store.getPrepared('acme', revision.prepared_digest)).toEqual({ schema: 'test', n: 1 });
      // Each answer is the caller's own: changing one changes nothing remembered.
      const body = (await store.getPrepared('acme', revision.prepared_digest)) as Record<string, unknown>;
      body.n = 2;
      expect(await store.getPrepared('acme', revision.prepared_digest)).toEqual({ schema: 'test', n: 1 });
    } finally {
      await other.close();
    }
  });

  it('reads a lookup once per turn, and again after a COMMIT: revoked tokens, retracted sources', async () => {
    const token_hash = '1'.repeat(64);
    const token = await store.createToken({
      token_id: 'tok-1',
      project_id: 'acme',
      token_hash,
      read_only: false,
      label: 'test',
    });
    const receipt = await store.captureSource(scope, { source_id: 'secret', content: 'x' });
    // Two lookups in one turn answer alike...
    const [first, second] = await Promise.all([store.findToken(token_hash), store.findToken(token_hash)]);
    expect(first?.token_id).toBe(token.token_id);
    expect(second).toEqual(first);
    expect((await store.checkSource('acme', receipt.source_ref)).status).toBe('available');
    // ...and a COMMIT makes them read again, in the same turn as the caller resumes.
    await store.revokeToken('acme', token.token_id);
    expect(await store.findToken(token_hash)).toBeUndefined();
    await store.retractSource(scope, 'secret', 'leaked');
    expect(await store.checkSource('acme', receipt.source_ref)).toMatchObject({
      status: 'unavailable',
      reason: 'retracted',
    });
    expect(await store.revisionHead(scope)).toBe(0);
  });

  it("lets a write read its group's earlier writes, never the turn's remembered lookups", async () => {
    // This turn's snapshot remembers head 0...
    expect(await store.revisionHead(scope)).toBe(0);
    const outcomes = await Promise.allSettled([
      store.commitRevision(scope, 0, { n: 1 }),
      store.commitRevision(scope, 0, { n: 2 }),
    ]);
    // ...but the second commit of the group reads the head the first one wrote.
    expect(outcomes[0]).toMatchObject({ status: 'fulfilled', value: { revision: 1 } });
    expect(outcomes[1]).toMatchObject({
      status: 'rejected',
      reason: { code: 'revision_conflict', data: { actual_head: 1 } },
    });
  });

  it('commits a waiting group on close', async () => {
    const pending = store.captureSource(scope, { source_id: 'last', content: 1 });
    await store.close();
    expect((await pending).position).toBe(1);
    expect(committed()).toEqual([{ position: 1, source_id: 'last' }]);
    store = await openSqliteStore({ path });
  });
});
