/**
 * baton.toml for the commands that run the app: `baton.toml` in the working directory (none
 * there means the defaults), or the file of `--config FILE` (which must exist). Its `[work]`
 * section becomes deps.work, its `[judge]` section deps.judge; `[agent]` names the model `baton agent run` runs. Unknown keys are warnings printed to stderr; a file that is not
 * TOML, or a known key with a bad value, is a usage error (exit 2) naming the file or the key.
 */
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parse, TomlError } from 'smol-toml';
import type { AppDeps } from '../app/deps.ts';
import { systemClock } from '../core/clock.ts';
import { BatonError } from '../core/errors.ts';
import { configuredJudge } from '../agent/judge.ts';
import {
  defaultWorkConfig,
  readAgentConfig,
  readJudgeConfig,
  readWorkConfig,
  type AgentConfig,
  type JudgeConfig,
  type WorkConfig,
} from '../core/work/config.ts';
import { readFlowsConfig, type Flows } from '../core/work/flows.ts';
import { text, UsageError, type Options } from './command.ts';
import type { Context } from './context.ts';
import { namedFileError } from './files.ts';

export const configFile = 'baton.toml';

export const configOption = { config: { type: 'string' } } satisfies Options;
export const configHelp = `  --config FILE         the configuration file (default ./${configFile} when it exists)`;

export interface LoadedConfig {
  readonly work: WorkConfig;
  /** The model that judges semantic criteria; null when `[judge]` is absent. */
  readonly judge: JudgeConfig | null;
  /** The model Baton's own agent loop runs; null when `[agent]` is absent. */
  readonly agent: AgentConfig | null;
  /** The static flows `[flows]` declares (docs/flows.md); empty when none. */
  readonly flows: Flows;
  readonly warnings: readonly string[];
  /** The file read, or null when there was none. */
  readonly path: string | null;
}

async function readText(path: string, explicit: boolean): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' && !explicit) return null;
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new UsageError(`--config ${path}: no such file`, { showUsage: false });
    }
    throw namedFileError(error, path);
  }
}

/** Read and check the configuration of a working directory, or of an explicit file. */
export async function loadConfig(cwd: string, explicit?: string): Promise<LoadedConfig> {
  const path = explicit === undefined ? join(cwd, configFile) : resolve(cwd, explicit);
  const source = await readText(path, explicit !== undefined);
  if (source === null) {
    return { work: defaultWorkConfig, judge: null, agent: null, flows: {}, warnings: [], path: null };
  }
  let document: unknown;
  try {
    document = parse(source);
  } catch (error) {
    if (error instanceof TomlError) {
      throw new UsageError(`${path} is not valid TOML: ${error.message.split('\n')[0]}`, {
        showUsage: false,
      });
    }
    throw error;
  }
  try {
    const work = readWorkConfig(document, path);
    const judge = readJudgeConfig(document, path);
    const agent = readAgentConfig(document, path);
    const flows = readFlowsConfig(document, path);
    return {
      work: work.config,
      judge: judge.config,
      agent: agent.config,
      flows: flows.config,
      warnings: [...work.warnings, ...judge.warnings, ...agent.warnings, ...flows.warnings],
      path,
    };
  } catch (error) {
    if (error instanceof BatonError) throw new UsageError(error.message, { showUsage: false });
    throw error;
  }
}

const loaded = new WeakMap<Context, Promise<LoadedConfig>>();

/** The command's configuration, read once; each warning goes to stderr as `warning: …`. */
export function commandConfig(context: Context): Promise<LoadedConfig> {
  let config = loaded.get(context);
  if (!config) {
    config = loadConfig(context.cwd, text(context.values, 'config')).then((found) => {
      for (const warning of found.warnings) context.io.err(`warning: ${warning}\n`);
      return found;
    });
    loaded.set(context, config);
  }
  return config;
}

/** The app's dependencies for a local command: the store, the clock, `[work]` and `[judge]`. */
export async function appDeps(context: Context): Promise<AppDeps> {
  const { work, judge, flows } = await commandConfig(context);
  return {
    store: await context.store(),
    clock: systemClock,
    work,
    flows,
    ...(judge === null ? {} : { judge: configuredJudge(judge, context.io.env) }),
  };
}
