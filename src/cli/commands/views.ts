/**
 * Reading the relay and reviewing experience: report, continuity, context, metrics,
 * experience list and review, and `call` for any operation with a JSON input.
 */
import { BatonError } from '../../core/errors.ts';
import type { OperationId } from '../../client/types.ts';
import { operations } from '../../app/operations.ts';
import {
  required,
  scopeHelp,
  scopedOptions,
  text,
  transportHelp,
  transportOptions,
  UsageError,
  whole,
  type Command,
} from '../command.ts';
import type { Context, ResolvedScope } from '../context.ts';
import { parseRef } from '../refs.ts';
import { readInput } from '../files.ts';
import * as render from '../render.ts';

/** Words joined by commas, in indented lines of at most about 70 characters. */
function wrap(words: readonly string[]): string {
  const lines: string[] = [];
  for (const word of words) {
    const last = lines.at(-1);
    if (last !== undefined && last.length + word.length < 70) lines[lines.length - 1] = `${last}, ${word}`;
    else lines.push(word);
  }
  return lines
    .map((line, index) => `${' '.repeat(24)}${line}${index < lines.length - 1 ? ',' : ''}`)
    .join('\n');
}

const allHelp = `  --all                 the whole project, even in a bound work tree`;

/** The named or bound workstream, or none (the whole project) with --all or when none is named. */
async function scopeOrProject(context: Context): Promise<ResolvedScope | undefined> {
  if (context.values.all === true) {
    if (context.values.scope !== undefined) throw new UsageError('give --scope or --all, not both');
    return undefined;
  }
  return context.optionalScope();
}

const frozenOptions = { through: { type: 'string' }, position: { type: 'string' } } as const;
const frozenHelp = `  --through N           read through this revision (an earlier frozen view)
  --position N          and through this journal position`;

function frozen(context: Context): { through?: number; position?: number } {
  const through = whole(context.values, 'through');
  const position = whole(context.values, 'position');
  return { ...(through === undefined ? {} : { through }), ...(position === undefined ? {} : { position }) };
}

const report: Command = {
  summary: 'the Handoff Report: Markdown in the terminal, --json for the projection',
  usage: `baton report [--scope SCOPE_ID | --all] [options]

  Without a named or bound workstream, every workstream of the project.
${allHelp}
${frozenHelp}
${scopeHelp}
${transportHelp}`,
  examples: ['baton report', 'baton report --scope billing-export --json'],
  operations: ['get_report'],
  options: { ...scopedOptions, ...frozenOptions, all: { type: 'boolean' } },
  async run(context) {
    const scope = await scopeOrProject(context);
    const view = frozen(context);
    if (!scope && Object.keys(view).length > 0)
      throw new UsageError('--through and --position read one workstream: name it with --scope');
    const input = { ...(scope ? { scope_id: scope.scope_id } : {}), ...view };
    const transport = await context.transport();
    if (context.values.json === true) {
      context.print(await transport.invoke('get_report', { ...input, format: 'json' }), () => '');
      return;
    }
    const result = await transport.invoke('get_report', { ...input, format: 'markdown' });
    context.io.out('markdown' in result ? result.markdown : JSON.stringify(result));
  },
};

const continuity: Command = {
  summary: "a workstream's continuity: transfer and outcome state, records in journal order",
  usage: `baton continuity [options]

${frozenHelp}
${scopeHelp}
${transportHelp}`,
  examples: ['baton continuity', 'baton continuity --scope billing-export --json'],
  operations: ['get_work_continuity'],
  options: { ...scopedOptions, ...frozenOptions },
  async run(context) {
    const { scope_id } = await context.scope();
    const result = await (
      await context.transport()
    ).invoke('get_work_continuity', { scope_id, ...frozen(context) });
    context.print(result, () => render.continuity(result));
  },
};

const experienceList: Command = {
  summary: 'experience candidates drafted from Task Outcomes, with their review state',
  usage: `baton experience list [--scope SCOPE_ID | --all] [options]

${allHelp}
${scopeHelp}
${transportHelp}`,
  examples: ['baton experience list', 'baton experience list --all --json'],
  operations: ['list_experience_candidates'],
  options: { ...scopedOptions, all: { type: 'boolean' } },
  async run(context) {
    const scope = await scopeOrProject(context);
    const result = await (
      await context.transport()
    ).invoke('list_experience_candidates', scope ? { scope_id: scope.scope_id } : {});
    context.print(result, () => render.candidates(result));
  },
};

