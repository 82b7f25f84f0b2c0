import { describe, expect, it } from 'vitest';
import { exportStream, importStream } from '../src/app/ledger.ts';
import { BatonError } from '../src/core/errors.ts';
import { headerLine } from '../src/core/ledger/jsonl.ts';
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

  it('skips a torn line after the last entry with a warning', async () => {
    const source = await seeded();
    try {
      const lines = (await exported(source.store)).trimEnd().split('\n');
      const torn = [...lines, lines.at(-1)!.slice(0, 40)];
      const into: StreamKey = { ...stream, scope_id: 'restored' };
      const report = await importStream({ store: source.store }, torn, { into });
      expect(report.entries).toBe(5);
      expect(report.warnings.map((w) => w.line)).toEqual([7]);
      expect(report.warnings[0]!.message).toContain('torn last line skipped');
      expect((await source.store.getStream(into)).head).toBe(5);
    } finally {
      await source.dispose();
    }
  });

  it('refuses an export cut short, at a line or inside the last entry, naming head and count; writes nothing', async () => {
    const source = await seeded();
    try {
      const lines = (await exported(source.store)).trimEnd().split('\n');
      const into: StreamKey = { ...stream, scope_id: 'restored' };
      const cuts: [string[], number, string][] = [
        [lines.slice(0, 4), 3, 'the header says head 5 but the file holds 3 entries:'],
        [lines.slice(0, 1), 0, 'the header says head 5 but the file holds 0 entries:'],
        [[...lines.slice(0, -1), lines.at(-1)!.slice(0, 40)], 4, 'holds 4 entries (line 6 is torn):'],
        [
          [...lines.slice(0, 2), ...lines.slice(3)],
          4,
          'the header says head 5 but the file holds 4 entries:',
        ],
      ];
      for (const [cut, found, message] of cuts) {
        const refused = await importStream({ store: source.store }, cut, { into }).catch(
          (error: unknown) => error,
        );
        expect(refused).toBeInstanceOf(BatonError);
        expect(refused).toMatchObject({
          code: 'invalid_input',
          message: expect.stringContaining(message) as string,
          data: { head: 5, entries: found },
        });
      }
      await expect(source.store.getStream(into)).rejects.toMatchObject({ code: 'not_found' });
    } finally {
      await source.dispose();
    }
  });

  it('refuses more entries than the header counts', async () => {
    const source = await seeded();
    try {
      const lines = (await exported(source.store)).trimEnd().split('\n');
      const into: StreamKey = { ...stream, scope_id: 'restored' };
      const header = lines[0]!.replace('"head":5', '"head":4');
      await expect(
        importStream({ store: source.store }, [header, ...lines.slice(1)], { into }),
      ).rejects.toMatchObject({ code: 'invalid_input', data: { head: 4, entries: 5 } });
      await expect(source.store.getStream(into)).rejects.toMatchObject({ code: 'not_found' });
    } finally {
      await source.dispose();
    }
  });

  it('imports the export of an empty stream (head 0) as an empty stream', async () => {
    const source = await tempSqliteStore();
    try {
      await source.store.createProject('acme');
      // A handoff committed before any capture leaves a stream with no entries.
      await source.store.commitRevision({ project_id: 'acme', scope_id: 'auto-refresh' }, 0, {
        next: 'start',
      });
      const text = await exported(source.store);
      expect(text).toBe(`${headerLine(stream, 0)}\n`);
      const into: StreamKey = { ...stream, scope_id: 'restored' };
      const report = await importStream({ store: source.store }, text.split('\n'), { into });
      expect(report).toEqual({ stream: into, entries: 0, warnings: [], unknown_types: {} });
      expect(await exported(source.store, into)).toBe(`${headerLine(into, 0)}\n`);
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
      await expect(importStream({ store: source.store }, lines, { into })).rejects.toMatchObject({
        code: 'invalid_input',
        data: { line: 3 },
      });
      const edited = (await exported(source.store)).replace('ship é €', 'ship something else');
      await expect(
        importStream({ store: source.store }, edited.split('\n'), { into }),
      ).rejects.toBeInstanceOf(BatonError);
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
