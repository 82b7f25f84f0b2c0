/**
 * Sessions and their managed work: `baton session start` and `baton work show | create |
 * confirm | revise | transition | reconcile | retry | cancel | reassign | evidence`. Each calls one endpoint of the
 * work table, on a server through the typed client, or on the local store as the person at the
 * terminal (actor human "cli") with the `[work]` configuration of baton.toml. `--json` prints
 * the answer exactly (a WorkSnapshot, or the session header for `session start`).
 */
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { createClient, methodName } from '../../client/index.ts';
import { workItemStatuses } from '../../core/work/model.ts';
import type { WorkSnapshot } from '../../app/work.ts';
import type { SessionHeader } from '../../core/work/session.ts';
import { receiptRef } from '../refs.ts';
import { transcriptLimit, transcriptTextChars, type Transcript } from '../../app/transcript.ts';
import { terminalStatuses, workModes } from '../../core/work/session.ts';
import { findWorkEndpoint, mergeParams } from '../../http/work-api.ts';
import {
  bulkLimit,
  type CancelItemsResult,
  type EntryError,
  type QueryWorkResult,
} from '../../app/work-bulk.ts';
import { listedSessionsLimit, type ListSessionsResult } from '../../app/work-list.ts';
import { BatonError } from '../../core/errors.ts';
import {
  list,
  oneOf,
  required,
  text,
  transportHelp,
  transportOptions,
  UsageError,
  whole,
  type Command,
  type Options,
} from '../command.ts';
import { appDeps, configHelp, configOption } from '../config.ts';
import type { Context } from '../context.ts';
import { readInput } from '../files.ts';
import * as render from '../render-work.ts';
import { watch } from './work-watch.ts';

/** Call one work endpoint on the server, or on the local store; same answer, same errors. */
async function callWork(
  context: Context,
  operationId: string,
  input: Record<string, unknown>,
): Promise<unknown> {
  const endpoint = findWorkEndpoint(operationId)!;
  const server = context.server();
  if (server !== undefined) {
    const client = createClient({ baseUrl: server.url, token: server.token }) as unknown as Record<
      string,
      (input: unknown) => Promise<unknown>
    >;
    return client[methodName(operationId)]!(input);
  }
  const deps = await appDeps(context);
  return endpoint.run(deps, await context.project(), mergeParams({}, input), { type: 'human', id: 'cli' });
}

const options = { ...transportOptions, ...configOption, contract: { type: 'string' } } satisfies Options;
const commonHelp = `  --contract ID         the contract to change (default: the session's live one)
${configHelp}
${transportHelp}`;

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

/** Exactly the named positionals, or a usage error that names them. */
function positionals(context: Context, names: readonly string[]): string[] {
  if (context.positionals.length !== names.length) {
    throw new UsageError(
      `give ${names.join(' and ')}${context.positionals.length > names.length ? ', nothing more' : ''}`,
    );
  }
  return [...context.positionals];
}

function contract(context: Context): { contract_id?: string } {
  const id = text(context.values, 'contract');
  return id === undefined ? {} : { contract_id: id };
}

function reason(context: Context): { reason?: string } {
  const given = text(context.values, 'reason');
  return given === undefined ? {} : { reason: given };
}

/** The JSON object in a file (relative to the working directory), or on stdin for `-`. */
async function jsonFile(context: Context, path: string): Promise<Record<string, unknown>> {
  const source = await readInput(path === '-' ? path : resolve(context.cwd, path));
  let value: unknown;
  try {
    value = JSON.parse(source);
  } catch (error) {
    throw new UsageError(`${path} is not JSON: ${(error as Error).message}`, { showUsage: false });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    const found = Array.isArray(value) ? 'an array' : value === null ? 'null' : `a ${typeof value}`;
    throw new UsageError(`${path} must hold a JSON object, not ${found}`, { showUsage: false });
  }
  return value as Record<string, unknown>;
}

function printWork(context: Context, snapshot: unknown): void {
  context.print(snapshot, () => render.work(snapshot as WorkSnapshot));
}

const revisionHelp = `  --revision N          the revision you read (baton work show); a newer one refuses with revision_conflict`;

