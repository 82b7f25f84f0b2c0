/** Every workstream of the project at a glance: current revision, transfer state, outcome state. */
import { visibleControls } from '../../src/core/text.ts';
import type { CardDraft } from './draft.ts';
import { isEdited } from './draft.ts';
import { useMessages } from './i18n.ts';
import { href } from './route.ts';
import { OutcomeBadge, TransferBadge } from './States.tsx';
import type { HandoffReport } from './types.ts';

/** The current objective as it may be shown: its control characters and overrides as escapes. */
function shownObjective(workstream: HandoffReport['workstreams'][number]): string | undefined {
  return workstream.current ? visibleControls(workstream.current.handoff.objective) : undefined;
}

export function ProjectView({
  report,
  drafts,
}: {
  report: HandoffReport;
  drafts: Readonly<Record<string, CardDraft>>;
}) {
  const t = useMessages();
  return (
    <section className="project-view" aria-labelledby="workstreams-title">
      <h1 id="workstreams-title">{t.workstreams}</h1>
      {report.workstreams.length === 0 ? (
        <p>{t.noWorkstreams}</p>
      ) : (
        <ul className="workstreams">
          {report.workstreams.map((workstream) => (
            <li key={workstream.scope_id} className="panel workstream-card" data-scope={workstream.scope_id}>
              <h2>
                <a href={href({ view: 'workspace', scope_id: workstream.scope_id })}>{workstream.scope_id}</a>
              </h2>
              <dl>
                <dt>{t.currentRevision}</dt>
                <dd className="revision">
                  {workstream.current
                    ? t.revisionOf(workstream.current.revision, workstream.revision_count)
                    : t.none}
                </dd>
                <dt>{t.objective}</dt>
                <dd className="objective" title={shownObjective(workstream)}>
                  {shownObjective(workstream) ?? t.none}
                </dd>
                <dt>{t.transferState}</dt>
                <dd>
                  <TransferBadge state={workstream.continuity.transfer_state} />
                </dd>
                <dt>{t.outcomeState}</dt>
                <dd>
                  <OutcomeBadge state={workstream.continuity.outcome_state} />
                </dd>
              </dl>
              {isEdited(drafts[workstream.scope_id]) && <p className="badge draft">{t.unsentDraft}</p>}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
