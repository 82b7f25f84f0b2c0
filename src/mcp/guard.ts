/**
 * Protocol faults answered as protocol errors, before the SDK sees them. The SDK validates a
 * request's params with zod and answers a failure as -32603 (internal error) whose message is
 * the zod issue list, and it answers an unknown tool as a tool result. Here a request whose
 * params do not fit its method (arguments null, a name that is not a string) and a call of a
 * tool this server does not have are -32602 (invalid params) with one short, readable line,
 * as MCP asks; a task-augmented call, which this server does not offer, is -32601; a request other than ping before initialize is refused; everything else passes
 * through unchanged.
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  InitializeRequestSchema,
  isJSONRPCRequest,
  JSONRPCMessageSchema,
  ListToolsRequestSchema,
  PingRequestSchema,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import { echoed } from '../core/text.ts';

/** The methods this server serves, each with the schema its request must fit. */
const requestSchemas: Readonly<Record<string, z.ZodType>> = {
  initialize: InitializeRequestSchema,
  ping: PingRequestSchema,
  'tools/list': ListToolsRequestSchema,
  'tools/call': CallToolRequestSchema,
};

/** A JSON-RPC error answer; an id that is not a string or a finite number becomes null. */
export function rpcError(id: unknown, code: number, message: string): JSONRPCMessage {
  const usable = typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id));
  return { jsonrpc: '2.0', id: usable ? id : null, error: { code, message } } as JSONRPCMessage;
}

/**
 * The -32600 answer to a parsed value that is not one JSON-RPC 2.0 message (a request, a
 * notification or a response), carrying its id when it has a usable one; undefined for a message.
 */
export function invalidMessage(value: unknown, what = 'a message'): JSONRPCMessage | undefined {
  if (JSONRPCMessageSchema.safeParse(value).success) return undefined;
  const id = typeof value === 'object' && value !== null ? (value as { id?: unknown }).id : undefined;
  return rpcError(
    id,
    ErrorCode.InvalidRequest,
    `Invalid Request: ${what} must be one JSON-RPC 2.0 message (jsonrpc "2.0", a method, an id for a request)`,
  );
}

/** The code Streamable HTTP answers a request without a session with, used alike on stdio. */
const notInitialized = -32000;

export interface ProtocolFault {
  readonly code: number;
  readonly message: string;
}

/** Why a request is a protocol fault, or undefined when it may go on to the server. */
export function protocolFault(
  message: JSONRPCMessage,
  toolNames: ReadonlySet<string>,
): ProtocolFault | undefined {
  if (!isJSONRPCRequest(message)) return undefined;
  const schema = requestSchemas[message.method];
  if (!schema) return undefined;
  const invalid = (text: string): ProtocolFault => ({
    code: ErrorCode.InvalidParams,
    message: `Invalid params: ${text}`,
  });
  const parsed = schema.safeParse(message);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = issue.path.length > 0 ? issue.path.map(String).join('.') : 'the request';
    return invalid(`${where}: ${issue.message}`);
  }
  if (message.method !== 'tools/call') return undefined;
  const params = message.params as { name: string; arguments?: unknown; task?: unknown };
  if (!toolNames.has(params.name)) return invalid(`unknown tool ${JSON.stringify(echoed(params.name))}`);
  // The SDK's copy of the arguments would turn this own key into the object's prototype, and
  // the tool's strict schema would never see it; the REST API refuses it as an unknown field.
  if (
    typeof params.arguments === 'object' &&
    params.arguments !== null &&
    Object.hasOwn(params.arguments, '__proto__')
  )
    return invalid('arguments: unknown field "__proto__"');
  // No tool here supports tasks (the server declares no tasks capability): as for a tool whose
  // taskSupport is "forbidden", -32601. The SDK answered -32603, as if the server had failed.
  if (params.task !== undefined)
    return {
      code: ErrorCode.MethodNotFound,
      message:
        'Method not found: tools/call with a task: this server runs every tool call at once; call it without params.task',
    };
  return undefined;
}

/**
 * Answer protocol faults on transport itself; call after the server connected to it (which set
 * its onmessage). Until an initialize request has passed, only ping is served besides it: MCP's
 * lifecycle makes initialize the first interaction (Streamable HTTP enforces that by its
 * session id; stdio has only this).
 */
export function guardProtocol(transport: Transport, toolNames: ReadonlySet<string>): void {
  const inner = transport.onmessage;
  let initialized = false;
  const refuse = (id: JSONRPCMessage & { id: unknown }, code: number, message: string): void => {
    void transport
      .send(rpcError(id.id, code, message))
      .catch((error: unknown) => transport.onerror?.(error as Error));
  };
  transport.onmessage = (message, extra) => {
    if (isJSONRPCRequest(message)) {
      const fault = protocolFault(message, toolNames);
      if (fault !== undefined) return refuse(message, fault.code, fault.message);
      if (message.method === 'initialize') initialized = true;
      else if (!initialized && message.method !== 'ping')
        return refuse(
          message,
          notInitialized,
          'Bad Request: not initialized; send an initialize request first',
        );
    }
    inner?.(message, extra);
  };
}