const sessionStart: Command = {
  positionals: true,
  summary: 'start a session stream with its header (workspace, lineage, capabilities)',
  usage: `baton session start <session> [--workspace DIR] [--parent ID] [--capabilities FILE] [options]

  SESSION               the session id you choose (1-200 visible ASCII characters)
  --workspace DIR       the folder the session works in (made absolute); contract paths must stay inside
  --parent ID           the parent session (a child session records its lineage)
  --parent-contract ID  with --parent: the parent's contract this child works on
  --parent-item ID      with --parent: the work item this child works on
  --mode MODE           ${workModes.join(', ')} (default: [work] default_mode)
  --capabilities FILE   JSON {write, tools, flows, capabilities, owners}: what contracts may use
  --scope SCOPE_ID      bind the session to this workstream: each contract that ends records a
                        Task Outcome there, its checks the criterion verdicts (not read from
                        BATON_SCOPE or the binding unless --receipt is given: binding is a choice)
  --receipt REF         the accepted receipt the session works under, so its outcomes cover it:
                        SOURCE_ID[@DIGEST] or "active" (the workstream's active receipt)
${configHelp}
${transportHelp}`,
  examples: [
    'baton session start fix-login --workspace . --mode managed',
    'baton session start fix-login-tests --parent fix-login --parent-contract c1 --parent-item tests',
    'baton session start fix-login --workspace . --mode managed --scope login-work --receipt active',
  ],
  fields: {
    session_id: 'SESSION',
    workspace: '--workspace',
    parent_session_id: '--parent',
    contract_id: '--parent-contract',
    work_item_id: '--parent-item',
    work_mode: '--mode',
    capabilities: '--capabilities',
    scope_id: '--scope',
    handoff_receipt_ref: '--receipt',
  },
  options: {
    ...transportOptions,
    ...configOption,
    workspace: { type: 'string' },
    parent: { type: 'string' },
    'parent-contract': { type: 'string' },
    'parent-item': { type: 'string' },
    mode: { type: 'string' },
    capabilities: { type: 'string' },
    scope: { type: 'string', short: 's' },
    receipt: { type: 'string' },
  },
  async run(context) {
    const [session_id] = positionals(context, ['SESSION']);
    const values = context.values;
    const given = text(values, 'workspace');
    const workspace = given === undefined ? undefined : resolve(context.cwd, given);
    if (workspace !== undefined && !(await isDirectory(workspace))) {
      // The verifier and the gate run in it: a typo would only surface at the first verification.
      throw new UsageError(
        `--workspace ${given} is not a folder on this machine: name the folder the session works in`,
      );
    }
    const parent = text(values, 'parent');
    const parentContract = text(values, 'parent-contract');
    const parentItem = text(values, 'parent-item');
    if (parent === undefined && (parentContract !== undefined || parentItem !== undefined)) {
      throw new UsageError('--parent-contract and --parent-item need --parent');
    }
    const mode = oneOf(values, 'mode', workModes);
    const capabilities = text(values, 'capabilities');
    const receipt = text(values, 'receipt');
    const scope_id =
      text(values, 'scope') ?? (receipt === undefined ? undefined : (await context.scope()).scope_id);
    const handoff_receipt_ref =
      scope_id === undefined ? undefined : await receiptRef(await context.transport(), scope_id, receipt);
    const header = await callWork(context, 'start_session', {
      session_id,
      ...(workspace === undefined ? {} : { workspace }),
      ...(parent === undefined ? {} : { parent_session_id: parent }),
      ...(parentContract === undefined ? {} : { contract_id: parentContract }),
      ...(parentItem === undefined ? {} : { work_item_id: parentItem }),
      ...(mode === undefined ? {} : { work_mode: mode }),
      ...(capabilities === undefined ? {} : { capabilities: await jsonFile(context, capabilities) }),
      ...(scope_id === undefined ? {} : { scope_id }),
      ...(handoff_receipt_ref === undefined ? {} : { handoff_receipt_ref }),
    });
    context.print(header, () => render.session(header as SessionHeader));
  },
};

const sessionList: Command = {
  summary: "the project's sessions, newest first: mode, lineage, binding and each one's contract at a glance",
  usage: `baton session list [--json] [options]

  --json                the answer of GET /v1/sessions exactly: {sessions, total, limit}, each
                        session summarized (docs/http-api.md, "The list")

At most ${listedSessionsLimit} sessions are listed, the newest; the answer says how many there are in all.
A session whose ledger cannot be projected is listed with its error.
${configHelp}
${transportHelp}`,
  examples: ['baton session list', 'baton session list --json'],
  options: { ...transportOptions, ...configOption },
  async run(context) {
    const result = (await callWork(context, 'list_sessions', {})) as ListSessionsResult;
    context.print(result, () => render.sessions(result));
  },
};

