/** read_report: the Handoff Report of a project or one workstream, frozen at the head it read. */
import {
  reportRevisionLimit,
  summarize,
  type HandoffReport,
  type WorkstreamReport,
} from '../core/handoff/report.ts';
import type { ScopeKey } from '../core/ledger/names.ts';
import { readContinuity } from './continuity.ts';
import { freezeSelection } from './selection.ts';
import type { AppDeps } from './deps.ts';
import { readPreparedHandoff } from './handoffs.ts';

export interface WorkstreamReportInput {
  readonly project_id: string;
  readonly scope_id: string;
  /** Read through this revision instead of the head: a view frozen earlier stays as it was. */
  readonly through?: number;
  /** Read the journal through this position, with through: the rest of an earlier frozen selection. */
  readonly position?: number;
}

export async function readWorkstreamReport(
  deps: AppDeps,
  input: WorkstreamReportInput,
): Promise<WorkstreamReport> {
  const scope: ScopeKey = { project_id: input.project_id, scope_id: input.scope_id };
  // Freeze first: every later read is bounded by the selection, so nothing newer leaks in.
  const selection = await freezeSelection(deps, scope, { revision: input.through, position: input.position });
  const through = selection.revision;
  const continuity = await readContinuity(deps, scope, selection);
  if (through === 0) {
    return {
      scope_id: scope.scope_id,
      selection,
      revision_count: 0,
      current: null,
      revisions: [],
      continuity,
      trust: 'untrusted_history',
    };
  }
  const revisions = await deps.store.listRevisions(scope, { through, limit: reportRevisionLimit });
  const bodies = await Promise.all(
    revisions.map((revision) => readPreparedHandoff(deps.store, scope.project_id, revision.prepared_digest)),
  );
  const latest = revisions[0]!;
  return {
    scope_id: scope.scope_id,
    selection,
    revision_count: through,
    current: {
      revision: latest.revision,
      digest: latest.prepared_digest,
      committed_at: latest.committed_at,
      handoff: bodies[0]!,
    },
    revisions: revisions.map((revision, index) => summarize(revision, bodies[index]!, through)),
    continuity,
    trust: 'untrusted_history',
  };
}

export interface ReportInput {
  readonly project_id: string;
  /** Per scope_id, the revision an earlier view was frozen at. */
  readonly through?: Readonly<Record<string, number>>;
}

/** Every workstream of the project, each frozen at the head it read. */
export async function readReport(deps: AppDeps, input: ReportInput): Promise<HandoffReport> {
  const streams = await deps.store.listStreams(input.project_id);
  const workstreams: WorkstreamReport[] = [];
  for (const info of streams) {
    if (info.stream.kind !== 'scope') continue;
    workstreams.push(
      await readWorkstreamReport(deps, {
        project_id: input.project_id,
        scope_id: info.stream.scope_id,
        through:
          input.through && Object.hasOwn(input.through, info.stream.scope_id)
            ? input.through[info.stream.scope_id]
            : undefined,
      }),
    );
  }
  return { schema: 'baton.handoff-report/v1', project_id: input.project_id, workstreams };
}
