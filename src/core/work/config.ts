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
  const { config, warnings } = readSection(document, 'work', workConfigSchema, file);
  return { config: config ?? defaultWorkConfig, warnings };
}

/** The providers a model route speaks: any OpenAI-compatible endpoint, or Anthropic's. */
export const modelProviders = ['openai', 'anthropic'] as const;
export type ModelProvider = (typeof modelProviders)[number];

export const defaultModelEndpoints: Readonly<
  Record<ModelProvider, { base_url: string; api_key_env: string }>
> = {
  openai: { base_url: 'https://api.openai.com/v1', api_key_env: 'OPENAI_API_KEY' },
  anthropic: { base_url: 'https://api.anthropic.com', api_key_env: 'ANTHROPIC_API_KEY' },
};

/** Where a model is reached: the fields `[judge]` and `[agent]` share. */
const routeFields = {
  provider: z.enum(modelProviders),
  model: z.string().min(1).max(200),
  base_url: z
    .url({ protocol: /^https?$/ })
    .refine((value) => {
      const url = new URL(value);
      return url.username === '' && url.password === '' && url.search === '' && url.hash === '';
    }, 'holds no credentials, query or fragment: the key goes in the variable api_key_env names')
    .optional(),
  api_key_env: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'is the name of an environment variable')
    .optional(),
};

/** A key written into the file is refused, saying where it goes instead. */
function noKey(section: string) {
  return z
    .never({
      error: `must not hold the key: put it in an environment variable and name it in ${section}.api_key_env`,
    })
    .optional();
}

/** The provider's own endpoint and key variable where the section names none. */
function withEndpoint<T extends { provider: ModelProvider; base_url?: string; api_key_env?: string }>(
  config: T,
): Omit<T, 'api_key' | 'base_url' | 'api_key_env'> & { base_url: string; api_key_env: string } {
  const { api_key: _key, ...rest } = config as T & { api_key?: unknown };
  return {
    ...(rest as Omit<T, 'api_key' | 'base_url' | 'api_key_env'>),
    base_url: config.base_url ?? defaultModelEndpoints[config.provider].base_url,
    api_key_env: config.api_key_env ?? defaultModelEndpoints[config.provider].api_key_env,
  };
}

/**
 * The `[judge]` section: the model that judges semantic criteria (docs/judge.md). The key is
 * never in the file: `api_key_env` names the environment variable that holds it.
 */
export const judgeConfigSchema = z
  .object({
    ...routeFields,
    timeout_ms: z.number().int().min(1000).max(600_000).default(60_000),
    max_tokens: z.number().int().min(16).max(8192).default(1024),
    /** How many characters of evidence and workspace diff one judgement reads. */
    evidence_chars: z.number().int().min(1000).max(1_000_000).default(32_000),
    api_key: noKey('judge'),
  })
  .transform(withEndpoint);
export type JudgeConfig = z.output<typeof judgeConfigSchema>;

/** Read `[judge]` from a parsed baton.toml: null when there is none (semantic criteria stay unknown). */
export function readJudgeConfig(
  document: unknown,
  file = 'baton.toml',
): { config: JudgeConfig | null; warnings: string[] } {
  return readSection(document, 'judge', judgeConfigSchema, file);
}

/**
 * The `[agent]` section: the model Baton's own agent loop runs (`baton agent run`,
 * docs/agent.md), and the loop's bounds.
 */
export const agentConfigSchema = z
  .object({
    ...routeFields,
    /** One model request's time limit. */
    timeout_ms: z.number().int().min(1000).max(600_000).default(120_000),
    max_tokens: z.number().int().min(64).max(64_000).default(4096),
    /** Model turns before the run ends `max_turns`. */
    max_turns: z.number().int().min(1).max(1000).default(30),
    /** One shell tool call's time limit. */
    shell_timeout_ms: z.number().int().min(1000).max(3_600_000).default(120_000),
    /** How many characters of one tool's output the model is shown (the ledger keeps up to 64 KiB). */
    output_chars: z
      .number()
      .int()
      .min(1000)
      .max(64 * 1024)
      .default(16_000),
    api_key: noKey('agent'),
  })
  .transform(withEndpoint);
export type AgentConfig = z.output<typeof agentConfigSchema>;

/** Read `[agent]` from a parsed baton.toml: null when there is none (no model to run). */
export function readAgentConfig(
  document: unknown,
  file = 'baton.toml',
): { config: AgentConfig | null; warnings: string[] } {
  return readSection(document, 'agent', agentConfigSchema, file);
}

function readSection<S extends z.ZodType>(
  document: unknown,
  name: string,
  schema: S,
  file: string,
): { config: z.output<S> | null; warnings: string[] } {
  const warnings: string[] = [];
  const section = (document as Record<string, unknown> | null | undefined)?.[name];
  if (section === undefined) return { config: null, warnings };
  if (typeof section !== 'object' || section === null || Array.isArray(section)) {
    throw new BatonError('invalid_input', `${file}: [${name}] must be a table`, { key: name });
  }
  const shape = (schema instanceof z.ZodPipe ? schema.in : schema) as unknown as z.ZodObject;
  const known = new Set(Object.keys(shape.shape));
  for (const key of Object.keys(section)) {
    if (!known.has(key)) warnings.push(`${file}: unknown key ${name}.${echoed(key)} is ignored`);
  }
  const parsed = schema.safeParse(section);
  if (!parsed.success) throw configRefusal(file, name, parsed.error);
  return { config: parsed.data, warnings };
}

/** A section of baton.toml refused: its first issue named by its key (`judge.timeout_ms …`). */
export function configRefusal(file: string, section: string, error: z.ZodError): BatonError {
  const issues = schemaIssues(error);
  const issue = issues[0]!;
  return new BatonError('invalid_input', `${file}: ${section}.${issue.path} ${issue.message}`, {
    key: `${section}.${issue.path}`,
    issues,
  });
}
