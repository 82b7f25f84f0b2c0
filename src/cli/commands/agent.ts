/**
 * `baton agent run`: Baton's own agent loop (docs/agent.md) on this machine's store and
 * workspace, with the model `[agent]` in baton.toml names. Each turn, tool call, verification
 * and gate decision is told on stderr as it happens; the end is printed on stdout.
 */
import { resolve } from 'node:path';
import { stat } from 'node:fs/promises';
import { runAgent, type AgentEvent, type AgentRunResult } from '../../agent/loop.ts';
import { readSessionHeader } from '../../app/work.ts';
import { chatRoute } from '../../agent/models.ts';
import { uuidv7Generator } from '../../core/ids.ts';
import { BatonError } from '../../core/errors.ts';
import { goalChars, sessionCapabilitiesSchema } from '../../core/work/session.ts';
import { common, databaseHelp, oneOf, shellWord, text, UsageError, whole, type Command } from '../command.ts';
import { appDeps, commandConfig, configHelp, configOption } from '../config.ts';
import * as render from '../render-work.ts';
import { interruptOnSignal, localOnly } from './work-gate.ts';

const agentModes = ['direct', 'managed'] as const;

function progressLine(event: AgentEvent): string {
  switch (event.type) {
    case 'authoring':
      return 'authoring the work contract…';
    case 'contract':
      return `contract ${event.contract_id}: ${event.status}`;
    case 'turn':
      return `turn ${event.turn}/${event.max_turns}`;
    case 'retry':
      return `  model request failed (${event.reason}); asking again in ${event.delay_ms} ms`;
    case 'text':
      return `  model: ${event.text.replace(/\s+/g, ' ').slice(0, 200)}`;
    case 'tool':
      return `  ${event.is_error ? '✗' : '✓'} ${event.summary} (${event.tool_use_id})`;
    case 'verify':
      return `  checking ${event.progress.index}/${event.progress.total}: ${event.progress.criterion_id} (${event.progress.kind})`;
    case 'gate':
      return event.decision === 'allow'
        ? '  gate: stopping allowed'
        : `  gate: blocked: ${event.reasons.join('; ')}`;
    case 'auditing':
      return '  auditing the goal…';
    case 'goal':
      return `  goal audit: ${event.verdict}: ${event.reason}`;
    case 'child':
      return `  [${event.session_id}] ${progressLine(event.event).trim()}`;
  }
}

function ending(result: AgentRunResult): string {
  const resume = `baton agent run --session ${shellWord(result.session_id)}`;
  return [
    result.final_text === '' ? null : result.final_text.trimEnd(),
    '',
    `session ${result.session_id}: ${result.status} after ${result.turns} turn${result.turns === 1 ? '' : 's'}: ${result.reason}`,
    result.goal === null
      ? null
      : `  goal: ${result.goal.statement.replace(/\s+/g, ' ').slice(0, 200)} (${result.goal.audits} audit${result.goal.audits === 1 ? '' : 's'} in this run${result.goal.verdict === null ? '' : `, the last ${result.goal.verdict}`})`,
    result.status === 'needs_input'
      ? `  answer it (baton work confirm --session ${shellWord(result.session_id)} …), then continue: ${resume}`
      : null,
    '',
    render.work(result.work).trimEnd(),
    '',
  ]
    .filter((line) => line !== null)
    .join('\n');
}

