/** Moving a stream in and out of the ledger as JSONL: `baton ledger export` and `baton ledger import`. */
import { entryLine, headerLine, parseLedgerLines, type ParseWarning } from '../core/ledger/jsonl.ts';
import type { StreamKey } from '../core/ledger/names.ts';
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
 * another). All or nothing: the whole file is checked before the store writes anything, a file
 * cut short is invalid_input, and a stream that exists already is a conflict. An export of an
 * empty stream (head 0) makes an empty stream.
 */
export async function importStream(
  deps: LedgerDeps,
  lines: AsyncIterable<string> | Iterable<string>,
  into?: StreamKey,
  options: {
    /** A project to create if it does not exist, once the file has passed its checks. */
    readonly createProject?: string;
  } = {},
): Promise<ImportReport> {
  const parsed = await parseLedgerLines(lines);
  if (options.createProject !== undefined) await deps.store.createProject(options.createProject);
  const info = await deps.store.importEntries(
    into ?? parsed.stream,
    parsed.entries.map(({ schema: _schema, ...entry }) => entry),
  );
  return {
    stream: info.stream,
    entries: info.head,
    warnings: parsed.warnings,
    unknown_types: parsed.unknown_types,
  };
}