const experienceReview: Command = {
  positionals: true,
  summary: 'approve or reject one experience candidate, once, with a note',
  usage: `baton experience review CANDIDATE --decision approved|rejected --note TEXT [options]

  CANDIDATE          the candidate's task-outcome source: SOURCE_ID[@DIGEST]
  --decision D       approved or rejected
  --note TEXT        why
  --reviewer LABEL   who reviewed (attribution only)
${scopeHelp}
${transportHelp}`,
  examples: [
    'baton experience review outcome-1f2e3d4c5b6a7980 --decision approved --note "Holds for every import"',
  ],
  operations: ['list_experience_candidates', 'review_experience'],
  fields: { decision: '--decision', note: '--note', reviewer: '--reviewer', candidate: 'CANDIDATE' },
  options: {
    ...scopedOptions,
    decision: { type: 'string' },
    note: { type: 'string' },
    reviewer: { type: 'string' },
  },
  async run(context) {
    const [typed, ...extra] = context.positionals;
    if (typed === undefined || extra.length > 0)
      throw new UsageError('name exactly one CANDIDATE (its source id)');
    const decision = required(context.values, 'decision');
    if (decision !== 'approved' && decision !== 'rejected')
      throw new UsageError(`--decision is approved or rejected, not ${JSON.stringify(decision)}`);
    const note = required(context.values, 'note');
    const { scope_id } = await context.scope();
    const transport = await context.transport();
    const wanted = parseRef(typed, 'CANDIDATE');
    const candidate = (await transport.invoke('list_experience_candidates', { scope_id })).find(
      (found) =>
        found.candidate.source_id === wanted.source_id &&
        (wanted.digest === undefined || found.candidate.digest === wanted.digest),
    );
    if (!candidate) {
      throw new BatonError(
        'not_found',
        `${scope_id} has no experience candidate ${typed}: see baton experience list`,
        {
          scope_id,
          candidate: typed,
        },
      );
    }
    const reviewer = text(context.values, 'reviewer');
    const result = await transport.invoke('review_experience', {
      scope_id,
      candidate: candidate.candidate,
      decision,
      note,
      ...(reviewer === undefined ? {} : { reviewer }),
    });
    context.print(result, () => render.reviewed(result));
  },
};

const contextCommand: Command = {
  summary: 'what to read before starting: current handoff, active contract, approved experience',
  usage: `baton context [--scope SCOPE_ID | --all] [options]

${allHelp}
${scopeHelp}
${transportHelp}`,
  examples: ['baton context', 'baton context --json'],
  operations: ['prepare_context'],
  options: { ...scopedOptions, all: { type: 'boolean' } },
  async run(context) {
    const scope = await scopeOrProject(context);
    const result = await (
      await context.transport()
    ).invoke('prepare_context', scope ? { scope_id: scope.scope_id } : {});
    context.print(result, () => render.context(result));
  },
};

const metrics: Command = {
  summary: "the project's continuity metrics, with the counts behind each rate",
  usage: `baton metrics [options]

${transportHelp}`,
  examples: ['baton metrics', 'baton metrics --json'],
  operations: ['get_metrics'],
  options: transportOptions,
  async run(context) {
    const result = await (await context.transport()).invoke('get_metrics', {});
    context.print(result, () => render.metrics(result));
  },
};

const call: Command = {
  positionals: true,
  summary: 'call any operation by its operationId with a JSON input; prints the JSON result',
  usage: `baton call OPERATION_ID [--input JSON | --input-file FILE] [options]

  OPERATION_ID        one of:
${wrap(operations.map((operation) => operation.operationId))}
  --input JSON        the input object (default {}); the project comes from --project or the token
  --input-file FILE   the input object from a file, or - for stdin
${transportHelp}`,
  examples: [`baton call continue_handoff --input '{"scope_id":"billing-export","selection":"latest"}'`],
  operations: operations.map((operation) => operation.operationId),
  options: { ...transportOptions, input: { type: 'string' }, 'input-file': { type: 'string' } },
  async run(context) {
    const [operationId, ...extra] = context.positionals;
    const known = operations.find((operation) => operation.operationId === operationId);
    if (!known || extra.length > 0)
      throw new UsageError(`name one OPERATION_ID, not ${JSON.stringify(context.positionals.join(' '))}`);
    const inline = text(context.values, 'input');
    const file = text(context.values, 'input-file');
    if (inline !== undefined && file !== undefined)
      throw new UsageError('give --input or --input-file, not both');
    const source = file === undefined ? (inline ?? '{}') : await readInput(file);
    let input: unknown;
    try {
      input = JSON.parse(source);
    } catch (error) {
      // The command line was right; the input was not: say so without the usage text.
      throw new UsageError(`the input is not JSON: ${(error as Error).message}`, { showUsage: false });
    }
    const transport = await context.transport();
    const result = await transport.invoke(operationId as OperationId, input as never);
    context.io.out(`${JSON.stringify(result, null, 2)}\n`);
  },
};

export const viewCommands: Record<string, Command> = {
  report,
  continuity,
  context: contextCommand,
  metrics,
  'experience list': experienceList,
  'experience review': experienceReview,
  call,
};