const sessionEnd: Command = {
  positionals: true,
  summary:
    "end a session with its terminal marker, once; a child's parent takes the end in at once, an interrupted bound session prepares a Handoff",
  usage: `baton session end <session> --status STATUS [--reason TEXT] [--json] [options]

  SESSION               the session id
  --status STATUS       ${terminalStatuses.join(', ')}: how the run ended
  --reason TEXT         why, in a few words (kept with the marker)
  --json                the session's WorkSnapshot exactly as POST /v1/sessions/{id}/end answers it

A session ends once: the same end again changes nothing, another one is refused (exit 1,
conflict session_ended). completed is refused (conflict work_incomplete) while the session's
contract is open: finish and verify it, or end the session aborted or failed. When the session is
a child, its parent's items delegated to it are decided at once: completed puts them up for
verification, any other end fails them. A session bound to a workstream that ends failed,
aborted or max_turns while its contract is open prepares a Handoff there for whoever continues
(not committed): the answer names it, with the commands that read and publish it.
${configHelp}
${transportHelp}`,
  examples: [
    'baton session end fix-login-tests --status completed',
    'baton session end fix-login --status aborted --reason "stopped by the user"',
  ],
  fields: { status: '--status', reason: '--reason' },
  options: { ...transportOptions, ...configOption, status: { type: 'string' }, reason: { type: 'string' } },
  async run(context) {
    const [session_id] = positionals(context, ['SESSION']);
    const status = oneOf(context.values, 'status', terminalStatuses);
    if (status === undefined)
      throw new UsageError(`--status is required: one of ${terminalStatuses.join(', ')}`);
    printWork(
      context,
      await callWork(context, 'end_work_session', { session_id, status, ...reason(context) }),
    );
  },
};

const show: Command = {
  positionals: true,
  summary: "a session's projected work: objective, revision, items, owners, blockers, criteria, evidence",
  usage: `baton work show <session> [<session> ...] [--json] [options]

  SESSION               the session id; several (at most ${bulkLimit}) are read in one query
  --json                the WorkSnapshot exactly as GET /v1/sessions/{id}/work answers it; for
                        several sessions, the answer of POST /v1/sessions/work/query
                        ({sessions: [{session_id, work} | {session_id, error}]})
${configHelp}
${transportHelp}`,
  examples: [
    'baton work show fix-login',
    'baton work show fix-login --json',
    'baton work show fix-login fix-login-tests docs-pass',
  ],
  options: { ...transportOptions, ...configOption },
  async run(context) {
    const session_ids = atLeast(context, 'SESSION', bulkLimit);
    if (session_ids.length === 1) {
      printWork(context, await callWork(context, 'get_work', { session_id: session_ids[0] }));
      return;
    }
    const result = (await callWork(context, 'query_work', { session_ids })) as QueryWorkResult;
    printBulk(
      context,
      result,
      result.sessions.map((entry) => ({ name: `session ${entry.session_id}`, ...entry })),
      'sessions were not read',
      () =>
        result.sessions
          .map((entry) =>
            'work' in entry
              ? render.work(entry.work)
              : `Session ${entry.session_id}: ${refusal(entry.error)}\n`,
          )
          .join('\n'),
    );
  },
};

const reconcile: Command = {
  positionals: true,
  summary: "reconcile a session's running items with their child sessions, as reopening it does",
  usage: `baton work reconcile <session> [--json] [options]

  SESSION               the session id
  --json                the WorkSnapshot exactly as POST /v1/sessions/{id}/work/reconcile answers it

A finished child (terminal marker completed) is attached and its item waits for verification; a
child that failed, aborted or ran out of turns fails its item; a child without a terminal marker
keeps it running. An item with no child is interrupted: read-only work is retry eligible, a
possible write waits for a person to review it and run baton work retry. A second reconcile
appends nothing.
${configHelp}
${transportHelp}`,
  examples: ['baton work reconcile fix-login', 'baton work reconcile fix-login --json'],
  options: { ...transportOptions, ...configOption },
  async run(context) {
    const [session_id] = positionals(context, ['SESSION']);
    printWork(context, await callWork(context, 'reconcile_work', { session_id }));
  },
};

