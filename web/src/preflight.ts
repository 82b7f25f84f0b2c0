/**
 * The receiver's preflight: Continue on the latest committed handoff, remembered with the
 * revision the workspace showed when it ran. Choices bind only when the two are the same.
 */
import type { Api } from './api.ts';
import type { HandoffResolution } from './types.ts';

export interface Preflight {
  /** The revision the workspace showed when this preflight ran. */
  readonly shown: number;
  readonly result?: HandoffResolution;
  /** Why it could not run (rendered with failureText). */
  readonly failure?: unknown;
}

export async function runPreflight(api: Api, scope_id: string, shown: number): Promise<Preflight> {
  try {
    return { shown, result: await api.continueLatest(scope_id) };
  } catch (error) {
    return { shown, failure: error };
  }
}

/** The exact revision Continue resolved latest to. */
export function latestRevision(preflight: Preflight | undefined): number | undefined {
  const selection = preflight?.result?.selection;
  return selection?.kind === 'exact' ? selection.revision : undefined;
}
