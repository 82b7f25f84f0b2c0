/**
 * Option helpers shared by the work commands: attribution labels, declared claims, the
 * workstream's current objective, and a --revision / --prepared selection.
 */
import { digestPattern, type Digest } from '../../core/canonical.ts';
import { text, UsageError, whole } from '../command.ts';
import type { Context } from '../context.ts';
import type { Transport } from '../transport.ts';

export const attributionOptions = {
  agent: { type: 'string' },
  human: { type: 'string' },
} as const;

export const attributionHelp = `  --agent LABEL, --human LABEL   attribution for people (never identity or access control)`;

export function attribution(context: Context): { agent?: string; human?: string } | undefined {
  const agent = text(context.values, 'agent');
  const human = text(context.values, 'human');
  if (agent === undefined && human === undefined) return undefined;
  return { ...(agent === undefined ? {} : { agent }), ...(human === undefined ? {} : { human }) };
}

export function declared(texts: readonly string[]) {
  return texts.map((claim) => ({ text: claim, basis: 'declared' as const }));
}

/** The objective the workstream is working on: its committed handoff's, else its contract's. */
export async function currentObjective(transport: Transport, scope_id: string): Promise<string | undefined> {
  const context = await transport.invoke('prepare_context', { scope_id });
  return context.handoff?.handoff.objective ?? context.work_contract?.record.objective;
}

export function digestOption(context: Context, name: string): Digest | undefined {
  const value = text(context.values, name);
  if (value !== undefined && !digestPattern.test(value)) {
    throw new UsageError(`--${name} takes a digest sha256:<64 hex>, not ${JSON.stringify(value)}`);
  }
  return value as Digest | undefined;
}

/** --revision N or --prepared DIGEST, at most one; undefined for neither. */
export function selectionOption(context: Context): { exact: number } | { prepared: Digest } | undefined {
  const revision = whole(context.values, 'revision', { min: 1 });
  const prepared = digestOption(context, 'prepared');
  if (revision !== undefined && prepared !== undefined)
    throw new UsageError('give --revision N or --prepared DIGEST, not both');
  if (revision !== undefined) {
    return { exact: revision };
  }
  return prepared === undefined ? undefined : { prepared };
}

export const selectionHelp = `  --revision N          an exact committed revision
  --prepared DIGEST     a Prepared Handoff by digest (transported, not committed)`;
