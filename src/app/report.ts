/** read_report: the Handoff Report of a project or one workstream, frozen at the head it read. */
import { BatonError } from '../core/errors.ts';
import { parsePreparedHandoff } from '../core/handoff/prepared.ts';
import {
  reportRevisionLimit,
  summarize,
  type HandoffReport,
  type WorkstreamReport,
} from '../core/handoff/report.ts';
import type { ScopeKey } from '../core/ledger/names.ts';
import { readContinuity } from './continuity.ts';
import type { AppDeps } from './deps.ts';

export interface WorkstreamReportInput {
  readonly project_id: string;
  readonly scope_id: string;
  /** Read through this revision instead of the head: a view frozen earlier stays as it was. */
  readonly through?: number;
}

export async function readWorkstreamReport(
  deps: AppDeps,
  input: WorkstreamReportInput,
): Promise<WorkstreamReport> {
  const scope: ScopeKey = { project_id: input.project_id, scope_id: input.scope_id };
  // Freeze first: every later read is bounded by this head, so a concurrent commit cannot leak in.
  const head = await deps.store.revisionHead(scope);
  let through = head;
  if (input.through !== undefined) {
    if (!Number.isSafeInteger(input.through) || input.through < 0 || input.through > head) {
      throw new BatonError('invalid_input', `through is a revision from 0 to the head (${head})`, {
        through: input.through,
        head,
      });
    }
    through = input.through;
  }
  const continuity = await readContinuity(deps, { ...scope, through });
  if (through === 0) {
    return {
      scope_id: scope.scope_id,
      selection: { revision: 0 },
      revision_count: 0,
      current: null,
      revisions: [],
      continuity,
      trust: 'untrusted_history',
    };
  }
  const revisions = await deps.store.listRevisions(scope, { through, limit: reportRevisionLimit });
  const bodies = await Promise.all(
    revisions.map(async (revision) =>
      parsePreparedHandoff(await deps.store.getPrepared(scope.project_id, revision.prepared_digest)),
    ),
  );
  const latest = revisions[0]!;
  return {
    scope_id: scope.scope_id,
    selection: { revision: through },
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
        through: input.through?.[info.stream.scope_id],
      }),
    );
  }
  return { schema: 'baton.handoff-report/v1', project_id: input.project_id, workstreams };
}
