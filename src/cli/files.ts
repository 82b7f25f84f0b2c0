/**
 * Files the CLI sends as input (--file, --json-file, --input-file, …), and standard input for
 * `-`. One is read up to the most one request may carry and refused beyond it as
 * payload_too_large, so a huge file or a device that never ends (/dev/zero) gets an answer
 * instead of a crash on a string too long. Its bytes must be UTF-8, as an HTTP body's must:
 * anything else is refused as invalid_input rather than stored with U+FFFD in place of what
 * could not be read.
 */
import { open } from 'node:fs/promises';
import { bodyLimit } from '../core/api.ts';
import { BatonError } from '../core/errors.ts';

function tooLarge(path: string): BatonError {
  return new BatonError(
    'payload_too_large',
    `${path} is over ${bodyLimit} bytes, the most one request may carry`,
    { path, limit: bodyLimit },
  );
}

/**
 * A read's error with the file it read: opening a folder succeeds and reading it fails with
 * EISDIR and no path, which would leave the caller to guess which file was meant.
 */
export function namedFileError(error: unknown, path: string): unknown {
  const failure = error as NodeJS.ErrnoException;
  if (typeof failure !== 'object' || failure === null || typeof failure.code !== 'string') return error;
  failure.path ??= path;
  if (failure.code === 'EISDIR') failure.message = `EISDIR: ${path} is a folder: give a file`;
  return failure;
}

/** UTF-8 bytes as text (a leading byte order mark dropped); invalid_input for any other bytes. */
function utf8(bytes: Uint8Array, path: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new BatonError(
      'invalid_input',
      `${path} is not UTF-8 text: save it as UTF-8 (iconv -t UTF-8 converts it), or give the content another way`,
      { path },
    );
  }
}

/** A file's text, or standard input's for `-`, refused beyond the body limit. */
export async function readInput(path: string): Promise<string> {
  return path === '-' ? readStdin() : readInputFile(path);
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of process.stdin) {
    length += (chunk as Buffer).length;
    // Leaving the loop stops reading: the rest of an endless input is never taken in.
    if (length > bodyLimit) throw tooLarge('standard input');
    chunks.push(chunk as Buffer);
  }
  return utf8(Buffer.concat(chunks), 'standard input');
}

async function readInputFile(path: string): Promise<string> {
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(bodyLimit + 1);
    let length = 0;
    while (length < buffer.length) {
      let bytesRead: number;
      try {
        ({ bytesRead } = await handle.read(buffer, length, buffer.length - length, null));
      } catch (error) {
        throw namedFileError(error, path);
      }
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > bodyLimit) throw tooLarge(path);
    return utf8(buffer.subarray(0, length), path);
  } finally {
    await handle.close();
  }
}
