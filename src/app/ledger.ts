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

export interface ImportTarget {
  /** The stream to write; default the one the header names (in project_id, when given). */
  readonly into?: StreamKey;
  /** The project of the header's stream, when `into` is not given: an export moves between projects. */
  readonly project_id?: string;
  /** Create the target's project if it does not exist, in the import's own transaction. */
  readonly createProject?: boolean;
}

/**
 * Read JSONL lines into a new stream (the one named in the header unless the target names
 * another). All or nothing: the whole file is checked before the store writes anything, a file
 * cut short is invalid_input, and a stream that exists already is a conflict; a project created
 * for the import exists only if the import does. An export of an empty stream (head 0) makes an
 * empty stream.
 */
export async function importStream(
  deps: LedgerDeps,
  lines: AsyncIterable<string> | Iterable<string>,
  target: ImportTarget = {},
): Promise<ImportReport> {
  const parsed = await parseLedgerLines(lines);
  const stream =
    target.into ??
    (target.project_id === undefined ? parsed.stream : { ...parsed.stream, project_id: target.project_id });
  const info = await deps.store.importEntries(
    stream,
    parsed.entries.map(({ schema: _schema, ...entry }) => entry),
    { createProject: target.createProject ?? false },
  );
  return {
    stream: info.stream,
    entries: info.head,
    warnings: parsed.warnings,
    unknown_types: parsed.unknown_types,
  };
}