const create: Command = {
  positionals: true,
  summary: 'create a validated work contract in a session from a JSON file',
  usage: `baton work create <session> --file FILE [--branch] [options]

  SESSION               the session id
  --file FILE           JSON {objective, items, criteria?, constraints?, assumptions?, contract_id?}, or - for stdin
  --branch              start beside a live contract on purpose instead of being refused
${configHelp}
${transportHelp}`,
  examples: [
    'baton work create fix-login --file contract.json',
    'baton work create fix-login --file - < contract.json',
  ],
  fields: { objective: '--file objective', items: '--file items', criteria: '--file criteria' },
  options: { ...transportOptions, ...configOption, file: { type: 'string' }, branch: { type: 'boolean' } },
  async run(context) {
    const [session_id] = positionals(context, ['SESSION']);
    const body = await jsonFile(context, required(context.values, 'file'));
    const input = mergeParams({ session_id: session_id! }, body);
    if (context.values.branch === true) input.branch = true;
    printWork(context, await callWork(context, 'create_work', input));
  },
};

const confirm: Command = {
  positionals: true,
  summary: 'answer open assumptions and start a draft or waiting contract',
  usage: `baton work confirm <session> --revision N [--answer ID=TEXT ...] [options]

  SESSION               the session id
${revisionHelp}
  --answer ID=TEXT      the answer to assumption ID (repeat for each)
${commonHelp}`,
  examples: ['baton work confirm fix-login --revision 1 --answer db="use the staging database"'],
  fields: { revision: '--revision', resolutions: '--answer' },
  options: { ...options, revision: { type: 'string' }, answer: { type: 'string', multiple: true } },
  async run(context) {
    const [session_id] = positionals(context, ['SESSION']);
    const revision = whole(context.values, 'revision', { min: 1 });
    if (revision === undefined) throw new UsageError('--revision is required');
    const resolutions = list(context.values, 'answer').map((answer) => {
      const at = answer.indexOf('=');
      if (at < 1) throw new UsageError(`--answer takes ID=TEXT, not ${JSON.stringify(answer)}`);
      return { assumption_id: answer.slice(0, at), resolution: answer.slice(at + 1) };
    });
    printWork(
      context,
      await callWork(context, 'confirm_work', {
        session_id,
        revision,
        ...contract(context),
        ...(resolutions.length > 0 ? { resolutions } : {}),
      }),
    );
  },
};

const revise: Command = {
  positionals: true,
  summary: 'publish the next revision of the live contract from a JSON file',
  usage: `baton work revise <session> --revision N --file FILE [--reason TEXT] [options]

  SESSION               the session id
  --revision N          the revision this one follows
  --file FILE           JSON {objective, items, criteria?, constraints?, assumptions?}, or - for stdin
  --reason TEXT         why it changes
${commonHelp}`,
  examples: [
    'baton work revise fix-login --revision 1 --file contract-v2.json --reason "split the tests item"',
  ],
  fields: {
    previous_revision: '--revision',
    reason: '--reason',
    objective: '--file objective',
    items: '--file items',
  },
  options: { ...options, revision: { type: 'string' }, file: { type: 'string' }, reason: { type: 'string' } },
  async run(context) {
    const [session_id] = positionals(context, ['SESSION']);
    const previous_revision = whole(context.values, 'revision', { min: 1 });
    if (previous_revision === undefined) throw new UsageError('--revision is required');
    const body = await jsonFile(context, required(context.values, 'file'));
    const input = mergeParams({ session_id: session_id! }, body);
    Object.assign(
      input,
      { previous_revision, reason: text(context.values, 'reason') ?? input.reason ?? '' },
      contract(context),
    );
    printWork(context, await callWork(context, 'revise_work', input));
  },
};

const transition: Command = {
  positionals: true,
  summary: 'move a work item to another status, as a person (the projector decides whether it may)',
  usage: `baton work transition <session> <item> --to STATUS --revision N [--reason TEXT] [options]

  SESSION ITEM          the session and the item id
  --to STATUS           one of ${workItemStatuses.join(', ')}
${revisionHelp}
  --reason TEXT         why (a blocker's text when moving to blocked)
${commonHelp}`,
  examples: ['baton work transition fix-login tests --to skipped --revision 2 --reason "covered by CI"'],
  fields: { to: '--to', revision: '--revision', reason: '--reason' },
  options: { ...options, to: { type: 'string' }, revision: { type: 'string' }, reason: { type: 'string' } },
  async run(context) {
    const [session_id, item_id] = positionals(context, ['SESSION', 'ITEM']);
    const to = oneOf(context.values, 'to', workItemStatuses);
    if (to === undefined) throw new UsageError('--to is required');
    const revision = whole(context.values, 'revision', { min: 1 });
    if (revision === undefined) throw new UsageError('--revision is required');
    printWork(
      context,
      await callWork(context, 'transition_work_item', {
        session_id,
        item_id,
        to,
        revision,
        ...reason(context),
        ...contract(context),
      }),
    );
  },
};