const run: Command = {
  positionals: true,
  summary: "run Baton's own agent on a task with the model [agent] names, in this workspace",
  usage: `baton agent run [TASK...] [--session ID] [--mode direct|managed] [options]

  TASK                  what to do, in words (several words are joined); may be left out when
                        --session names a session that has its task and waits to go on
  --session ID          the session (default a new one); an open session continues with its
                        own mode, workspace and permissions (the options below set a new one's)
  --mode MODE           direct (default): the model works until it answers; managed: it first
                        writes a work contract Baton validates, and only verified criteria end it
  --workspace DIR       the folder it works in (default the current one)
  --read-only           the session may not change files (write_file is neither offered nor allowed)
  --scope SCOPE_ID      bind the session to a workstream: an ended contract records its Task
                        Outcome there, an interrupted run prepares a Handoff there
  --goal TEXT           goal mode: what must be true at the end; the session ends completed
                        only when the judge ([judge] in baton.toml) audits it as met
  --max-turns N         model turns before the run ends max_turns (default [agent] max_turns)
  --json                print the result as JSON: {session_id, status, reason, turns,
                        final_text, usage, work, goal} (docs/agent.md)
${configHelp}
  --project ID          the project of the local database
${databaseHelp}

  Tools: list_files, read_file, write_file (in the workspace), shell (read-only sandbox,
  no network) and, in managed mode, work and task (a worker: a child session on one
  item). Each turn and tool call is told on stderr.
  Exit 0 when the session ended completed; 1 otherwise (failed, max_turns, aborted, or
  needs_input: a person answers the contract, then the same session continues).`,
  examples: [
    'baton agent run "add a CHANGELOG entry for the login fix"',
    'baton agent run --mode managed "make npm test pass" --max-turns 40',
    'baton agent run --session run-7 --json',
    'baton agent run "fix the flaky login test" --goal "npm test passes and no test was skipped or deleted"',
  ],
  fields: { session_id: '--session', workspace: '--workspace', scope_id: '--scope' },
  options: {
    ...common,
    ...configOption,
    session: { type: 'string' },
    mode: { type: 'string' },
    workspace: { type: 'string' },
    'read-only': { type: 'boolean', default: false },
    scope: { type: 'string', short: 's' },
    goal: { type: 'string' },
    'max-turns': { type: 'string' },
    project: { type: 'string', short: 'p' },
    server: { type: 'string' },
    json: { type: 'boolean', default: false },
  },
  async run(context) {
    localOnly(context, 'agent run');
    const values = context.values;
    const task = context.positionals.join(' ').trim();
    const given = text(values, 'session');
    if (task === '' && given === undefined) {
      throw new UsageError('say what to do: baton agent run "TASK", or continue a session with --session ID');
    }
    const mode = oneOf(values, 'mode', agentModes) ?? 'direct';
    const workspace = resolve(context.cwd, text(values, 'workspace') ?? '.');
    if (
      !(await stat(workspace).then(
        (info) => info.isDirectory(),
        () => false,
      ))
    ) {
      throw new UsageError(`--workspace ${text(values, 'workspace')} is not a folder on this machine`);
    }
    const maxTurns = whole(values, 'max-turns', { min: 1, max: 1000 });
    const { agent, path, flows } = await commandConfig(context);
    if (agent === null) {
      throw new BatonError(
        'precondition_failed',
        `${path ?? 'baton.toml'} has no [agent]: name the model to run (provider, model; docs/agent.md)`,
      );
    }
    const deps = await appDeps(context);
    const project_id = await context.project();
    const scope_id = text(values, 'scope');
    const goal = text(values, 'goal');
    if (goal !== undefined && (goal.trim() === '' || goal.length > goalChars)) {
      throw new UsageError(`--goal says what must be true at the end, in 1 to ${goalChars} characters`);
    }
    const setsHeader = ['mode', 'workspace', 'scope', 'goal'].filter(
      (name) => text(values, name) !== undefined,
    );
    if (values['read-only'] === true) setsHeader.push('read-only');
    if (given !== undefined && setsHeader.length > 0) {
      const existing = await readSessionHeader(deps, project_id, given).catch(() => null);
      if (existing !== null) {
        throw new UsageError(
          `session ${given} exists and continues with its own mode, workspace and permissions: drop ${setsHeader.map((name) => `--${name}`).join(', ')}`,
        );
      }
    }
    const session_id = given ?? `run-${uuidv7Generator(deps.clock)()}`;
    const interrupt = interruptOnSignal();
    let result: AgentRunResult;
    try {
      result = await runAgent(
        deps,
        project_id,
        {
          session_id,
          ...(task === '' ? {} : { prompt: task }),
          start: {
            work_mode: mode,
            workspace,
            // Every flow baton.toml declares may be run for the items it owns (docs/flows.md).
            capabilities: sessionCapabilitiesSchema.parse({
              write: values['read-only'] !== true,
              flows: Object.keys(flows),
            }),
            ...(scope_id === undefined ? {} : { scope_id }),
          },
          ...(goal === undefined ? {} : { goal }),
        },
        {
          route: chatRoute(agent, context.io.env),
          config: maxTurns === undefined ? agent : { ...agent, max_turns: maxTurns },
          signal: interrupt.signal,
          env: context.io.env,
          ...(path === null ? {} : { protected_paths: [path] }),
          onEvent: (event) => context.io.err(`${progressLine(event)}\n`),
        },
      );
    } finally {
      interrupt.stop();
    }
    context.print(result, () => ending(result));
    if (result.status !== 'completed') {
      throw new BatonError('precondition_failed', `the run ended ${result.status}: ${result.reason}`, {
        status: result.status,
      });
    }
  },
};

export const agentCommands: Record<string, Command> = { 'agent run': run };
