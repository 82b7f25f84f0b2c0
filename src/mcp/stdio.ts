/**
 * MCP over stdio for agents that start their tools themselves (`baton mcp`): one server for one
 * principal, reading JSON-RPC from stdin and writing to stdout until stdin closes (or stdout
 * can no longer be written). Nothing else may write to stdout; failures that are not
 * BatonErrors are reported on stderr.
 *
 * Each line of stdin is screened before the SDK's transport reads it: the SDK drops a line that
 * is not JSON-RPC without a word (the client would wait forever) and decodes bad UTF-8 into
 * U+FFFD, which would reach the ledger. Here such a line is answered at once, -32700 for text
 * that is not JSON (or not UTF-8), -32600 for JSON that is not a JSON-RPC message, with the
 * request's id when it has one; blank lines are skipped.
 */
import process from 'node:process';
import { Transform, type TransformCallback } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { ErrorCode, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { Principal } from '../app/auth.ts';
import type { AppDeps } from '../app/deps.ts';
import { bodyLimit } from '../http/body.ts';
import { invalidMessage, rpcError } from './guard.ts';
import { connectMcp, createMcpServer } from './server.ts';

function report(error: unknown, tool: string): void {
  const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
  process.stderr.write(`baton mcp: ${tool} failed: ${text}\n`);
}

/** A message is one line of at most this many bytes, as an HTTP body is at most bodyLimit. */
export const maxLineBytes = bodyLimit;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** What to do with one line: pass it on, answer it, or skip it (blank). */
export function screenLine(bytes: Uint8Array): { pass: string } | { answer: JSONRPCMessage } | null {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return { answer: rpcError(null, ErrorCode.ParseError, 'Parse error: the line is not valid UTF-8') };
  }
  if (text.trim() === '') return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { answer: rpcError(null, ErrorCode.ParseError, 'Parse error: the line is not JSON') };
  }
  const invalid = invalidMessage(value, 'each line');
  return invalid ? { answer: invalid } : { pass: text };
}

/** Splits stdin into lines, passes the good ones on and answers the others through `answer`. */
class LineScreen extends Transform {
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  /** Set while the bytes of a line over the limit are thrown away, up to its newline. */
  #skipping = false;
  readonly #answer: (message: JSONRPCMessage) => void;

  constructor(answer: (message: JSONRPCMessage) => void) {
    super();
    this.#answer = answer;
  }

  #line(bytes: Buffer): void {
    const screened = screenLine(bytes);
    if (screened === null) return;
    if ('answer' in screened) this.#answer(screened.answer);
    else this.push(`${screened.pass}\n`);
  }

  #tooLong(): void {
    this.#answer(
      rpcError(null, ErrorCode.InvalidRequest, `Invalid Request: a message is at most ${maxLineBytes} bytes`),
    );
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    let rest = chunk;
    for (let end = rest.indexOf(0x0a); end !== -1; end = rest.indexOf(0x0a)) {
      const tail = rest.subarray(0, end);
      rest = rest.subarray(end + 1);
      if (this.#skipping) {
        this.#skipping = false;
        continue;
      }
      if (this.#pendingBytes + tail.length > maxLineBytes) this.#tooLong();
      else this.#line(Buffer.concat([...this.#pending, tail]));
      this.#pending = [];
      this.#pendingBytes = 0;
    }
    if (!this.#skipping && rest.length > 0) {
      if (this.#pendingBytes + rest.length > maxLineBytes) {
        this.#tooLong();
        this.#skipping = true;
        this.#pending = [];
        this.#pendingBytes = 0;
      } else {
        this.#pending.push(rest);
        this.#pendingBytes += rest.length;
      }
    }
    done();
  }

  override _flush(done: TransformCallback): void {
    if (!this.#skipping && this.#pendingBytes > 0) this.#line(Buffer.concat(this.#pending));
    done();
  }
}

/** Serve until stdin ends (the client went away), stdout fails, or the transport closes. */
export async function runStdioMcp(options: {
  deps: AppDeps;
  principal: Principal;
  /** The workspace of sessions the work tools start; default the working directory. */
  workspace?: string;
}): Promise<void> {
  const server = createMcpServer({
    ...options,
    workspace: options.workspace ?? process.cwd(),
    onError: report,
  });
  const screen = new LineScreen((message) => void transport.send(message).catch(() => undefined));
  const transport = new StdioServerTransport(screen, process.stdout);
  const closed = new Promise<void>((resolve) => {
    // Set before connect: the server keeps this handler and calls it after its own.
    transport.onclose = resolve;
  });
  const stop = (): void => void server.close();
  process.stdin.pipe(screen);
  process.stdin.once('end', stop);
  process.stdin.once('close', stop);
  // A client that closed our stdout can read no answer: every later one would wait for drain.
  // Kept after the server stops: a write already on its way fails too, and must not crash.
  process.stdout.on('error', stop);
  process.stdout.once('close', stop);
  try {
    await connectMcp(server, transport);
    await closed;
  } finally {
    process.stdin.unpipe(screen);
    process.stdin.off('end', stop);
    process.stdin.off('close', stop);
    process.stdout.off('close', stop);
  }
}
