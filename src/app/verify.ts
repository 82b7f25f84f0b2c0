/**
 * The verifier: runs a contract's criteria in the spec's order (deterministic checks, which
 * re-run every earlier pass as a regression obligation; then evidence already in the ledger:
 * tool results, flow and external receipts; then semantic criteria, which need a judge), records
 * each verdict with its evidence and the workspace checkpoint it was taken at, moves verified
 * items to succeeded (or back to ready with the findings), and completes the contract only when
 * every required item and criterion passed. It never writes to the workspace it evaluates:
 * shell criteria run only in the read-only sandbox, and output is scrubbed before it is stored.
 */
import { constants as fsConstants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { resolve } from 'node:path';
import {
  commandOutput,
  describeLimitHit,
  runSandboxed,
  type SandboxLimits,
  type SandboxOptions,
} from '../agent/sandbox.ts';
import { BatonError } from '../core/errors.ts';
import { uuidv7Generator } from '../core/ids.ts';
import { defaultWorkConfig } from '../core/work/config.ts';
import { scrubSecrets, secretValuesFromEnv } from '../core/secrets.ts';
import { clipText } from '../core/text.ts';
import type {
  CriterionResult,
  EvidenceRef,
  Verdict,
  WorkCriterion,
  WorkEventInput,
} from '../core/work/model.ts';
import { evidenceRefText } from '../core/work/describe.ts';
import { flowCompletedPurpose } from '../core/work/flows.ts';
import type { JudgeEvidence, JudgeRequest, SemanticJudge } from '../core/work/judge.ts';
import {
  activeContract,
  completionBlockers,
  type ContractProjection,
  type WorkItemState,
} from '../core/work/projector.ts';
import { sessionSummaryText, summarizeSession } from '../core/work/summary.ts';
import { itemDone } from '../core/work/transitions.ts';
import { sessionEntrySchemas } from '../core/work/session.ts';
import { itemChange, workEvent } from '../core/work/runtime.ts';
import type { Store } from '../store/store.ts';
import type { AppDeps } from './deps.ts';
import { positionOf } from './work-evidence.ts';
import {
  commitWork,
  readSessionHeader,
  readWork,
  sessionStream,
  type SessionEntryInput,
  type WorkSnapshot,
} from './work.ts';
import {
  isHidden,
  openedInside,
  privateFiles,
  usableWorkspaceCheckpoint,
  workspaceChecker,
} from './workspace-paths.ts';

export interface VerifyOptions {
  /** The workspace to check; default the one in the session header. */
  readonly workspace?: string;
  readonly timeout_ms?: number;
  readonly output_limit_bytes?: number;
  /** A shell criterion's resource limits, over the sandbox's defaults (docs/sandbox.md). */
  readonly limits?: Partial<SandboxLimits>;
  readonly sandbox?: SandboxOptions;
  /** The caller's environment, whose values never reach the ledger; default process.env. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** The read-only judge of semantic criteria; default deps.judge. Without one they stay unknown. */
  readonly judge?: SemanticJudge;
  /** Told as each criterion starts, in the order they run: a shell criterion can take minutes. */
  readonly onCriterion?: (progress: CriterionProgress) => void;
  /**
   * The caller gave up (an MCP client cancelled, or its connection closed): the running shell
   * criterion is killed, no other starts, nothing is recorded, and verifyWork throws.
   */
  readonly signal?: AbortSignal;
}

export interface CriterionProgress {
  /** 1-based, of total. */
  readonly index: number;
  readonly total: number;
  readonly criterion_id: string;
  readonly kind: WorkCriterion['kind']['type'];
}

export interface CriterionVerdict {
  readonly criterion_id: string;
  readonly kind: WorkCriterion['kind']['type'];
  readonly verdict: Verdict;
  readonly reason: string;
  readonly evidence: readonly EvidenceRef[];
}

export interface VerificationReport {
  readonly session_id: string;
  readonly contract_id: string;
  readonly revision: number;
  readonly checkpoint: string | null;
  readonly verdicts: readonly CriterionVerdict[];
  /** The contract's status after verification: completed only when everything required passed. */
  readonly contract_status: string;
  readonly snapshot: WorkSnapshot;
}

export const verifyDefaults = { timeout_ms: 60_000, output_limit_bytes: 64 * 1024 } as const;
/** The longest timeout a timer can hold (2^31 - 1 ms); Node turns a longer one into 1 ms. */
export const maxTimeoutMs = 2_147_483_647;
const verifier = { type: 'verifier', id: 'baton' } as const;
const fileLimit = 8 * 1024 * 1024;

/** The order of the spec: deterministic checks, then ledger evidence, then the judge. */
const stage: Record<WorkCriterion['kind']['type'], number> = {
  shell: 1,
  file_exists: 1,
  file_contains: 1,
  tool_succeeded: 2,
  flow_completed: 2,
  external_receipt: 2,
  semantic: 3,
};

interface Check {
  readonly verdict: Verdict;
  readonly reason: string;
  readonly evidence: EvidenceRef[];
  /** Output to keep as a tool_result entry (scrubbed), cited by the verdict. */
  readonly output?: string;
}

interface SessionFacts {
  readonly toolResults: {
    position: number;
    tool: string;
    tool_use_id: string;
    is_error: boolean;
    /** Its output, cut to what a judge may read. */
    output: string;
  }[];
  readonly receipts: { position: number; purpose: string; details: Record<string, unknown> }[];
}

async function readFacts(
  deps: AppDeps,
  project_id: string,
  session_id: string,
  /** The tool results whose output a judge may read; the others are kept without it. */
  keepOutput: ReadonlySet<string>,
): Promise<SessionFacts> {
  const facts: SessionFacts = { toolResults: [], receipts: [] };
  for await (const entry of deps.store.readStream(sessionStream(project_id, session_id), {
    kinds: ['tool_result', 'receipt'],
  })) {
    if (entry.type === 'tool_result') {
      const parsed = sessionEntrySchemas.tool_result.safeParse(entry.content);
      if (parsed.success && !parsed.data.tool.startsWith('baton.verify')) {
        facts.toolResults.push({
          position: entry.position,
          tool: parsed.data.tool,
          tool_use_id: parsed.data.tool_use_id,
          is_error: parsed.data.is_error,
          output: keepOutput.has(parsed.data.tool_use_id)
            ? clipText(parsed.data.output, evidenceTextChars)
            : '',
        });
      }
    } else {
      const parsed = sessionEntrySchemas.receipt.safeParse(entry.content);
      if (parsed.success)
        facts.receipts.push({
          position: entry.position,
          purpose: parsed.data.purpose,
          details: parsed.data.details,
        });
    }
  }
  return facts;
}

/**
 * A file criterion judged by what its path leads to, links followed: only a regular file
 * counts. It is opened without blocking (a pipe would wait for a writer forever), its type and
 * size are taken from the open handle, not the name, and at most the cap is read, so a link to
 * a device, a huge file or one that grows while read is answered, never read without end.
 */
async function checkFile(
  workspace: string | null,
  hidden: readonly string[],
  path: string,
  pattern?: string,
): Promise<Check> {
  if (workspace === null)
    return { verdict: 'unavailable', reason: 'the session has no workspace to check', evidence: [] };
  const outside: Check = { verdict: 'failed', reason: `${path} is outside the workspace`, evidence: [] };
  if (!workspaceChecker(workspace)(path)) return outside;
  if (isHidden(workspace, hidden, path)) {
    return {
      verdict: 'failed',
      reason: `${path} is Baton's own database, which criteria never read`,
      evidence: [],
    };
  }
  const notFile: Check = { verdict: 'failed', reason: `${path} is not a file`, evidence: [] };
  let handle: FileHandle;
  try {
    handle = await open(resolve(workspace, path), fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR')
      return {
        verdict: 'failed',
        reason: `${path} does not exist`,
        evidence: [],
        output: `${path}: no such file`,
      };
    if (code === 'EISDIR' || code === 'ELOOP' || code === 'ENXIO') return notFile;
    return { verdict: 'unknown', reason: `${path} cannot be read (${code ?? 'error'})`, evidence: [] };
  }
  try {
    // The name was checked before the open; what was opened is checked too, so a link swapped
    // in between to lead out of the workspace is not read.
    if (!(await openedInside(workspace, handle, path, hidden))) return outside;
    const info = await handle.stat();
    if (!info.isFile()) return notFile;
    if (pattern === undefined)
      return {
        verdict: 'passed',
        reason: `${path} exists`,
        evidence: [],
        output: `${path}: ${info.size} bytes`,
      };
    const over: Check = {
      verdict: 'unknown',
      reason: `${path} is over ${fileLimit} bytes; not read`,
      evidence: [],
    };
    if (info.size > fileLimit) return over;
    const buffer = Buffer.alloc(Math.min(info.size, fileLimit) + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > fileLimit) return over;
      if (length === buffer.length) break;
    }
    const text = buffer.toString('utf8', 0, length);
    const found = text.includes(pattern);
    return {
      verdict: found ? 'passed' : 'failed',
      reason: found ? `${path} contains the pattern` : `${path} does not contain the pattern`,
      evidence: [],
      output: `${path}: ${length} bytes; pattern ${found ? 'found' : 'not found'}`,
    };
  } finally {
    await handle.close();
  }
}

/** How long a shell criterion may run: its own timeout, or what is left of the budget. */
interface ShellLimit {
  readonly timeout_ms: number;
  /** Set when the budget, not the criterion's timeout, is the limit: said in the reason. */
  readonly budget_ms?: number;
}

async function checkShell(
  workspace: string | null,
  hidden: readonly string[],
  command: string,
  limit: ShellLimit,
  options: VerifyOptions,
): Promise<Check> {
  if (workspace === null)
    return {
      verdict: 'unavailable',
      reason: 'the session has no workspace to run the command in',
      evidence: [],
    };
  const result = await runSandboxed(
    {
      command,
      workspace,
      hidden,
      timeout_ms: limit.timeout_ms,
      output_limit_bytes: options.output_limit_bytes ?? verifyDefaults.output_limit_bytes,
      ...(options.limits === undefined ? {} : { limits: options.limits }),
    },
    { ...options.sandbox, signal: options.signal },
  );
  if (result.status === 'unavailable') {
    return { verdict: 'unavailable', reason: `sandbox_unavailable: ${result.detail}`, evidence: [] };
  }
  const output = commandOutput(command, result);
  if (result.status === 'timed_out')
    return {
      verdict: 'timed_out',
      reason:
        limit.budget_ms === undefined
          ? `killed after ${limit.timeout_ms} ms`
          : `killed after ${limit.timeout_ms} ms: ${budgetSpent(limit.budget_ms)}`,
      evidence: [],
      output,
    };
  const hit = result.status === 'failed' && result.limit_hit ? `: ${describeLimitHit(result.limit_hit)}` : '';
  return { verdict: result.status, reason: `exit code ${result.exit_code}${hit}`, evidence: [], output };
}

function checkTool(session_id: string, tool: string, facts: SessionFacts): Check {
  const results = facts.toolResults.filter((result) => result.tool === tool);
  const last = results.at(-1);
  if (!last)
    return { verdict: 'unknown', reason: `tool ${tool} has no result in this session`, evidence: [] };
  const evidence: EvidenceRef[] = [{ type: 'tool_result', session_id, tool_use_id: last.tool_use_id }];
  return last.is_error
    ? { verdict: 'failed', reason: `the latest result of tool ${tool} is an error`, evidence }
    : { verdict: 'passed', reason: `the latest result of tool ${tool} succeeded`, evidence };
}

/** The items of a contract a flow owns: only their linked runs complete the flow for it. */
function flowItems(contract: ContractProjection, flow: string): Set<string> {
  // Owned now, as the projector holds it: the same owner the flow and the projector go by.
  return new Set(
    contract.items
      .filter((item) => item.owner.type === 'flow' && item.owner.name === flow)
      .map((item) => item.item_id),
  );
}

function checkReceipt(
  session_id: string,
  facts: SessionFacts,
  match: (receipt: SessionFacts['receipts'][number]) => boolean,
  what: string,
  passes: (details: SessionFacts['receipts'][number]['details']) => boolean = (details) =>
    details.status !== 'failed',
): Check {
  const receipt = facts.receipts.filter(match).at(-1);
  if (!receipt) return { verdict: 'unknown', reason: `no ${what} receipt in this session`, evidence: [] };
  const evidence: EvidenceRef[] = [{ type: 'receipt', session_id, entry_id: String(receipt.position) }];
  const failed = !passes(receipt.details);
  return {
    verdict: failed ? 'failed' : 'passed',
    reason: `${what} receipt at position ${receipt.position}${failed ? ' reports failure' : ''}`,
    evidence,
  };
}

function throwIfCancelled(signal: AbortSignal | undefined): void {
  if (signal?.aborted) {
    throw new BatonError(
      'unavailable',
      'the verification was cancelled by its caller; nothing was recorded',
      {
        rule: 'cancelled',
      },
    );
  }
}

function budgetSpent(budget_ms: number): string {
  return `the verification's budget of ${budget_ms} ms ran out`;
}

/** How much of one piece of evidence a judge may read, before its own budget cuts it. */
const evidenceTextChars = 64 * 1024;
/** How long reading the workspace's changes for a judge may take. */
export const diffTimeoutMs = 15_000;
/** Why the changes were not read, by the exit code the script below ends with. */
const gitRefusals: Readonly<Record<number, string>> = {
  3: 'the workspace is not a Git work tree',
  4: 'the Git work tree is not the workspace (core.worktree or a .git file points elsewhere)',
  5: 'the repository configures filters, which Baton does not run',
};

/**
 * The workspace's changes, read in the read-only sandbox: `git status`, then `git diff HEAD`
 * (the work tree against the last commit). Git reads no system or user configuration, runs no
 * hook, file-system monitor, external diff or text conversion, and takes no lock; a repository
 * that configures filters (which git would run on its files), or whose work tree is elsewhere,
 * is not read. The sandbox (read-only, no network) is the boundary; these keep the diff honest.
 */
const gitChanges = [
  'export GIT_OPTIONAL_LOCKS=0 GIT_CONFIG_NOSYSTEM=1',
  'g() { git -c core.fsmonitor=false -c core.hooksPath=/dev/null -c safe.directory=\'*\' "$@"; }',
  'g rev-parse --is-inside-work-tree >/dev/null 2>&1 || exit 3',
  '[ "$(g rev-parse --show-toplevel)" = "$(pwd -P)" ] || exit 4',
  "! g config --local --includes --get-regexp '^filter[.]' >/dev/null || exit 5",
  'g status --porcelain=v1 --untracked-files=all',
  'echo',
  'g diff HEAD --no-ext-diff --no-textconv --no-color 2>/dev/null || g diff --no-ext-diff --no-textconv --no-color',
].join('\n');

export async function workspaceChanges(
  workspace: string | null,
  hidden: readonly string[],
  limits: { timeout_ms: number; signal: AbortSignal | undefined; sandbox: SandboxOptions | undefined },
): Promise<{ diff: string | null; note: string }> {
  if (workspace === null) return { diff: null, note: 'the session has no workspace' };
  const result = await runSandboxed(
    {
      command: gitChanges,
      workspace,
      hidden,
      timeout_ms: limits.timeout_ms,
      output_limit_bytes: evidenceTextChars,
    },
    { ...limits.sandbox, signal: limits.signal },
  );
  switch (result.status) {
    case 'unavailable':
      return { diff: null, note: `sandbox_unavailable: ${result.detail}` };
    case 'timed_out':
      return { diff: null, note: `git did not answer within ${limits.timeout_ms} ms` };
    case 'failed':
      return {
        diff: null,
        note: gitRefusals[result.exit_code] ?? `git failed (exit code ${result.exit_code})`,
      };
    case 'passed':
      return { diff: result.stdout + (result.truncated ? '\n[output truncated]' : ''), note: '' };
  }
}

/** The tool results the items naming a semantic criterion cite in this session: what a judge reads. */
function judgedOutputs(contract: ContractProjection, session_id: string): Set<string> {
  const semantic = new Set(
    contract.contract.criteria
      .filter((criterion) => criterion.kind.type === 'semantic')
      .map((criterion) => criterion.criterion_id),
  );
  const cited = new Set<string>();
  for (const definition of contract.contract.items) {
    if (!definition.criterion_ids.some((id) => semantic.has(id))) continue;
    const state = contract.items.find((item) => item.item_id === definition.item_id);
    for (const ref of state?.evidence ?? []) {
      if (ref.type === 'tool_result' && ref.session_id === session_id) cited.add(ref.tool_use_id);
    }
  }
  return cited;
}

/** A session's entry as a judge reads it: its type and content; empty when missing or retracted. */
async function ledgerEntryText(
  deps: AppDeps,
  project_id: string,
  session_id: string,
  entry_id: string,
): Promise<string> {
  const position = positionOf(entry_id);
  if (position === null) return '';
  const range = { from: position, to: position };
  for await (const entry of deps.store.readStream(sessionStream(project_id, session_id), range)) {
    if (entry.retracted !== null) return '';
    return clipText(`${entry.type}: ${JSON.stringify(entry.content)}`, evidenceTextChars);
  }
  return '';
}

/** A child session as a judge reads it: its end and its contract's summary; empty when unreadable. */
async function childSessionText(deps: AppDeps, project_id: string, child: string): Promise<string> {
  try {
    const work = await readWork(deps, project_id, { session_id: child });
    return sessionSummaryText(
      summarizeSession(
        { session_id: child, created_at: '', position: work.position },
        null,
        work.projection,
        work.terminal,
      ),
    );
  } catch (error) {
    if (error instanceof BatonError) return '';
    throw error;
  }
}

/**
 * What a judge is shown of a semantic criterion: the objective, the items that name it, the
 * verdicts taken before it, what those items' evidence resolves to in this session's ledger, and
 * the workspace's changes. Every text is scrubbed of the caller's secret values first.
 */
async function judgeRequest(
  context: {
    deps: AppDeps;
    project_id: string;
    session_id: string;
    contract: ContractProjection;
    criterion: JudgeRequest['criterion'];
    facts: SessionFacts;
    secrets: readonly string[];
    /** The workspace's changes, read once per verification: the sandbox keeps them from moving. */
    changes: () => Promise<{ diff: string | null; note: string }>;
  },
  earlier: readonly { criterion: WorkCriterion; check: Check }[],
): Promise<JudgeRequest> {
  const { deps, project_id, session_id, contract, criterion, facts } = context;
  const scrub = (text: string) => scrubSecrets(text, { values: context.secrets }).text;
  const named = contract.contract.items.filter((item) => item.criterion_ids.includes(criterion.criterion_id));
  const evidence: JudgeEvidence[] = [];
  for (const definition of named) {
    const state = contract.items.find((item) => item.item_id === definition.item_id);
    for (const ref of state?.evidence ?? []) {
      let text = '';
      if (ref.type === 'tool_result' && ref.session_id === session_id) {
        const found = facts.toolResults.findLast((result) => result.tool_use_id === ref.tool_use_id);
        if (found) text = `${found.tool}${found.is_error ? ' (an error)' : ''}:\n${found.output}`;
      } else if (ref.type === 'receipt' && ref.session_id === session_id) {
        const found = facts.receipts.find((receipt) => String(receipt.position) === ref.entry_id);
        if (found) text = `${found.purpose}: ${JSON.stringify(found.details)}`;
      } else if (ref.type === 'ledger_entry' && ref.session_id === session_id) {
        text = await ledgerEntryText(deps, project_id, session_id, ref.entry_id);
      } else if (ref.type === 'child_session') {
        // Delegated work: how the child ended and what its own contract says, not its prose.
        text = await childSessionText(deps, project_id, ref.session_id);
      }
      evidence.push({ item_id: definition.item_id, ref: scrub(evidenceRefText(ref)), text: scrub(text) });
    }
  }
  const changes = await context.changes();
  return {
    criterion: {
      ...criterion,
      statement: scrub(criterion.statement),
      kind: { ...criterion.kind, statement: scrub(criterion.kind.statement) },
    },
    objective: scrub(contract.contract.objective),
    items: named.map((definition) => ({
      item_id: definition.item_id,
      title: scrub(definition.title),
      status: contract.items.find((item) => item.item_id === definition.item_id)?.status ?? 'proposed',
    })),
    earlier: earlier.map(({ criterion: done, check }) => ({
      criterion_id: done.criterion_id,
      verdict: check.verdict,
      reason: scrub(check.reason),
    })),
    evidence,
    workspace_diff: changes.diff === null ? null : scrub(changes.diff),
    workspace_note: changes.note,
  };
}

/**
 * The sessions being verified, per store (so per server): a second verification of one is
 * refused while the first runs. Two processes on one database do not share it.
 */
const verifying = new WeakMap<Store, Set<string>>();

/**
 * Run every criterion of the live contract and record the verdicts; see the module comment.
 * One at a time per session: a second call while one runs is refused `conflict`
 * (`verification_running`), at once and writing nothing.
 */
export async function verifyWork(
  deps: AppDeps,
  project_id: string,
  input: { session_id: string; contract_id?: string },
  options: VerifyOptions = {},
): Promise<VerificationReport> {
  const session_id = input.session_id;
  const timeout = options.timeout_ms;
  if (timeout !== undefined && (!Number.isSafeInteger(timeout) || timeout < 1 || timeout > maxTimeoutMs)) {
    throw new BatonError('invalid_input', `timeout_ms is a whole number from 1 to ${maxTimeoutMs}`, {
      timeout_ms: timeout,
    });
  }
  const held = verifying.get(deps.store) ?? new Set<string>();
  verifying.set(deps.store, held);
  const key = JSON.stringify([project_id, session_id]);
  if (held.has(key)) {
    throw new BatonError(
      'conflict',
      `session "${session_id}" is already being verified; wait for that verification's answer (or read work_get) instead of starting another`,
      { rule: 'verification_running', session_id },
    );
  }
  held.add(key);
  try {
    return await verifyOnce(deps, project_id, input, options);
  } finally {
    held.delete(key);
  }
}

async function verifyOnce(
  deps: AppDeps,
  project_id: string,
  input: { session_id: string; contract_id?: string },
  options: VerifyOptions,
): Promise<VerificationReport> {
  const session_id = input.session_id;
  const before = await readWork(deps, project_id, { session_id });
  const contract =
    input.contract_id === undefined
      ? activeContract(before.projection)
      : before.projection?.contracts.find((candidate) => candidate.contract_id === input.contract_id);
  if (!contract)
    throw new BatonError('not_found', 'the session has no live work contract to verify', { session_id });
  if (!['active', 'blocked', 'verifying'].includes(contract.status)) {
    throw new BatonError(
      'conflict',
      `contract "${contract.contract_id}" is ${contract.status}; only a started contract is verified`,
      {
        rule: 'contract_not_active',
        status: contract.status,
      },
    );
  }
  const header = await readSessionHeader(deps, project_id, session_id);
  const workspace = options.workspace ?? header?.workspace ?? null;
  // The workspace's boundary is checked here, before any criterion runs in it.
  const checkpoint = workspace === null ? null : await usableWorkspaceCheckpoint(deps, workspace);
  const hidden = privateFiles(deps);
  const judge = options.judge ?? deps.judge;
  const facts = await readFacts(
    deps,
    project_id,
    session_id,
    judge ? judgedOutputs(contract, session_id) : new Set(),
  );
  const secrets = secretValuesFromEnv(options.env ?? process.env);
  const newId = uuidv7Generator(deps.clock);

  const criteria = [...contract.contract.criteria].sort((a, b) => stage[a.kind.type] - stage[b.kind.type]);
  const budget = deps.work?.verification_budget_ms ?? defaultWorkConfig.verification_budget_ms;
  const deadline = performance.now() + budget;
  const perCriterion = options.timeout_ms ?? verifyDefaults.timeout_ms;
  /** The workspace's changes for the judge, read at the first semantic criterion. */
  let changes: Promise<{ diff: string | null; note: string }> | undefined;
  const checks: { criterion: WorkCriterion; check: Check }[] = [];
  for (const [at, criterion] of criteria.entries()) {
    throwIfCancelled(options.signal);
    const kind = criterion.kind;
    const left = Math.ceil(deadline - performance.now());
    if (left <= 0) {
      const reason = `not run: ${budgetSpent(budget)}`;
      checks.push({ criterion, check: { verdict: 'unavailable', reason, evidence: [] } });
      continue;
    }
    options.onCriterion?.({
      index: at + 1,
      total: criteria.length,
      criterion_id: criterion.criterion_id,
      kind: kind.type,
    });
    let check: Check;
    switch (kind.type) {
      case 'shell':
        check = await checkShell(
          workspace,
          hidden,
          kind.command,
          left < perCriterion ? { timeout_ms: left, budget_ms: budget } : { timeout_ms: perCriterion },
          options,
        );
        break;
      case 'file_exists':
        check = await checkFile(workspace, hidden, kind.path);
        break;
      case 'file_contains':
        check = await checkFile(workspace, hidden, kind.path, kind.pattern);
        break;
      case 'tool_succeeded':
        check = checkTool(session_id, kind.tool, facts);
        break;
      case 'flow_completed':
        check = checkReceipt(
          session_id,
          facts,
          // Only a run linked to an item of this contract that the flow owns counts: not a
          // standalone run, nor one for another contract (docs/flows.md).
          (receipt) =>
            receipt.purpose === flowCompletedPurpose &&
            receipt.details.flow === kind.flow &&
            receipt.details.contract_id === contract.contract_id &&
            flowItems(contract, kind.flow).has(String(receipt.details.item_id)),
          `flow ${kind.flow} completion`,
          // A flow's run passes only when it completed: a failed or cancelled one does not.
          (details) => details.status === 'completed',
        );
        break;
      case 'external_receipt':
        check = checkReceipt(
          session_id,
          facts,
          (receipt) => receipt.details.integration === kind.integration,
          `${kind.integration}`,
        );
        break;
      case 'semantic': {
        if (!judge) {
          check = { verdict: 'unknown', reason: 'unverified: no judge configured', evidence: [] };
          break;
        }
        const request = await judgeRequest(
          {
            deps,
            project_id,
            session_id,
            contract,
            criterion: { ...criterion, kind },
            facts,
            secrets,
            changes: () =>
              (changes ??= workspaceChanges(workspace, hidden, {
                timeout_ms: Math.min(left, diffTimeoutMs),
                signal: options.signal,
                sandbox: options.sandbox,
              })),
          },
          checks,
        );
        // Reading the changes took some of the budget: the judge gets what is left.
        const remaining = Math.max(1, Math.ceil(deadline - performance.now()));
        const limit = { timeout_ms: Math.min(remaining, perCriterion) };
        check = {
          ...(await judge(request, { ...limit, ...(options.signal ? { signal: options.signal } : {}) })),
          evidence: [],
        };
        break;
      }
    }
    checks.push({ criterion, check });
  }
  throwIfCancelled(options.signal);

  // Everything stored is scrubbed: output, reasons; the verdicts cite the stored output.
  const entries: SessionEntryInput[] = [];
  if (checkpoint !== null && checkpoint !== before.projection?.latest_checkpoint) {
    entries.push({
      type: 'checkpoint',
      content: { schema: 'baton.checkpoint/v1', checkpoint, label: 'verification' },
    });
  }
  const verdicts: CriterionVerdict[] = checks.map(({ criterion, check }) => {
    const evidence = [...check.evidence];
    if (check.output !== undefined) {
      const tool_use_id = `verify-${newId()}`;
      const output = scrubSecrets(check.output, { values: secrets }).text;
      entries.push({
        type: 'tool_result',
        content: {
          schema: 'baton.tool-result/v1',
          tool_use_id,
          tool: `baton.verify.${criterion.kind.type}`,
          is_error: check.verdict !== 'passed',
          output,
        },
      });
      evidence.push({ type: 'tool_result', session_id, tool_use_id });
    }
    return {
      criterion_id: criterion.criterion_id,
      kind: criterion.kind.type,
      verdict: check.verdict,
      reason: scrubSecrets(check.reason, { values: secrets }).text,
      evidence,
    };
  });

  await commitWork(deps, sessionStream(project_id, session_id), ({ projection }) => {
    const current = projection?.contracts.find((candidate) => candidate.contract_id === contract.contract_id);
    if (!current || current.revision !== contract.revision) {
      throw new BatonError(
        'revision_conflict',
        'the contract was revised while it was being verified; verify again',
        {
          rule: 'stale_revision',
          contract_id: contract.contract_id,
        },
      );
    }
    const events: WorkEventInput[] = [];
    if (current.status === 'active' || current.status === 'blocked') {
      events.push(
        workEvent(
          current,
          {
            type: 'contract_status_changed',
            from: current.status,
            to: 'verifying',
            reason: 'verification started',
          },
          verifier,
        ),
      );
    }
    const results = new Map<string, CriterionResult>();
    for (const verdict of verdicts) {
      const result: CriterionResult = {
        verdict: verdict.verdict,
        reason: verdict.reason,
        evidence: [...verdict.evidence],
        checkpoint,
      };
      results.set(verdict.criterion_id, result);
      events.push(
        workEvent(
          current,
          { type: 'verification_recorded', criterion_id: verdict.criterion_id, result },
          verifier,
        ),
      );
    }
    const required = new Map(
      current.contract.criteria.map((criterion) => [criterion.criterion_id, criterion.required]),
    );
    const requiredVerdicts = (item: WorkItemState) =>
      current.contract.items
        .find((candidate) => candidate.item_id === item.item_id)!
        .criterion_ids.filter((id) => required.get(id))
        .map((id) => [id, results.get(id)!.verdict] as const);
    const allPassed = (item: WorkItemState) =>
      requiredVerdicts(item).every(([, verdict]) => verdict === 'passed');
    // What these verdicts leave done: a succeeded item whose criterion no longer passes is not.
    const doneAfter = new Set(
      current.items
        .filter((item) => itemDone.has(item.status) && !(item.status === 'succeeded' && !allPassed(item)))
        .map((item) => item.item_id),
    );
    for (const item of current.items) {
      const definition = current.contract.items.find((candidate) => candidate.item_id === item.item_id)!;
      const mine = requiredVerdicts(item);
      const findings = mine
        .filter(([, verdict]) => verdict === 'failed' || verdict === 'timed_out')
        .map(([id, verdict]) => `${id}: ${verdict}`);
      const change = (to: 'succeeded' | 'ready' | 'proposed' | 'ready_for_verification', reason: string) =>
        events.push(itemChange(current, item, to, reason, verifier));
      if (item.status === 'ready_for_verification') {
        if (allPassed(item)) change('succeeded', 'every required criterion passed');
        else if (findings.length > 0) {
          // Back to work; while a dependency is not done (it regressed just now), to wait for it.
          const ready = definition.dependencies.every((dependency) => doneAfter.has(dependency));
          change(ready ? 'ready' : 'proposed', `verification failed: ${findings.join(', ')}`);
        }
      } else if (item.status === 'succeeded' && !allPassed(item)) {
        change(
          'ready_for_verification',
          `a regression: ${mine
            .filter(([, v]) => v !== 'passed')
            .map(([id, v]) => `${id}: ${v}`)
            .join(', ')}`,
        );
      }
    }
    return { entries, events };
  });

  // The verdicts are in: complete the contract, or send it back to work with what blocks it.
  const snapshot = await commitWork(deps, sessionStream(project_id, session_id), ({ projection }) => {
    const current = projection?.contracts.find((candidate) => candidate.contract_id === contract.contract_id);
    if (!current || current.status !== 'verifying') return [];
    const blockers = completionBlockers(current);
    return blockers.length === 0
      ? [
          workEvent(
            current,
            {
              type: 'contract_status_changed',
              from: 'verifying',
              to: 'completed',
              reason: 'every required item and criterion passed',
            },
            verifier,
          ),
        ]
      : [
          workEvent(
            current,
            {
              type: 'contract_status_changed',
              from: 'verifying',
              to: 'active',
              reason: blockers
                .map((blocker) => blocker.message)
                .slice(0, 5)
                .join('; '),
            },
            verifier,
          ),
        ];
  });
  const after = snapshot.projection?.contracts.find(
    (candidate) => candidate.contract_id === contract.contract_id,
  );
  return {
    session_id,
    contract_id: contract.contract_id,
    revision: contract.revision,
    checkpoint,
    verdicts,
    contract_status: after?.status ?? contract.status,
    snapshot,
  };
}
