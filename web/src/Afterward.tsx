/**
 * Below the workspace: "What happened afterward?" (contract, handoff, receipt and outcome
 * records in journal position order, positions never shown as times, with the transfer and
 * outcome states) and the revision trail (the count through the frozen selection, the latest
 * 20 latest first, the shown revision marked).
 */
import { useId } from 'react';
import { visibleControls } from '../../src/core/text.ts';
import { useMessages } from './i18n.ts';
import { href } from './route.ts';
import { OutcomeBadge, TransferBadge } from './States.tsx';
import type { WorkContinuity, WorkstreamReport } from './types.ts';

export function Afterward({ continuity }: { continuity: WorkContinuity }) {
  const t = useMessages();
  const id = useId();
  return (
    <section className="panel afterward" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{t.footerTitle}</h2>
      <p className="states">
        {t.transferState}: <TransferBadge state={continuity.transfer_state} /> · {t.outcomeState}:{' '}
        <OutcomeBadge state={continuity.outcome_state} />
      </p>
      <p className="hint">{t.positionNote}</p>
      {continuity.timeline.length === 0 ? (
        <p>{t.noRecords}</p>
      ) : (
        <ol className="timeline">
          {continuity.timeline.map((event) => (
            <li key={event.position} data-kind={event.kind} data-position={event.position}>
              <span className="position" aria-label={t.positionLabel(event.position)}>
                {t.position(event.position)}
              </span>{' '}
              <strong className="kind">{t.kinds[event.kind]}</strong>
              {event.status && <span className="badge">{event.status}</span>}{' '}
              <span className="summary">{visibleControls(event.summary)}</span>
              {event.session_id !== undefined && (
                <>
                  {' '}
                  <span className="muted">
                    {t.writtenForSession}{' '}
                    <a href={href({ view: 'session', session_id: event.session_id })}>
                      {visibleControls(event.session_id)}
                    </a>
                  </span>
                </>
              )}
            </li>
          ))}
        </ol>
      )}
      {continuity.truncated && <p className="hint">{t.truncated(continuity.timeline.length)}</p>}
    </section>
  );
}

export function RevisionTrail({ workstream }: { workstream: WorkstreamReport }) {
  const t = useMessages();
  const id = useId();
  return (
    <section className="panel trail" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{t.trailTitle}</h2>
      {workstream.revision_count === 0 ? (
        <p>{t.trailEmpty}</p>
      ) : (
        <>
          <p className="trail-count">
            {t.trailCount(workstream.revision_count, workstream.revisions.length)}
          </p>
          <ol className="revisions">
            {workstream.revisions.map((summary) => (
              <li
                key={summary.revision}
                data-revision={summary.revision}
                aria-current={summary.current ? 'true' : undefined}
                className={summary.current ? 'current' : undefined}
              >
                <a
                  href={href({ view: 'markdown', scope_id: workstream.scope_id, through: summary.revision })}
                >
                  {t.trailRead(summary.revision)}
                </a>
                {summary.current && <span className="badge current-mark">{t.trailCurrent}</span>}{' '}
                <span className="badge">{summary.disposition}</span>{' '}
                <span className="summary">{visibleControls(summary.objective)}</span>
              </li>
            ))}
          </ol>
        </>
      )}
    </section>
  );
}
