/**
 * A workstream as the bound-session tests find it: revision 1 committed, whose next action is to
 * fix the login redirect. Through the continuity operations themselves.
 */
import { handoffCurrentWork } from '../../src/app/continuity.ts';
import type { AppDeps } from '../../src/app/deps.ts';
import { commitHandoff } from '../../src/app/handoffs.ts';

/** All three receiver checks confirmed, as `accepted` needs. */
export const allConfirmed = {
  live_workspace: 'confirmed',
  capability: 'confirmed',
  authorization: 'confirmed',
} as const;

export async function commitFirstRevision(
  deps: AppDeps,
  at: { project_id: string; scope_id: string },
): Promise<void> {
  const prepared = await handoffCurrentWork(deps, {
    ...at,
    source_id: 'boundary-1',
    objective: 'Fix the login redirect',
    current_state: [{ text: 'The redirect loops', basis: 'declared' }],
    disposition: 'continue',
    next_action: { text: 'Fix the redirect and its test', basis: 'declared' },
  });
  await commitHandoff(deps, { ...at, prepared: prepared.digest, expected_head: 0 });
}
