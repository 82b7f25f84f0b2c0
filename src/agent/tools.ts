/**
 * The tools of Baton's own agent loop (docs/agent.md): list_files, read_file and write_file in
 * the session's workspace, shell in the read-only sandbox, and, in managed mode, the work tool.
 * Each tool checks its own input with a zod schema (the same schema the model is shown as JSON
 * Schema) and answers a text for the model; a refusal or a failure is an error result the model
 * reads, never an exception out of the loop. The permission engine (permissions.ts) has
 * already allowed the call.
 */
import { constants } from 'node:fs';
import { lstat, mkdir, open, readdir, readlink, type FileHandle } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { z } from 'zod';
import type { AppDeps } from '../app/deps.ts';
import { runFlow } from '../app/flows.ts';
import {
  attachEvidence,
  reassignItem,
  readWork,
  requestInput,
  reviseContract,
  reviseFields,
  transitionItem,
  type WorkSnapshot,
} from '../app/work.ts';
import { scrubSecrets } from '../core/secrets.ts';
import { isHidden, openedInside, privateFiles, realPath, workspaceChecker } from '../app/workspace-paths.ts';
import { isBatonError, type BatonError } from '../core/errors.ts';
import { clipText } from '../core/text.ts';
import { evidenceRefSchema, workIdSchema, workItemStatuses, type Actor } from '../core/work/model.ts';
import { activeContract } from '../core/work/projector.ts';
import type { SessionHeader } from '../core/work/session.ts';
import type { ChatTool } from './models.ts';
import { decideToolCall, type ToolEffect } from './permissions.ts';
import { runSandboxed } from './sandbox.ts';

export interface ToolContext {
  readonly deps: AppDeps;
  readonly project_id: string;
  readonly header: SessionHeader;
  /** The model's identity as the actor of its work changes. */
  readonly actor: Actor;
  readonly shell_timeout_ms: number;
  readonly signal: AbortSignal;
  /** Paths no tool touches besides the ledger's files: Baton's own configuration. */
  readonly protected: readonly string[];
  /** Why writing this absolute path is refused now (managed work's scope), or null when it may be. */
  readonly mayWrite: (path: string) => string | null;
  /** The caller's environment, whose values never reach the ledger. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Runs a child session on an item and answers how it ended (the loop provides it). */
  readonly delegate: (item_id: string, instructions: string) => Promise<ToolOutcome>;
}

export interface ToolOutcome {
  readonly output: string;
  readonly is_error: boolean;
  /** Set when the call changed the workspace: the loop records a checkpoint after it. */
  readonly changed?: string;
}

export interface AgentTool {
  readonly name: string;
  readonly description: string;
  readonly effect: ToolEffect;
  readonly input: z.ZodType;
  run(context: ToolContext, input: never): Promise<ToolOutcome>;
}

/** The most bytes read_file reads, and write_file writes, in one call. */
export const fileBytesLimit = 256 * 1024;
/** The most entries list_files names. */
const listLimit = 500;
/** What the ledger keeps of a shell command's output, per stream. */
const shellOutputBytes = 32 * 1024;

/** A refusal as the model reads it: `refused (code, rule): message`. */
export function refusalText(error: BatonError): string {
  const rule = (error.data as { rule?: unknown } | undefined)?.rule;
  return `refused (${error.code}${typeof rule === 'string' ? `, ${rule}` : ''}): ${error.message}`;
}

const ok = (output: string, changed?: string): ToolOutcome => ({
  output,
  is_error: false,
  ...(changed === undefined ? {} : { changed }),
});
const refused = (output: string): ToolOutcome => ({ output, is_error: true });

const relativePath = z
  .string()
  .min(1)
  .max(4096)
  .describe('a path relative to the workspace (the workspace itself is ".")');

/** Whether a real path lies in a `.git` folder (any case: some file systems ignore it) under `root`. */
function inGit(root: string, real: string): boolean {
  return relative(root, real)
    .split(sep)
    .some((part) => part.toLowerCase() === '.git');
}

