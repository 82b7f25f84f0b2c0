/**
 * The JSONL form of a stream: a header line, then one canonical JSON line per entry in
 * position order. Export is a pure function of the entries, so exporting an imported
 * stream gives the same bytes. Parsing keeps unknown entry types, refuses a file whose
 * entries do not number the header's head, and skips only a torn line after them, with a warning.
 */
import { z } from 'zod';
import { canonicalJson, digestPattern, type Digest } from '../canonical.ts';
import { BatonError } from '../errors.ts';
import { jsonObjectSchema, jsonValueSchema } from '../json.ts';
import { parseRecord, recordSchema } from '../records.ts';
import { knownEntryTypes, type Entry } from './entry.ts';
import { entryTypeSchema, sourceIdSchema, streamKeySchema, type StreamKey } from './names.ts';

export const exportHeaderSchema = recordSchema('baton.ledger-export/v1', {
  stream: streamKeySchema,
  head: z.number().int().min(0),
});

export const entryLineSchema = recordSchema('baton.entry/v1', {
  position: z.number().int().min(1),
  type: entryTypeSchema,
  source_id: sourceIdSchema.nullable().default(null),
  digest: z.string().regex(digestPattern) as z.ZodType<Digest>,
  recorded_at: z.iso.datetime(),
  content: jsonValueSchema.nullable().default(null),
  metadata: jsonObjectSchema.nullable().default(null),
  retracted: z.strictObject({ at: z.iso.datetime(), reason: z.string() }).nullable().default(null),
});

export type EntryLine = z.output<typeof entryLineSchema>;

export function headerLine(stream: StreamKey, head: number): string {
  return canonicalJson({ schema: 'baton.ledger-export/v1', stream, head });
}

export function entryLine(entry: Entry): string {
  return canonicalJson({
    schema: 'baton.entry/v1',
    position: entry.position,
    type: entry.type,
    source_id: entry.source_id,
    digest: entry.digest,
    recorded_at: entry.recorded_at,
    content: entry.content,
    metadata: entry.metadata,
    retracted: entry.retracted,
  });
}

export interface ParseWarning {
  readonly line: number;
  readonly message: string;
}

export interface ParsedLedger {
  readonly stream: StreamKey;
  readonly entries: EntryLine[];
  readonly warnings: ParseWarning[];
  /** Entry types this Baton does not know, kept as they are, with how often each appears. */
  readonly unknown_types: Record<string, number>;
}

/**
 * Parse JSONL lines (without their newlines). The file must hold exactly the header's head
 * entries, so an export cut short is invalid_input, not a shorter stream. Only the last
 * non-empty line may be torn, and only after those entries; a bad line anywhere else is
 * invalid_input, since entries after it could not be trusted.
 */
export async function parseLedgerLines(
  lines: AsyncIterable<string> | Iterable<string>,
): Promise<ParsedLedger> {
  let header: z.output<typeof exportHeaderSchema> | undefined;
  const entries: EntryLine[] = [];
  const warnings: ParseWarning[] = [];
  const unknown_types: Record<string, number> = {};
  let pending: { number: number; text: string; reason: string } | undefined;
  let number = 0;
  for await (const raw of lines) {
    number += 1;
    const text = raw.trim();
    if (text === '') continue;
    if (pending) {
      throw new BatonError(
        'invalid_input',
        `line ${pending.number} is not a ledger entry: ${pending.reason}`,
        {
          line: pending.number,
        },
      );
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      pending = { number, text, reason: (error as Error).message };
      continue;
    }
    if (!header) {
      header = parseRecord(exportHeaderSchema, value, `line ${number} (export header)`);
      continue;
    }
    const parsed = parseRecord(entryLineSchema, value, `line ${number}`);
    // Keep the line's own content: zod's copy would drop a "__proto__" key.
    const given = value as { content?: EntryLine['content']; metadata?: EntryLine['metadata'] };
    const entry = { ...parsed, content: given.content ?? null, metadata: given.metadata ?? null };
    if (!knownEntryTypes.has(entry.type)) unknown_types[entry.type] = (unknown_types[entry.type] ?? 0) + 1;
    entries.push(entry);
  }
  if (!header) throw new BatonError('invalid_input', 'the file has no baton.ledger-export/v1 header line');
  if (entries.length !== header.head) {
    const torn = pending ? ` (line ${pending.number} is torn)` : '';
    throw new BatonError(
      'invalid_input',
      `the header says head ${header.head} but the file holds ${entries.length} entr${entries.length === 1 ? 'y' : 'ies'}${torn}: the export is incomplete or was edited; export the stream again`,
      { head: header.head, entries: entries.length },
    );
  }
  if (pending) {
    warnings.push({ line: pending.number, message: `torn last line skipped (${pending.reason})` });
  }
  return { stream: header.stream, entries, warnings, unknown_types };
}
