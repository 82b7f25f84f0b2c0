/**
 * MCP over stdio for agents that start their tools themselves (`baton mcp`): one server for one
 * principal, reading JSON-RPC from stdin and writing to stdout until stdin closes. Nothing else
 * may write to stdout; failures that are not BatonErrors are reported on stderr.
 */
import process from 'node:process';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Principal } from '../app/auth.ts';
import type { AppDeps } from '../app/deps.ts';
import { connectMcp, createMcpServer } from './server.ts';

function report(error: unknown, tool: string): void {
  const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
  process.stderr.write(`baton mcp: ${tool} failed: ${text}\n`);
}

/** Serve until stdin ends (the client went away) or the transport closes; then resolve. */
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
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    // Set before connect: the server keeps this handler and calls it after its own.
    transport.onclose = resolve;
  });
  const stop = (): void => void server.close();
  process.stdin.once('end', stop);
  process.stdin.once('close', stop);
  try {
    await connectMcp(server, transport);
    await closed;
  } finally {
    process.stdin.off('end', stop);
    process.stdin.off('close', stop);
  }
}
