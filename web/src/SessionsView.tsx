/**
 * The project's managed-work sessions at a glance (GET /v1/sessions), newest first: each one's
 * mode, lineage, binding, and its live contract (else its newest) with items per status and
 * criteria passed. It reloads every five seconds while the tab is visible.
 */
import { useCallback, useEffect, useState } from 'react';
import { visibleControls } from '../../src/core/text.ts';
import { ApiError, refreshIntervalMs, type Api } from './api.ts';
import { failureText } from './failure.ts';
import { useMessages } from './i18n.ts';
import { href } from './route.ts';
import { ContractBadge, ItemBadge } from './WorkBadges.tsx';
import type { ListedSession, ListSessionsResult, WorkItemStatus } from './types.ts';

function SessionCard({ listed }: { listed: ListedSession }) {
  const t = useMessages();
  const { contract } = listed;
  return (
    <li className="panel session-card" data-session={listed.session_id}>
      <h2>
        <a href={href({ view: 'session', session_id: listed.session_id })}>{listed.session_id}</a>
      </h2>
      <p className="facts">
        <span>
          {t.sessionMode}: {listed.work_mode ?? t.noHeader}
        </span>
        <span>
          {t.sessionStarted}: <time dateTime={listed.created_at}>{listed.created_at}</time>
        </span>
        {listed.parent_session_id !== null && (
          <a href={href({ view: 'session', session_id: listed.parent_session_id })}>
            {t.childOf(listed.parent_session_id)}
          </a>
        )}
        {listed.scope_id !== null && (
          <a href={href({ view: 'workspace', scope_id: listed.scope_id })}>{t.boundTo(listed.scope_id)}</a>
        )}
        {listed.goal !== null && (
          <span className="goal">
            {t.goal}: {visibleControls(listed.goal)}
          </span>
        )}
        {listed.terminal !== null && <span>{t.sessionTerminal(listed.terminal.status)}</span>}
        {listed.terminal?.handoff && <span>{t.handoffPrepared}</span>}
        {listed.contracts > 1 && <span>{t.contractsInAll(listed.contracts)}</span>}
      </p>
      {listed.error !== null && (
        <p className="error">
          {t.cannotProject}: {listed.error.code}: {listed.error.message}
        </p>
      )}
      {contract === null ? (
        listed.error === null && <p className="muted">{t.noContract}</p>
      ) : (
        <div className="contract-summary">
          <p>
            <span className="contract-id">{t.contractTitle(contract.contract_id, contract.revision)}</span>{' '}
            <ContractBadge status={contract.status} />
          </p>
          <p className="objective" title={visibleControls(contract.objective)}>
            {visibleControls(contract.objective)}
          </p>
          <p className="counts">
            <span>{t.itemsOf(contract.items.total)}</span>
            {(Object.entries(contract.items.by_status) as [WorkItemStatus, number][]).map(
              ([status, count]) => (
                <span key={status} className="count">
                  <ItemBadge status={status} /> {count}
                </span>
              ),
            )}
            <span>{t.criteriaPassed(contract.criteria.passed, contract.criteria.total)}</span>
          </p>
        </div>
      )}
    </li>
  );
}

export function SessionsView({ api }: { api: Api }) {
  const t = useMessages();
  const [result, setResult] = useState<ListSessionsResult | null>(null);
  const [failure, setFailure] = useState<unknown>(null);

  const load = useCallback(async () => {
    try {
      setResult(await api.sessions());
      setFailure(null);
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 401)) setFailure(error);
    }
  }, [api]);

  useEffect(() => {
    let timer = 0;
    let stopped = false;
    const tick = async () => {
      if (document.visibilityState === 'visible') await load();
      if (!stopped) timer = window.setTimeout(() => void tick(), refreshIntervalMs);
    };
    void tick();
    return () => {
      stopped = true;
      window.clearTimeout(timer);
    };
  }, [load]);

  return (
    <section className="sessions-view" aria-labelledby="sessions-title">
      <nav className="crumbs">
        <a href={href({ view: 'project' })}>{t.backToProject}</a>
        <span aria-hidden="true"> / </span>
        <h1 id="sessions-title">{t.sessionsTitle}</h1>
      </nav>
      {failure !== null && (
        <p className="error" role="alert">
          {t.workLoadFailed}: {failureText(t, failure)}
        </p>
      )}
      {result &&
        (result.total === 0 ? (
          <p>{t.noSessions}</p>
        ) : (
          <>
            <p className="muted">{t.sessionsShown(result.sessions.length, result.total)}</p>
            <ul className="sessions">
              {result.sessions.map((listed) => (
                <SessionCard key={listed.session_id} listed={listed} />
              ))}
            </ul>
          </>
        ))}
    </section>
  );
}