/**
 * The workspace path a call names, or a refusal: it must stay inside the workspace once links
 * are followed, and never lie in a `.git` folder (judged on the real path, so a link to `.git`
 * is caught too) or be one of the paths no tool touches (the ledger's files, Baton's own
 * configuration).
 */
function placed(context: ToolContext, path: string): { path: string } | { refusal: string } {
  const workspace = context.header.workspace!;
  const full = resolve(workspace, path);
  if (!workspaceChecker(workspace)(path)) {
    return { refusal: `${JSON.stringify(path)} is outside the workspace` };
  }
  if (inGit(realPath(workspace), realPath(full))) {
    return { refusal: `${JSON.stringify(path)} is inside a .git folder, which tools do not touch` };
  }
  if (isHidden(workspace, [...privateFiles(context.deps), ...context.protected.map(realPath)], path)) {
    return {
      refusal: `${JSON.stringify(path)} is Baton's own (its ledger or configuration), which tools do not touch`,
    };
  }
  return { path: full };
}

/** The real path a handle holds (Linux names it at /proc/self/fd/N), or null where that cannot be told. */
async function heldPath(handle: FileHandle): Promise<string | null> {
  const opened = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => null);
  return opened !== null && isAbsolute(opened) ? opened.replace(/ \(deleted\)$/, '') : null;
}

/** Whether what was opened is still where the call may reach: inside, not in .git, not Baton's own. */
async function openedAllowed(context: ToolContext, handle: FileHandle, path: string): Promise<boolean> {
  const workspace = context.header.workspace!;
  const hidden = [...privateFiles(context.deps), ...context.protected.map(realPath)];
  if (!(await openedInside(workspace, handle, path, hidden))) return false;
  const held = await heldPath(handle);
  return held === null || !inGit(realPath(workspace), held);
}

const listFiles: AgentTool = {
  name: 'list_files',
  effect: 'read',
  description: `List a folder of the workspace: one entry per line, folders ending in "/". At most ${listLimit} entries.`,
  input: z.strictObject({ path: relativePath.default('.') }),
  async run(context, input: { path: string }) {
    const where = placed(context, input.path);
    if ('refusal' in where) return refused(where.refusal);
    try {
      const entries = await readdir(where.path, { withFileTypes: true });
      const names = entries
        .filter((entry) => !('refusal' in placed(context, join(input.path, entry.name))))
        .map((entry) => (entry.isDirectory() ? `${entry.name}/` : entry.name))
        .sort();
      const shown = names.slice(0, listLimit);
      if (names.length > listLimit) shown.push(`… and ${names.length - listLimit} more`);
      return ok(shown.length === 0 ? '(empty)' : shown.join('\n'));
    } catch (error) {
      return refused(`cannot list ${JSON.stringify(input.path)}: ${(error as NodeJS.ErrnoException).code}`);
    }
  },
};

const readFile: AgentTool = {
  name: 'read_file',
  effect: 'read',
  description: `Read a text file of the workspace (at most ${fileBytesLimit / 1024} KiB; longer files are cut).`,
  input: z.strictObject({ path: relativePath }),
  async run(context, input: { path: string }) {
    const where = placed(context, input.path);
    if ('refusal' in where) return refused(where.refusal);
    let handle;
    try {
      // Never blocks: a FIFO or device opened without O_NONBLOCK could hold the loop forever.
      handle = await open(where.path, constants.O_RDONLY | constants.O_NONBLOCK);
    } catch (error) {
      return refused(`cannot read ${JSON.stringify(input.path)}: ${(error as NodeJS.ErrnoException).code}`);
    }
    try {
      // Judged by what was opened: a link swapped after the check above is caught here.
      if (!(await openedAllowed(context, handle, input.path))) {
        return refused(`${JSON.stringify(input.path)} is outside the workspace or not readable`);
      }
      if (!(await handle.stat()).isFile()) return refused(`${JSON.stringify(input.path)} is not a file`);
      const buffer = Buffer.alloc(fileBytesLimit + 1);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
      const bytes = buffer.subarray(0, Math.min(bytesRead, fileBytesLimit));
      if (bytes.includes(0)) return refused(`${JSON.stringify(input.path)} is not a text file`);
      const text = bytes.toString('utf8');
      return ok(bytesRead > fileBytesLimit ? `${text}\n[cut at ${fileBytesLimit} bytes]` : text);
    } finally {
      await handle.close();
    }
  },
};

