/**
 * Option helpers shared by the work commands: attribution labels, declared claims, the
 * workstream's current objective, and a --revision / --prepared selection.
 */
import { canonicalJson, digestPattern, type Digest } from '../../core/canonical.ts';
import type { PreparedHandoff } from '../../core/handoff/prepared.ts';
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

/** The workstream's head: its committed handoff (or null) and its objective. */
export async function currentWork(
  transport: Transport,
  scope_id: string,
): Promise<{
  head: { revision: number; digest: Digest; handoff: PreparedHandoff } | null;
  objective?: string;
}> {
  const context = await transport.invoke('prepare_context', { scope_id });
  const objective = context.handoff?.handoff.objective ?? context.work_contract?.record.objective;
  return { head: context.handoff, ...(objective === undefined ? {} : { objective }) };
}

/** What `baton handoff` hands over, as it compares with a committed handoff. */
export interface HandoffWords {
  readonly objective: string;
  readonly disposition: string;
  readonly current_state: readonly { readonly text: string; readonly basis: string }[];
  readonly next_action: { readonly text: string };
  readonly omissions: readonly string[];
  readonly blocked?: {
    readonly question: string;
    readonly options: readonly string[];
    readonly impact: string;
  };
}

/**
 * Whether a committed handoff says exactly this: the same objective, disposition, statements
 * (text and basis), next action, omissions and decision. Citations are not compared: a repeat
 * cites the boundary the first run stored.
 */
export function saysTheSame(handoff: PreparedHandoff, words: HandoffWords): boolean {
  const blocked = (value: HandoffWords['blocked']) =>
    value === undefined
      ? null
      : { question: value.question, options: [...value.options], impact: value.impact };
  return (
    canonicalJson({
      objective: handoff.objective,
      disposition: handoff.disposition,
      statements: handoff.statements.map(({ text, basis }) => ({ text, basis })),
      next_action: handoff.next_action.text,
      omissions: handoff.omissions,
      blocked: blocked(handoff.blocked),
    }) ===
    canonicalJson({
      objective: words.objective,
      disposition: words.disposition,
      statements: words.current_state.map(({ text, basis }) => ({ text, basis })),
      next_action: words.next_action.text,
      omissions: words.omissions,
      blocked: blocked(words.blocked),
    })
  );
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