function itemCommand(
  operationId: 'retry_work_item' | 'cancel_work_item',
  verb: string,
  summary: string,
): Command {
  // Cancelling takes several items in one call (cancel_work_items); retrying takes one.
  const bulk = operationId === 'cancel_work_item';
  return {
    positionals: true,
    summary,
    usage: `baton work ${verb} <session> <item>${bulk ? ' [<item> ...]' : ''} [--reason TEXT] [options]

  SESSION ITEM          the session and the item id${
    bulk
      ? `; several items (at most ${bulkLimit}) are cancelled one by one in one call,
                        each answering its own result`
      : ''
  }
  --reason TEXT         why
${commonHelp}`,
    examples: [
      `baton work ${verb} fix-login tests --reason "flaky runner"`,
      ...(bulk ? [`baton work ${verb} fix-login tests docs lint --reason "superseded by fix-login-2"`] : []),
    ],
    fields: { reason: '--reason', item_id: 'ITEM', item_ids: 'ITEM' },
    options: { ...options, reason: { type: 'string' } },
    async run(context) {
      const [session_id, ...item_ids] = bulk
        ? atLeast(context, 'SESSION', bulkLimit + 1, 'ITEM')
        : positionals(context, ['SESSION', 'ITEM']);
      if (item_ids.length === 1) {
        printWork(
          context,
          await callWork(context, operationId, {
            session_id,
            item_id: item_ids[0],
            ...reason(context),
            ...contract(context),
          }),
        );
        return;
      }
      const result = (await callWork(context, 'cancel_work_items', {
        session_id,
        item_ids,
        ...reason(context),
        ...contract(context),
      })) as CancelItemsResult;
      printBulk(
        context,
        result,
        result.items.map((entry) => ({ name: `item ${entry.item_id}`, ...entry })),
        'items were not cancelled',
        () =>
          result.items
            .map((entry) =>
              'error' in entry
                ? `  ${entry.item_id}: not cancelled: ${refusal(entry.error)}`
                : `  ${entry.item_id}: cancelled (ledger position ${entry.position})`,
            )
            .join('\n') +
          '\n\n' +
          render.work(result.work),
      );
    },
  };
}

/** The positionals: the first named `first`, then at least one more (`rest`), at most `max` in all. */
function atLeast(context: Context, first: string, max: number, rest?: string): string[] {
  const given = context.positionals;
  const needed = rest === undefined ? 1 : 2;
  if (given.length < needed || given.length > max) {
    const what = rest === undefined ? `one or more ${first}` : `${first} and one or more ${rest}`;
    throw new UsageError(`give ${what}${given.length > max ? `, at most ${max} in all` : ''}`);
  }
  return [...given];
}

/** An entry's refusal in a bulk answer, as people read it. */
function refusal(error: EntryError): string {
  return `${error.code}: ${error.message}`;
}

/**
 * A bulk answer: printed whole (as JSON, or each entry as people read it), then, when any entry
 * was refused, exit 1 with the first refusal's code and every refused entry named.
 */
function printBulk(
  context: Context,
  result: unknown,
  entries: readonly ({ readonly name: string } & ({ readonly error: EntryError } | object))[],
  what: string,
  human: () => string,
): void {
  context.print(result, human);
  const refused = entries.flatMap((entry) =>
    'error' in entry ? [{ name: entry.name, error: entry.error }] : [],
  );
  const first = refused[0];
  if (first === undefined) return;
  throw new BatonError(
    first.error.code,
    `${refused.length} of ${entries.length} ${what}: ${refused.map(({ name, error }) => `${name}: ${error.message}`).join('; ')}`,
    first.error.details,
  );
}

