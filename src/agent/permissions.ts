/**
 * The permission engine of Baton's own agent loop (docs/agent.md): every tool call is decided
 * here before it runs, from the session's header alone (its mode, workspace and capabilities),
 * never from anything the model or a stored text says. A denial is a typed reason the model
 * reads as the tool's error; nothing runs.
 */
import type { SessionHeader } from '../core/work/session.ts';

/**
 * What a tool does to the world: read the workspace, write it, run a command, change work
 * state, start a child session (a worker) on an item, or run a static flow for an item.
 */
export type ToolEffect = 'read' | 'write' | 'execute' | 'work' | 'delegate' | 'flow';

export type PermissionDecision =
  | { readonly allowed: true }
  | {
      readonly allowed: false;
      readonly code:
        | 'unknown_tool'
        | 'tool_not_granted'
        | 'read_only'
        | 'no_workspace'
        | 'not_managed'
        | 'nested_child'
        | 'owner_not_granted'
        | 'flow_not_granted';
      readonly reason: string;
    };

/**
 * Whether `tool` may run in this session. Rules, in order:
 * - the tool must be one the loop knows;
 * - when the session's capabilities list tools, the tool must be in that list (the work tool
 *   too: internal state changes are effects and pass the same boundary);
 * - writing needs `capabilities.write`;
 * - reading, writing and running commands need a workspace;
 * - the work tool exists only in managed mode;
 * - delegating (task) needs managed mode, a session that is not itself a child (a child cannot
 *   spawn another), and `worker` among the owners the session's contracts may use;
 * - running a flow needs managed mode (a flow runs only for an item it owns) and at least one
 *   flow in `capabilities.flows` (the executor checks the flow named is one of them).
 */
export function decideToolCall(
  tool: { readonly name: string; readonly effect: ToolEffect } | undefined,
  name: string,
  header: SessionHeader,
): PermissionDecision {
  if (tool === undefined) {
    return { allowed: false, code: 'unknown_tool', reason: `there is no tool named ${JSON.stringify(name)}` };
  }
  const granted = header.capabilities.tools;
  if (granted.length > 0 && !granted.includes(tool.name)) {
    return {
      allowed: false,
      code: 'tool_not_granted',
      reason: `this session may use only ${granted.join(', ')}; ${tool.name} is not granted`,
    };
  }
  if (tool.effect === 'delegate') {
    if (header.work_mode === 'direct') {
      return { allowed: false, code: 'not_managed', reason: 'this session has no managed work to delegate' };
    }
    if (header.parent_session_id !== null) {
      return {
        allowed: false,
        code: 'nested_child',
        reason: `this session is a child of ${header.parent_session_id}; a child cannot start children`,
      };
    }
    if (!header.capabilities.owners.includes('worker')) {
      return {
        allowed: false,
        code: 'owner_not_granted',
        reason: 'this session may not hand items to workers',
      };
    }
    return header.workspace === null
      ? { allowed: false, code: 'no_workspace', reason: 'this session has no workspace to work in' }
      : { allowed: true };
  }
  if (tool.effect === 'flow') {
    if (header.work_mode === 'direct') {
      return { allowed: false, code: 'not_managed', reason: 'a flow runs for an item of managed work' };
    }
    if (header.capabilities.flows.length === 0) {
      return { allowed: false, code: 'flow_not_granted', reason: 'this session may run no flow' };
    }
  }
  if (tool.effect === 'work') {
    return header.work_mode === 'direct'
      ? { allowed: false, code: 'not_managed', reason: 'this session has no managed work' }
      : { allowed: true };
  }
  if (header.workspace === null) {
    return { allowed: false, code: 'no_workspace', reason: 'this session has no workspace to work in' };
  }
  if (tool.effect === 'write' && !header.capabilities.write) {
    return {
      allowed: false,
      code: 'read_only',
      reason: 'this session is read-only: it may not change files',
    };
  }
  return { allowed: true };
}
