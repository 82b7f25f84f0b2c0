/**
 * The Git workspace binding from the terminal: bind a work tree to a workstream once, show it,
 * remove it. Only the work tree's git directory is touched, never the database.
 */
import { scopeIdSchema } from '../../core/ledger/names.ts';
import { BatonError } from '../../core/errors.ts';
import { gitDir, readBinding, removeBinding, writeBinding } from '../binding.ts';
import {
  checkedProject,
  common,
  defaultProject,
  projectHelp,
  projectOption,
  UsageError,
  type Command,
} from '../command.ts';
import { databaseName, type Context } from '../context.ts';

/**
 * A warning when the local database exists and holds no project project_id: `baton init
 * --project billing` then `baton bind w` binds to project default, and every later command
 * would fail with "project default does not exist". Binding first and creating the project
 * after stays possible, so this warns and refuses nothing. No check on a server, whose token
 * decides the project, nor when no database is there yet.
 */
async function missingProject(
  context: Context,
  project_id: string,
  scope_id: string,
): Promise<string | undefined> {
  if (context.io.env.BATON_SERVER) return undefined;
  let projects: string[];
  try {
    projects = (await (await context.store()).listProjects()).map((project) => project.project_id);
  } catch {
    return undefined;
  }
  if (projects.includes(project_id)) return undefined;
  const others = projects.slice(0, 10);
  return [
    `warning: project ${project_id} does not exist in ${databaseName(context)} yet: commands here will fail until it does`,
    others.length === 0
      ? `  create it with: baton init${project_id === defaultProject ? '' : ` --project ${project_id}`}`
      : `  projects there: ${others.join(', ')}${projects.length > others.length ? ', …' : ''}; bind to one with: baton bind ${scope_id} --project ${others[0]!}`,
    '',
  ].join('\n');
}

const bind: Command = {
  positionals: true,
  summary: 'bind this Git work tree to a workstream (stored inside .git, never tracked)',
  usage: `baton bind SCOPE_ID [--project ID]      baton bind --show [--json]

  Later commands in this work tree use the bound workstream unless --scope or BATON_SCOPE
  says otherwise. The binding lives in <git-dir>/baton/binding.json: private to this clone.
${projectHelp}
  --show                print the binding of this work tree`,
  examples: ['baton bind billing-export', 'baton bind --show'],
  options: { help: common.help, ...projectOption, show: { type: 'boolean' }, json: { type: 'boolean' } },
  async run(context) {
    if (context.values.show === true) {
      if (context.positionals.length > 0) throw new UsageError('--show takes no SCOPE_ID');
      // Outside a work tree there is no binding to show, nor any to make: say so, as bind does.
      if ((await gitDir(context.cwd)) === undefined) {
        throw new BatonError(
          'precondition_failed',
          `${context.cwd} is not inside a Git work tree, so it has no binding; run this where the work is`,
          { cwd: context.cwd },
        );
      }
      const found = await readBinding(context.cwd);
      context.print(found ?? null, () =>
        found
          ? `Bound to workstream ${found.binding.scope_id} of project ${found.binding.project_id}\n  (${found.path})\n`
          : 'This work tree is not bound; bind it with baton bind SCOPE_ID\n',
      );
      return;
    }
    const [scope_id, ...extra] = context.positionals;
    if (scope_id === undefined || extra.length > 0) throw new UsageError('name exactly one SCOPE_ID to bind');
    if (!scopeIdSchema.safeParse(scope_id).success)
      throw new UsageError(`${JSON.stringify(scope_id)} is not a scope_id: 1-200 visible ASCII characters`);
    const project_id = checkedProject(await context.project());
    const binding = {
      schema: 'baton.workspace-binding/v1' as const,
      project_id,
      scope_id,
      bound_at: new Date().toISOString(),
    };
    const path = await writeBinding(context.cwd, binding);
    const missing = await missingProject(context, project_id, scope_id);
    if (missing !== undefined) context.io.err(missing);
    context.print({ binding, path }, () =>
      [
        `Bound this work tree to workstream ${scope_id} of project ${project_id}.`,
        `  stored in ${path} (inside the git directory: private to this clone, never tracked)`,
        '',
      ].join('\n'),
    );
  },
};

const unbind: Command = {
  positionals: true,
  summary: "remove this Git work tree's workstream binding",
  usage: 'baton unbind [--json]',
  examples: ['baton unbind'],
  options: { help: common.help, json: { type: 'boolean' } },
  async run(context) {
    if (context.positionals.length > 0) throw new UsageError('unbind takes no arguments');
    const path = await removeBinding(context.cwd);
    context.print({ removed: path ?? null }, () =>
      path ? `Unbound: removed ${path}\n` : 'This work tree was not bound.\n',
    );
  },
};

export const bindCommands: Record<string, Command> = { bind, unbind };