/** parent_agent | worker | human | tool:NAME | flow:NAME */
function parseOwner(value: string): Record<string, string> {
  if (value === 'parent_agent' || value === 'worker' || value === 'human') return { type: value };
  const match = /^(tool|flow):(.+)$/.exec(value);
  if (match) return { type: match[1]!, name: match[2]! };
  throw new UsageError(
    `--owner is parent_agent, worker, human, tool:NAME or flow:NAME, not ${JSON.stringify(value)}`,
  );
}

const reassign: Command = {
  positionals: true,
  summary: 'give a work item another owner',
  usage: `baton work reassign <session> <item> --owner OWNER [--child-session ID] [options]

  SESSION ITEM          the session and the item id
  --owner OWNER         parent_agent, worker, human, tool:NAME or flow:NAME
  --child-session ID    the child session that works on it
${commonHelp}`,
  examples: [
    'baton work reassign fix-login tests --owner worker --child-session fix-login-tests',
    'baton work reassign fix-login lint --owner tool:eslint',
  ],
  fields: { owner: '--owner', child_session_id: '--child-session' },
  options: { ...options, owner: { type: 'string' }, 'child-session': { type: 'string' } },
  async run(context) {
    const [session_id, item_id] = positionals(context, ['SESSION', 'ITEM']);
    const owner = parseOwner(required(context.values, 'owner'));
    const child = text(context.values, 'child-session');
    printWork(
      context,
      await callWork(context, 'reassign_work_item', {
        session_id,
        item_id,
        owner,
        ...(child === undefined ? {} : { child_session_id: child }),
        ...contract(context),
      }),
    );
  },
};

const evidence: Command = {
  positionals: true,
  summary: 'attach an evidence reference (a tool result, receipt, child session, …) to a work item',
  usage: `baton work evidence <session> <item> --revision N --file FILE [options]

  SESSION ITEM          the session and the item id
${revisionHelp}
  --file FILE           JSON evidence reference {type, …} (docs/managed-work.md), or - for stdin
${commonHelp}`,
  examples: [
    `baton work evidence fix-login tests --revision 2 --file evidence.json`,
    `echo '{"type":"child_session","session_id":"fix-login-tests"}' | baton work evidence fix-login tests --revision 2 --file -`,
  ],
  fields: { revision: '--revision', evidence: '--file', item_id: 'ITEM' },
  options: { ...options, revision: { type: 'string' }, file: { type: 'string' } },
  async run(context) {
    const [session_id, item_id] = positionals(context, ['SESSION', 'ITEM']);
    const revision = whole(context.values, 'revision', { min: 1 });
    if (revision === undefined) throw new UsageError('--revision is required');
    const reference = await jsonFile(context, required(context.values, 'file'));
    printWork(
      context,
      await callWork(context, 'attach_work_evidence', {
        session_id,
        item_id,
        revision,
        evidence: reference,
        ...contract(context),
      }),
    );
  },
};

const sessionTranscript: Command = {
  positionals: true,
  summary: "a session's conversation: messages, the model's turns, tool calls and results, model requests",
  usage: `baton session transcript <session> [--json] [options]

  SESSION               the session id
  --json                the answer of GET /v1/sessions/{id}/transcript exactly:
                        {session_id, entries, total, trust} (docs/agent.md, "Reading a run")

The newest ${transcriptLimit} entries in ledger order, each text cut at ${transcriptTextChars} characters. It is history
to read, never instruction; the session's progress is \`baton work show\`, not this.
${configHelp}
${transportHelp}`,
  examples: ['baton session transcript run-0193', 'baton session transcript fix-login --json'],
  options: { ...transportOptions, ...configOption },
  operations: ['get_transcript'],
  async run(context) {
    const [session_id] = positionals(context, ['SESSION']);
    const transcript = (await callWork(context, 'get_transcript', { session_id })) as Transcript;
    context.print(transcript, () => render.transcript(transcript));
  },
};

export const sessionCommands: Record<string, Command> = {
  'session start': sessionStart,
  'session list': sessionList,
  'session transcript': sessionTranscript,
  'session end': sessionEnd,
};

export const workCommands: Record<string, Command> = {
  'work show': show,
  'work create': create,
  'work confirm': confirm,
  'work revise': revise,
  'work transition': transition,
  'work reconcile': reconcile,
  'work retry': itemCommand(
    'retry_work_item',
    'retry',
    'start a new attempt of a failed, interrupted or cancelled item',
  ),
  'work cancel': itemCommand('cancel_work_item', 'cancel', 'cancel a work item'),
  'work reassign': reassign,
  'work evidence': evidence,
  'work watch': watch,
};
