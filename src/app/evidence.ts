/** Exact evidence is validated when it is written: same scope, and readable with its identity now. */
import { BatonError } from '../core/errors.ts';
import { requireSameScope } from '../core/continuity/claims.ts';
import type { LocatedCitation } from '../core/handoff/prepared.ts';
import { checkCitations } from '../core/handoff/resolution.ts';
import type { AppDeps } from './deps.ts';

export async function requireReadableEvidence(
  deps: AppDeps,
  project_id: string,
  scope_id: string,
  located: readonly LocatedCitation[],
  what: string,
): Promise<void> {
  requireSameScope(scope_id, located, what);
  const checks = await checkCitations(scope_id, located, (ref) => deps.store.checkSource(project_id, ref));
  const unreadable = checks.flatMap((check) => (check.status === 'unavailable' ? [check] : []));
  if (unreadable.length === 0) return;
  const first = unreadable[0]!;
  throw new BatonError(
    'invalid_input',
    `${what} is invalid at ${first.location}: the cited source ${first.citation.source_id} is ${first.reason}`,
    {
      issues: unreadable.map((check) => ({
        path: check.location,
        message: `citation unavailable: ${check.reason}`,
      })),
    },
  );
}
