/**
 * The `[work]` section of baton.toml, with the spec's keys and defaults. Unknown keys are
 * reported as warnings, never refused: a newer Baton's configuration still loads. A known key
 * with a bad value is refused, naming the key.
 */
import { z } from 'zod';
import { BatonError } from '../errors.ts';
import { schemaIssues } from '../records.ts';
import { echoed } from '../text.ts';
import { contractBounds } from './model.ts';
import { workModes } from './session.ts';

export const workConfigSchema = z.object({
  enabled: z.boolean().default(true),
  default_mode: z.enum(workModes).default('direct'),
  max_items: z.number().int().min(1).max(contractBounds.items).default(20),
  max_revisions: z.number().int().min(1).max(contractBounds.revisions).default(8),
  max_parallel: z.number().int().min(1).max(256).default(4),
  confirmation: z.enum(['risk-based', 'always', 'never']).default('risk-based'),
  /** One verification's whole run, all criteria together: 10 minutes. */
  verification_budget_ms: z.number().int().min(1000).max(86_400_000).default(600_000),
});
export type WorkConfig = z.output<typeof workConfigSchema>;

export const defaultWorkConfig: WorkConfig = workConfigSchema.parse({});

/**
 * Read `[work]` from a parsed baton.toml (any value); unknown keys become warnings. Messages
 * name the file as `file` (default baton.toml).
 */
export function readWorkConfig(
  document: unknown,
  file = 'baton.toml',
): { config: WorkConfig; warnings: string[] } {
  const warnings: string[] = [];
  const section = (document as { work?: unknown } | null | undefined)?.work;
  if (section === undefined) return { config: defaultWorkConfig, warnings };
  if (typeof section !== 'object' || section === null || Array.isArray(section)) {
    throw new BatonError('invalid_input', `${file}: [work] must be a table`, { key: 'work' });
  }
  const known = new Set(Object.keys(workConfigSchema.shape));
  for (const key of Object.keys(section)) {
    if (!known.has(key)) warnings.push(`${file}: unknown key work.${echoed(key)} is ignored`);
  }
  const parsed = workConfigSchema.safeParse(section);
  if (!parsed.success) {
    const issue = schemaIssues(parsed.error)[0]!;
    throw new BatonError('invalid_input', `${file}: work.${issue.path} ${issue.message}`, {
      key: `work.${issue.path}`,
      issues: schemaIssues(parsed.error),
    });
  }
  return { config: parsed.data, warnings };
}