const writeFile: AgentTool = {
  name: 'write_file',
  effect: 'write',
  description: `Create or replace a text file of the workspace with the given content (at most ${fileBytesLimit / 1024} KiB). Folders are created as needed.`,
  input: z.strictObject({ path: relativePath, content: z.string() }),
  async run(context, input: { path: string; content: string }) {
    const where = placed(context, input.path);
    if ('refusal' in where) return refused(where.refusal);
    const bytes = Buffer.byteLength(input.content, 'utf8');
    if (bytes > fileBytesLimit) {
      return refused(`the content is ${bytes} bytes; write_file writes at most ${fileBytesLimit}`);
    }
    const denied = context.mayWrite(where.path);
    if (denied !== null) return refused(denied);
    const existing = await lstat(where.path).catch(() => null);
    if (existing?.isSymbolicLink()) {
      return refused(`${JSON.stringify(input.path)} is a symbolic link; write the file it points to`);
    }
    if (existing !== null && !existing.isFile()) {
      return refused(`${JSON.stringify(input.path)} exists and is not a file`);
    }
    try {
      await mkdir(dirname(where.path), { recursive: true });
      // Placed again now that the folders exist (a link among them is judged by where it
      // leads), opened without following a last link and without truncating, checked by what
      // was opened, and only then replaced.
      const again = placed(context, input.path);
      if ('refusal' in again) return refused(again.refusal);
      const handle = await open(
        where.path,
        constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK,
        0o644,
      );
      try {
        if (!(await openedAllowed(context, handle, input.path)) || !(await handle.stat()).isFile()) {
          return refused(`${JSON.stringify(input.path)} is outside the workspace or not a file`);
        }
        await handle.truncate(0);
        await handle.write(input.content, 0, 'utf8');
      } finally {
        await handle.close();
      }
    } catch (error) {
      return refused(`cannot write ${JSON.stringify(input.path)}: ${(error as NodeJS.ErrnoException).code}`);
    }
    return ok(`wrote ${bytes} bytes to ${input.path}`, `write_file ${input.path}`);
  },
};

const shell: AgentTool = {
  name: 'shell',
  effect: 'execute',
  description:
    'Run a command with /bin/sh in the workspace, inside a sandbox: the workspace and the machine are read-only (write files with write_file), /tmp is private scratch space, there is no network. Answers the exit code, stdout and stderr.',
  input: z.strictObject({ command: z.string().min(1).max(16_000) }),
  async run(context, input: { command: string }) {
    const result = await runSandboxed(
      {
        command: input.command,
        workspace: context.header.workspace!,
        timeout_ms: context.shell_timeout_ms,
        output_limit_bytes: shellOutputBytes,
        // The ledger, and the workspace's Git configuration, which may hold a remote's credentials.
        hidden: [...privateFiles(context.deps), join(context.header.workspace!, '.git', 'config')],
      },
      { signal: context.signal },
    );
    if (result.status === 'unavailable') {
      return refused(`the sandbox is unavailable, so nothing ran: ${result.detail}`);
    }
    const streams = [
      result.stdout === '' ? '' : `stdout:\n${result.stdout}`,
      result.stderr === '' ? '' : `stderr:\n${result.stderr}`,
      result.truncated ? '[output cut]' : '',
    ].filter((part) => part !== '');
    const head =
      result.status === 'timed_out'
        ? `timed out after ${context.shell_timeout_ms} ms`
        : `exit ${result.exit_code}`;
    return { output: [head, ...streams].join('\n'), is_error: result.status !== 'passed' };
  },
};

