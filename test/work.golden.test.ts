/**
 * Golden session ledgers, one per path the managed work spec says to inspect: each imports
 * through `baton ledger import`'s function, projects to its frozen expected state, and exports
 * back to the same bytes (append-only JSONL, work events round-trip).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { exportStream, importStream } from '../src/app/ledger.ts';
import { readWork } from '../src/app/work.ts';
import { systemClock } from '../src/core/clock.ts';
import { parseLedgerLines } from '../src/core/ledger/jsonl.ts';
import { deriveModelContext } from '../src/core/work/context.ts';
import { projectWork } from '../src/core/work/projector.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';

const folder = join(import.meta.dirname, 'fixtures', 'work-ledgers');
const scenarios = [
  'direct',
  'managed',
  'clarification',
  'child',
  'child-child',
  'failed-verification',
  'interrupted',
];
const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

async function imported(name: string) {
  const store = new SqliteStore({ path: ':memory:' });
  stores.push(store);
  await store.createProject('acme');
  const text = readFileSync(join(folder, `${name}.jsonl`), 'utf8');
  const report = await importStream({ store }, text.split('\n'));
  return { store, text, report, deps: { store, clock: systemClock } };
}

describe('golden session ledgers', () => {
  for (const name of scenarios) {
    it(`${name}: imports without warnings, projects to its frozen state, exports the same bytes`, async () => {
      const { store, text, report, deps } = await imported(name);
      expect(report.warnings).toEqual([]);
      expect(report.unknown_types).toEqual({});
      const session_id = report.stream.kind === 'session' ? report.stream.session_id : '';
      const snapshot = await readWork(deps, 'acme', { session_id });
      const expectedFile = join(folder, `${name}.expected.json`);
      const actual = JSON.parse(JSON.stringify(snapshot)) as unknown;
      if (!existsSync(expectedFile) && process.env.BATON_WRITE_GOLDEN === '1') {
        writeFileSync(expectedFile, `${JSON.stringify(actual, null, 2)}\n`);
      }
      expect(actual).toEqual(JSON.parse(readFileSync(expectedFile, 'utf8')));
      let exported = '';
      await exportStream({ store }, report.stream, (chunk) => {
        exported += chunk;
      });
      expect(exported).toBe(text);
    });
  }

  it('the same ledger projects to the same state every time (projection is deterministic)', async () => {
    for (const name of scenarios) {
      const parsed = await parseLedgerLines(readFileSync(join(folder, `${name}.jsonl`), 'utf8').split('\n'));
      const once = projectWork(parsed.entries);
      const twice = projectWork(JSON.parse(JSON.stringify(parsed.entries)) as typeof parsed.entries);
      expect(twice).toEqual(once);
    }
  });

  it('old ledgers open without migration: a session written before managed work projects to no work', async () => {
    const { deps } = await imported('direct');
    const snapshot = await readWork(deps, 'acme', { session_id: 'direct-1' });
    expect(snapshot).toMatchObject({
      projection: null,
      contract: null,
      control_block: null,
      warnings: [],
      position: 6,
    });
  });

  it('each path ends where the spec says', async () => {
    const ends: Record<string, string | null> = {};
    for (const name of scenarios) {
      const parsed = await parseLedgerLines(readFileSync(join(folder, `${name}.jsonl`), 'utf8').split('\n'));
      const result = projectWork(parsed.entries);
      expect(result.ok).toBe(true);
      ends[name] = result.ok ? (result.projection?.contracts[0]?.status ?? null) : 'error';
    }
    expect(ends).toEqual({
      direct: null,
      managed: 'completed',
      clarification: 'completed',
      child: 'completed',
      'child-child': null,
      'failed-verification': 'failed',
      interrupted: 'completed',
    });
  });
});

describe('the control block in the model context', () => {
  async function entriesOf(name: string) {
    return (await parseLedgerLines(readFileSync(join(folder, `${name}.jsonl`), 'utf8').split('\n'))).entries;
  }

  it('active work survives compaction: the block is rendered in the tail, not kept in history', async () => {
    const entries = (await entriesOf('managed')).slice(0, 12);
    const chatter = Array.from({ length: 300 }, (_, index) => ({
      position: 13 + index,
      type: index % 2 === 0 ? 'user_message' : 'assistant_message',
      recorded_at: '2026-12-02T10:00:00.000Z',
      content: {
        schema: index % 2 === 0 ? 'baton.user-message/v1' : 'baton.assistant-message/v1',
        text: `message ${index}`,
      },
    }));
    const full = deriveModelContext([...entries, ...chatter], { keep_messages: 1000 });
    const compacted = deriveModelContext([...entries, ...chatter], { keep_messages: 10 });
    expect(compacted.dropped).toBe(291);
    expect(compacted.history).toHaveLength(10);
    expect(compacted.tail).toEqual(full.tail);
    expect(compacted.tail).toHaveLength(1);
    expect(compacted.tail[0]).toContain('<work_contract revision="1">');
    expect(compacted.tail[0]).toContain('- inspect: ready_for_verification — Inspect the loader');
    expect(compacted.history.some((message) => message.text.includes('<work_contract'))).toBe(false);
    const again = deriveModelContext([...entries, ...chatter], { keep_messages: 10 });
    expect(again).toEqual(compacted);
  });

  it('terminal work leaves model context', async () => {
    for (const name of ['managed', 'failed-verification', 'interrupted']) {
      const context = deriveModelContext(await entriesOf(name), { keep_messages: 50 });
      expect(context.tail).toEqual([]);
    }
  });
});

it('the ledger knows every session entry type, so an import never calls one unknown', async () => {
  const { knownEntryTypes } = await import('../src/core/ledger/entry.ts');
  const { sessionEntryTypes } = await import('../src/core/work/session.ts');
  for (const type of sessionEntryTypes) expect(knownEntryTypes.has(type)).toBe(true);
});

it('work events round-trip: every event parses to exactly what was written, and export gives the same bytes', async () => {
  const { workEventSchema } = await import('../src/core/work/model.ts');
  let events = 0;
  for (const name of scenarios) {
    const parsed = await parseLedgerLines(readFileSync(join(folder, `${name}.jsonl`), 'utf8').split('\n'));
    for (const entry of parsed.entries.filter((line) => line.type === 'work_event')) {
      // These ledgers were written before attached evidence was resolved: such an event reads
      // as `unchecked`, and gains nothing else.
      const content = entry.content as { kind: { type: string } };
      const expected =
        content.kind.type === 'evidence_attached' && !('availability' in content.kind)
          ? { ...content, kind: { ...content.kind, availability: { status: 'unchecked' } } }
          : content;
      expect(workEventSchema.parse(entry.content)).toEqual(expected);
      events += 1;
    }
  }
  expect(events).toBeGreaterThan(80);
});
