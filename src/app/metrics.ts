/** continuity_metrics: the project's continuity rates, computed from the ledger each time. */
import { computeMetrics, type ContinuityMetrics } from '../core/continuity/metrics.ts';
import { readWorkEntries } from '../core/continuity/projection.ts';
import { workKinds } from '../core/continuity/records.ts';
import type { AppDeps } from './deps.ts';
import { readKinds } from './experience.ts';

export async function continuityMetrics(
  deps: AppDeps,
  input: { project_id: string },
): Promise<ContinuityMetrics & { project_id: string }> {
  const streams = await deps.store.listStreams(input.project_id);
  const scopes = [];
  for (const info of streams) {
    if (info.stream.kind !== 'scope') continue;
    const scope = { project_id: input.project_id, scope_id: info.stream.scope_id };
    scopes.push(readWorkEntries(scope.scope_id, await readKinds(deps, scope, workKinds)).records);
  }
  return { project_id: input.project_id, ...computeMetrics(scopes) };
}
