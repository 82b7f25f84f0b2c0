import { describe, expect, it } from 'vitest';
import { exportStream, importStream } from '../src/app/ledger.ts';
import { BatonError } from '../src/core/errors.ts';
import type { StreamKey } from '../src/core/ledger/names.ts';
import { tempSqliteStore } from './helpers/sqlite.ts';

const stream: StreamKey = { project_id: 'acme', kind: 'scope', scope_id: 'auto-refresh' };

async function exported(
  store: Awaited<ReturnType<typeof tempSqliteStore>>['store'],
  key = stream,
): Promise<string> {
  let text = '';
  await exportStream({ store }, key, (chunk) => {
    text += chunk;
  });
  return text;
}

async function seeded() {
  const harness = await tempSqliteStore();
  await harness.store.createProject('acme');
  await harness.store.append(stream, [
    {
      type: 'source',
      source_id: 'contract',
      content: { objective: 'ship é €' },
      metadata: { kind: 'work-contract' },
    },
    { type: 'source', source_id: 'leak', content: 'sk-live-123', metadata: {} },
    { type: 'future-kind', content: { written: 'by a newer Baton' } },
    { type: 'source', source_id: 'note', content: [1, 2.5, null, true] },
    { type: 'source', source_id: 'odd', content: JSON.parse('{"__proto__":"kept","x":1}') as { x: number } },
  ]);
  await harness.store.retractSource({ project_id: 'acme', scope_id: 'auto-refresh' }, 'leak', 'leaked token');
  return harness;
}

describe('JSONL export and import', () => {
  it('round-trips a stream byte for byte, tombstones and unknown types included', async () => {
    const source = await seeded();
    const target = await tempSqliteStore();
    try {
      const text = await exported(source.store);
      expect(text.split('\n').length).toBe(7);
      expect(text).not.toContain('sk-live-123');
      await target.store.createProject('acme');
      const report = await importStream({ store: target.store }, text.split('\n'));
      expect(report).toEqual({ stream, entries: 5, warnings: [], unknown_types: { 'future-kind': 1 } });
      expect(await exported(target.store)).toBe(text);
    } finally {
      await source.dispose();
      await target.dispose();
    }
  });

  it('skips a torn last line with a warning', async () => {
    const source = await seeded();
    try {
      const lines = (await exported(source.store)).trimEnd().split('\n');
      const torn = [...lines.slice(0, -1), lines.at(-1)!.slice(0, 40)];
      const into: StreamKey = { ...stream, scope_id: 'restored' };
      const report = await importStream({ store: source.store }, torn, into);
      expect(report.entries).toBe(4);
      expect(report.warnings.map((w) => w.line)).toEqual([6]);
      expect(report.warnings[0]!.message).toContain('torn last line skipped');
      expect((await source.store.getStream(into)).head).toBe(4);
    } finally {
      await source.dispose();
    }
  });

  it('refuses a damaged line in the middle and writes nothing', async () => {
    const source = await seeded();
    try {
      const lines = (await exported(source.store)).trimEnd().split('\n');
      lines[2] = lines[2]!.slice(0, 30);
      const into: StreamKey = { ...stream, scope_id: 'restored' };
      await expect(importStream({ store: source.store }, lines, into)).rejects.toMatchObject({
        code: 'invalid_input',
        data: { line: 3 },
      });
      const edited = (await exported(source.store)).replace('ship é €', 'ship something else');
      await expect(importStream({ store: source.store }, edited.split('\n'), into)).rejects.toBeInstanceOf(
        BatonError,
      );
      await expect(source.store.getStream(into)).rejects.toMatchObject({ code: 'not_found' });
    } finally {
      await source.dispose();
    }
  });

  it('refuses a file without a header, or into a stream that exists', async () => {
    const source = await seeded();
    try {
      const lines = (await exported(source.store)).trimEnd().split('\n');
      await expect(importStream({ store: source.store }, lines.slice(1))).rejects.toMatchObject({
        code: 'invalid_input',
      });
      await expect(importStream({ store: source.store }, lines)).rejects.toMatchObject({ code: 'conflict' });
    } finally {
      await source.dispose();
    }
  });
});
