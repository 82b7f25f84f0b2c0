/** The messages between a ThreadedSqliteStore and its writer thread. */
import type { ErrorCode, ErrorData } from '../../core/errors.ts';
import type { StreamKey } from '../../core/ledger/names.ts';
import type { Store } from '../store.ts';

/** Every Store method that writes; the writer thread runs these and nothing else. */
export const writeMethods = [
  'createProject',
  'append',
  'captureSource',
  'retractSource',
  'putPrepared',
  'commitRevision',
  'importEntries',
  'createToken',
  'revokeToken',
  'createSession',
  'deleteSession',
] as const satisfies readonly (keyof Store)[];

export type WriteMethod = (typeof writeMethods)[number];

export type WriterRequest =
  | { readonly id: number; readonly method: WriteMethod; readonly args: readonly unknown[] }
  | { readonly id: number; readonly method: 'close' };

export interface StreamChange {
  readonly stream: StreamKey;
  readonly head: number;
}

/** An error crosses as its fields: a BatonError is rebuilt with its code and data. */
export type WriterError =
  | { readonly baton: true; readonly code: ErrorCode; readonly message: string; readonly data: ErrorData }
  | { readonly baton: false; readonly message: string };

/** Id 0 answers the thread's start: result 'ready', or why the database could not be opened. */
export type WriterReply =
  { readonly id: number; readonly result: unknown } | { readonly id: number; readonly error: WriterError };

/**
 * What the writer thread sends: answers, and the stream changes made since its last message
 * (told to listeners before any of these answers is handed on). The main thread sends an
 * array of WriterRequest: the writes of one of its turns.
 */
export interface WriterBatch {
  readonly replies: readonly WriterReply[];
  readonly changes?: readonly StreamChange[];
}