/** A revision as the model proposes it: the whole next definition, against the live revision. */
const {
  session_id: _session,
  contract_id: _contract,
  previous_revision: _previous,
  ...reviseShape
} = reviseFields;

const workInput = z.discriminatedUnion('operation', [
  z.strictObject({ operation: z.literal('get') }),
  z.strictObject({
    operation: z.literal('transition'),
    item_id: workIdSchema,
    to: z.enum(workItemStatuses),
    reason: z.string().max(4000).optional(),
  }),
  z.strictObject({
    operation: z.literal('attach_evidence'),
    item_id: workIdSchema,
    tool_use_id: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe('a tool call of this session whose result is the evidence'),
    evidence: evidenceRefSchema.optional().describe('any other evidence reference'),
  }),
  z.strictObject({ operation: z.literal('request_input'), question: z.string().min(1).max(4000) }),
  z.strictObject({ operation: z.literal('revise'), ...reviseShape }),
]);
type WorkInput = z.output<typeof workInput>;

/**
 * The live contract's state for the model: the control block (ids, statuses, what stopping
 * needs; never tool output) and, for `get`, the contract's definition as JSON, which a revise
 * restates with its changes. Stored text, scrubbed: data, never instruction.
 */
function workText(snapshot: WorkSnapshot, definition = false): string {
  const block = snapshot.control_block ?? 'No work contract is live in this session.';
  const contract = snapshot.contract?.contract;
  if (!definition || !contract) return block;
  const { objective, constraints, assumptions, criteria, items } = contract;
  return `${block}\nThe contract's definition (restate it whole, changed, to revise):\n${
    scrubSecrets(JSON.stringify({ objective, constraints, assumptions, criteria, items })).text
  }`;
}

const work: AgentTool = {
  name: 'work',
  effect: 'work',
  description:
    'Managed work: get the contract; transition an item (ready → running, running → blocked, running → ready_for_verification, blocked → ready); attach evidence to an item (a tool call of yours by tool_use_id); revise the contract (restate its whole definition, changed: objective, items, criteria, constraints, assumptions, and a reason); request input from the person. Only the verifier marks items succeeded. Calling it grants no tool, network, credential or execution authority.',
  input: workInput,
  async run(context, input: WorkInput) {
    const { deps, project_id, actor } = context;
    const session_id = context.header.session_id;
    try {
      if (input.operation === 'get')
        return ok(workText(await readWork(deps, project_id, { session_id }), true));
      const contract = activeContract((await readWork(deps, project_id, { session_id })).projection);
      if (!contract) return refused('no work contract is live in this session');
      const which = { session_id, contract_id: contract.contract_id, revision: contract.revision };
      let after: WorkSnapshot;
      if (input.operation === 'transition') {
        // The model takes up an item a worker had: the item is its own again first (while it
        // is not running, so a refusal changes nothing), then it runs: its writes count for it
        // and no earlier worker's end settles it.
        const held = contract.items.find((item) => item.item_id === input.item_id);
        if (input.to === 'running' && held !== undefined && held.child_session_id !== null) {
          await reassignItem(
            deps,
            project_id,
            {
              session_id,
              contract_id: contract.contract_id,
              item_id: input.item_id,
              owner: { type: 'parent_agent' },
            },
            actor,
          );
        }
        after = await transitionItem(
          deps,
          project_id,
          {
            ...which,
            item_id: input.item_id,
            to: input.to,
            ...(input.reason ? { reason: input.reason } : {}),
          },
          actor,
        );
      } else if (input.operation === 'attach_evidence') {
        const evidence =
          input.evidence ??
          (input.tool_use_id === undefined
            ? undefined
            : { type: 'tool_result' as const, session_id, tool_use_id: input.tool_use_id });
        if (evidence === undefined) return refused('name the evidence: tool_use_id, or evidence');
        after = await attachEvidence(deps, project_id, { ...which, item_id: input.item_id, evidence }, actor);
      } else if (input.operation === 'revise') {
        const { operation: _operation, ...definition } = input;
        after = await reviseContract(
          deps,
          project_id,
          {
            ...definition,
            session_id,
            contract_id: contract.contract_id,
            previous_revision: contract.revision,
          },
          actor,
        );
      } else {
        after = await requestInput(deps, project_id, { ...which, question: input.question }, actor);
      }
      return ok(workText(after));
    } catch (error) {
      if (isBatonError(error)) return refused(refusalText(error));
      throw error;
    }
  },
};

