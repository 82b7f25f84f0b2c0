/** Moving a stream in and out of the ledger as JSONL: `baton ledger export` and `baton ledger import`. */
import { BatonError } from '../core/errors.ts';
import { entryLine, headerLine, parseLedgerLines, type ParseWarning } from '../core/ledger/jsonl.ts';
import { describeStream, type StreamKey } from '../core/ledger/names.ts';
import type { Store } from '../store/store.ts';

export interface LedgerDeps {
  readonly store: Store;
}

export type Progress = (done: number, total: number) => void;

/** Write the stream as JSONL lines, each ending in a newline; returns how many entries it wrote. */
export async function exportStream(
  deps: LedgerDeps,
  stream: StreamKey,
  write: (chunk: string) => void | Promise<void>,
  progress?: Progress,
): Promise<{ entries: number }> {
  const info = await deps.store.getStream(stream);
  await write(`${headerLine(info.stream, info.head)}\n`);
  let entries = 0;
  for await (const entry of deps.store.readStream(stream, { to: info.head })) {
    await write(`${entryLine(entry)}\n`);
    entries += 1;
    progress?.(entries, info.head);
  }
  return { entries };
}

export interface ImportReport {
  readonly stream: StreamKey;
  readonly entries: number;
  readonly warnings: ParseWarning[];
  readonly unknown_types: Record<string, number>;
}

/**
 * Read JSONL lines into a new stream (the one named in the header unless `into` names
 * another). All or nothing: a stream that exists already is a conflict.
 */
export async function importStream(
  deps: LedgerDeps,
  lines: AsyncIterable<string> | Iterable<string>,
  into?: StreamKey,
): Promise<ImportReport> {
  const parsed = await parseLedgerLines(lines);
  const stream = into ?? parsed.stream;
  if (parsed.entries.length === 0) {
    throw new BatonError('invalid_input', `the file holds no entries for ${describeStream(stream)}`);
  }
  const info = await deps.store.importEntries(
    stream,
    parsed.entries.map(({ schema: _schema, ...entry }) => entry),
  );
  return {
    stream: info.stream,
    entries: info.head,
    warnings: parsed.warnings,
    unknown_types: parsed.unknown_types,
  };
}
