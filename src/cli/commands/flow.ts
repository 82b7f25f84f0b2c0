/**
 * `baton flow list` and `baton flow run`: the static flows `[flows]` in baton.toml declares
 * (docs/flows.md), run on this machine's store and workspace. A run linked to an item
 * (`--session S --item I`) owns that item while it runs; a standalone run gets a session of its
 * own, so no contract can take it for linked work. Each node is told on stderr as it starts and ends.
 */
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { runFlow, type FlowProgress, type FlowRunResult } from '../../app/flows.ts';
import { startSession } from '../../app/work.ts';
import { BatonError } from '../../core/errors.ts';
import { uuidv7Generator } from '../../core/ids.ts';
import { flowOrder } from '../../core/work/flows.ts';
import { sessionCapabilitiesSchema } from '../../core/work/session.ts';
import { common, databaseHelp, text, UsageError, type Command } from '../command.ts';
import { appDeps, commandConfig, configHelp, configOption } from '../config.ts';
import { interruptOnSignal, localOnly } from './work-gate.ts';

function progressLine(progress: FlowProgress): string {
  const at = `${progress.index}/${progress.total} ${progress.node_id}`;
  if (progress.status === 'running') return `node ${at}: running…`;
  const mark = progress.status === 'passed' ? '✓' : progress.status === 'skipped' ? '·' : '✗';
  return `  ${mark} ${progress.node_id} ${progress.status}: ${progress.reason} (${progress.duration_ms} ms)`;
}

function ending(result: FlowRunResult): string {
  return [
    `flow ${result.flow} run ${result.run_id}: ${result.status} (session ${result.session_id})`,
    ...result.nodes.map((node) => `  ${node.node_id}: ${node.status}: ${node.reason}`),
    result.item_id === null
      ? '  standalone: linked to no work item'
      : `  item ${result.item_id} of ${result.contract_id}: now ${result.item_status ?? 'unknown'}`,
    '',
  ].join('\n');
}

const list: Command = {
  summary: 'list the static flows [flows] in baton.toml declares, with their nodes in run order',
  usage: `baton flow list [--json]

  --json                print {flows: [{name, description, nodes: [{node_id, command, needs, timeout_ms}]}]}
${configHelp}`,
  examples: ['baton flow list', 'baton flow list --json'],
  options: { ...common, ...configOption, json: { type: 'boolean', default: false } },
  async run(context) {
    const { flows } = await commandConfig(context);
    const listed = {
      flows: Object.entries(flows).map(([name, flow]) => {
        const byId = new Map(flow.nodes.map((node) => [node.node_id, node]));
        return { name, description: flow.description, nodes: flowOrder(flow).map((id) => byId.get(id)!) };
      }),
    };
    context.print(listed, () =>
      listed.flows.length === 0
        ? 'No flows: declare one as [flows.NAME] with [[flows.NAME.nodes]] in baton.toml (docs/flows.md).\n'
        : listed.flows
            .flatMap((flow) => [
              `${flow.name}${flow.description === '' ? '' : `: ${flow.description}`}`,
              ...flow.nodes.map(
                (node) =>
                  `  ${node.node_id}${node.needs.length === 0 ? '' : ` (after ${node.needs.join(', ')})`}: ${node.command}`,
              ),
            ])
            .join('\n') + '\n',
    );
  },
};

const run: Command = {
  positionals: true,
  summary: 'run a static flow in the read-only sandbox, standalone or for the work item it owns',
  usage: `baton flow run NAME [--session ID --item ITEM] [--workspace DIR] [--json]

  NAME                  a flow [flows.NAME] in baton.toml declares (baton flow list)
  --session ID          with --item: the managed session whose live contract holds the item
  --item ITEM           the item the run works: owned by flow:NAME and ready. The run moves
                        it to running, attaches each node's receipt, and at the end moves it
                        to ready_for_verification (every node passed), failed or interrupted;
                        only the verifier marks it succeeded
  --workspace DIR       a standalone run's folder (default the current one); a linked run
                        works in its session's workspace
  --json                print {session_id, flow, run_id, status, contract_id, item_id, nodes,
                        item_status, work} (docs/flows.md)
${configHelp}
  --project ID          the project of the local database
${databaseHelp}

  Without --item the run is standalone: it runs in a new session of its own, linked to no
  work item, so no contract counts it. Each node is told on stderr as it starts and ends.
  Exit 0 when every node passed; 1 otherwise.`,
  examples: [
    'baton flow run check',
    'baton flow run check --session run-7 --item tests',
    'baton flow run check --workspace ../service --json',
  ],
  fields: { session_id: '--session', item_id: '--item', flow: 'NAME' },
  options: {
    ...common,
    ...configOption,
    session: { type: 'string' },
    item: { type: 'string' },
    workspace: { type: 'string' },
    project: { type: 'string', short: 'p' },
    server: { type: 'string' },
    json: { type: 'boolean', default: false },
  },
  async run(context) {
    localOnly(context, 'flow run');
    const [flow, ...rest] = context.positionals;
    if (flow === undefined || rest.length > 0) {
      throw new UsageError('name one flow to run: baton flow run NAME (baton flow list shows them)');
    }
    const session = text(context.values, 'session');
    const item = text(context.values, 'item');
    if ((session === undefined) !== (item === undefined)) {
      throw new UsageError(
        '--session and --item go together: a run linked to a work item names both; a standalone run names neither',
      );
    }
    if (session !== undefined && text(context.values, 'workspace') !== undefined) {
      throw new UsageError('a linked run works in its session’s workspace: drop --workspace');
    }
    const deps = await appDeps(context);
    if (deps.flows?.[flow] === undefined) {
      throw new BatonError(
        'not_found',
        `no flow "${flow}" is configured: declare it as [flows.${flow}] in baton.toml`,
        {
          flow,
        },
      );
    }
    const project_id = await context.project();
    let session_id = session;
    if (session_id === undefined) {
      const workspace = resolve(context.cwd, text(context.values, 'workspace') ?? '.');
      if (
        !(await stat(workspace).then(
          (info) => info.isDirectory(),
          () => false,
        ))
      ) {
        throw new UsageError(
          `--workspace ${text(context.values, 'workspace')} is not a folder on this machine`,
        );
      }
      // A session of its own, granted only this flow: its receipts count for no contract.
      session_id = `flow-${uuidv7Generator(deps.clock)()}`;
      await startSession(deps, project_id, {
        session_id,
        work_mode: 'direct',
        workspace,
        capabilities: sessionCapabilitiesSchema.parse({ write: false, flows: [flow] }),
      });
    }
    const interrupt = interruptOnSignal();
    let result: FlowRunResult;
    try {
      result = await runFlow(
        deps,
        project_id,
        { session_id, flow, ...(item === undefined ? {} : { item_id: item }) },
        {
          signal: interrupt.signal,
          env: context.io.env,
          onNode: (progress) => context.io.err(`${progressLine(progress)}\n`),
        },
      );
    } finally {
      interrupt.stop();
    }
    context.print(result, () => ending(result));
    if (result.status !== 'completed') {
      throw new BatonError('precondition_failed', `flow ${flow} ended ${result.status}`, {
        status: result.status,
      });
    }
  },
};

export const flowCommands: Record<string, Command> = { 'flow list': list, 'flow run': run };