const task: AgentTool = {
  name: 'task',
  effect: 'delegate',
  description:
    'Hand a ready item of the contract to a worker: a child session that works only that item, with no more permissions than yours (read-only for a readonly item), and cannot start children of its own. Several task calls in one turn run at the same time. Answers how the child ended; a completed child puts the item up for verification, any other end fails it.',
  input: z.strictObject({
    item_id: workIdSchema,
    instructions: z.string().max(8000).default('').describe('what the worker should know beyond the item'),
  }),
  run: (context, input: { item_id: string; instructions: string }) =>
    context.delegate(input.item_id, input.instructions),
};

const flow: AgentTool = {
  name: 'flow',
  effect: 'flow',
  description:
    "Run a static flow (a node graph of commands baton.toml declares, run in the read-only sandbox) for the ready item of the contract it owns (owner flow:NAME). The flow moves the item to running, attaches each node's receipt as evidence, and at the end puts it up for verification (every node passed) or fails it. Answers each node's status.",
  input: z.strictObject({ flow: workIdSchema, item_id: workIdSchema }),
  run: async (context, input: { flow: string; item_id: string }) => {
    try {
      const result = await runFlow(
        context.deps,
        context.project_id,
        { session_id: context.header.session_id, flow: input.flow, item_id: input.item_id },
        { signal: context.signal, env: context.env },
      );
      return {
        output: [
          `flow ${result.flow} run ${result.run_id} ${result.status}`,
          ...result.nodes.map((node) => `- ${node.node_id}: ${node.status}: ${node.reason}`),
          `item ${JSON.stringify(input.item_id)} is now ${result.item_status ?? 'unknown'}`,
        ].join('\n'),
        is_error: result.status !== 'completed',
      };
    } catch (error) {
      if (isBatonError(error)) return { output: refusalText(error), is_error: true };
      // A run that broke down has left its item interrupted (retry-safe): the model may run it again.
      return { output: `the flow could not run (${String(error)}); the item is interrupted`, is_error: true };
    }
  },
};

/** Every tool the loop knows, by name. */
export const agentTools: ReadonlyMap<string, AgentTool> = new Map(
  [listFiles, readFile, writeFile, shell, work, task, flow].map((tool) => [tool.name, tool]),
);

/** The tools a session is offered: those the permission engine would allow it (a call is decided again). */
export function offeredTools(header: SessionHeader): AgentTool[] {
  return [...agentTools.values()].filter((tool) => decideToolCall(tool, tool.name, header).allowed);
}

/** A tool as the model is shown it. */
export function chatTool(tool: AgentTool): ChatTool {
  return {
    name: tool.name,
    description: tool.description,
    input_schema: z.toJSONSchema(tool.input, { io: 'input' }),
  };
}

/** The text a tool's output is cut to in the model's view; the ledger keeps more. */
export function forModel(output: string, chars: number): string {
  return output.length > chars
    ? `${clipText(output, chars)}\n[cut: ${output.length} characters in all]`
    : output;
}
