/**
 * Protocol faults answered as protocol errors, before the SDK sees them. The SDK validates a
 * request's params with zod and answers a failure as -32603 (internal error) whose message is
 * the zod issue list, and it answers an unknown tool as a tool result. Here a request whose
 * params do not fit its method (arguments null, a name that is not a string) and a call of a
 * tool this server does not have are -32602 (invalid params) with one short, readable line,
 * as MCP asks; everything else passes through unchanged.
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  InitializeRequestSchema,
  isJSONRPCRequest,
  ListToolsRequestSchema,
  PingRequestSchema,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';

/** The methods this server serves, each with the schema its request must fit. */
const requestSchemas: Readonly<Record<string, z.ZodType>> = {
  initialize: InitializeRequestSchema,
  ping: PingRequestSchema,
  'tools/list': ListToolsRequestSchema,
  'tools/call': CallToolRequestSchema,
};

/** Long enough to name a tool; an unknown name is cut here before it is echoed. */
const maxEchoed = 100;

function echoed(text: string): string {
  return text.length > maxEchoed ? `${text.slice(0, maxEchoed)}…` : text;
}

/** Why a request is a protocol fault, or undefined when it may go on to the server. */
export function protocolFault(message: JSONRPCMessage, toolNames: ReadonlySet<string>): string | undefined {
  if (!isJSONRPCRequest(message)) return undefined;
  const schema = requestSchemas[message.method];
  if (!schema) return undefined;
  const parsed = schema.safeParse(message);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = issue.path.length > 0 ? issue.path.map(String).join('.') : 'the request';
    return `Invalid params: ${where}: ${issue.message}`;
  }
  if (message.method !== 'tools/call') return undefined;
  const params = message.params as { name: string; arguments?: unknown };
  if (!toolNames.has(params.name))
    return `Invalid params: unknown tool ${JSON.stringify(echoed(params.name))}`;
  // The SDK's copy of the arguments would turn this own key into the object's prototype, and
  // the tool's strict schema would never see it; the REST API refuses it as an unknown field.
  if (
    typeof params.arguments === 'object' &&
    params.arguments !== null &&
    Object.hasOwn(params.arguments, '__proto__')
  )
    return 'Invalid params: arguments: unknown field "__proto__"';
  return undefined;
}

/**
 * Answer protocol faults on transport itself; call after the server connected to it (which set
 * its onmessage).
 */
export function guardProtocol(transport: Transport, toolNames: ReadonlySet<string>): void {
  const inner = transport.onmessage;
  transport.onmessage = (message, extra) => {
    const fault = protocolFault(message, toolNames);
    if (fault !== undefined && isJSONRPCRequest(message)) {
      void transport
        .send({ jsonrpc: '2.0', id: message.id, error: { code: ErrorCode.InvalidParams, message: fault } })
        .catch((error: unknown) => transport.onerror?.(error as Error));
      return;
    }
    inner?.(message, extra);
  };
}
