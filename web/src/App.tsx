/**
 * The Handoff Report page: login, the project view, one workspace per workstream and the
 * Markdown view. It owns everything a refresh must not touch (drafts, send attempts, forms,
 * per workstream) apart from the report it reloads every five seconds while the tab is
 * visible and nothing on screen is unsent or running.
 */
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { api as makeApi, ApiError, login, refreshIntervalMs } from './api.ts';
import { isEdited, type CardDraft } from './draft.ts';
import { failureText } from './failure.ts';
import { isLocale, localeNames, locales, MessagesContext, type Locale, type Messages } from './i18n.ts';
import { Login } from './Login.tsx';
import { MarkdownView } from './MarkdownView.tsx';
import { ProjectView } from './ProjectView.tsx';
import { emptyOutcome, emptyReceiver, hasOutcomeInput, hasReceiverInput, type Forms } from './forms.ts';
import { runPreflight, type Preflight } from './preflight.ts';
import { href, useRoute } from './route.ts';
import type { SendAttempt } from './send.ts';
import {
  clearSession,
  joinTabs,
  loadSession,
  saveSession,
  type TabMessage,
  type TabSession,
} from './session.ts';
import type { HandoffReport, WebSession } from './types.ts';
import { SessionsView } from './SessionsView.tsx';
import { SessionWork } from './SessionWork.tsx';
import { Workspace } from './Workspace.tsx';

function initialLocale(): Locale {
  const saved = localStorage.getItem('baton.locale');
  if (isLocale(saved)) return saved;
  return navigator.language.toLowerCase().startsWith('zh') ? 'zh-CN' : 'en';
}

/** A map kept per workstream: setting undefined removes the entry; clear empties it. */
/**
 * Values kept per workstream in this tab. `bind(key)` makes a setter for one key; once the
 * memory is cleared (a logout), a setter made before does nothing, so a send or a load still
 * running for the session that ended cannot write into the next session's memory.
 */
function useKeyed<T>() {
  const [map, setMap] = useState<Readonly<Record<string, T>>>({});
  const epoch = useRef(0);
  const bind = useCallback((key: string) => {
    const made = epoch.current;
    return (value: T | undefined) => {
      if (epoch.current !== made) return;
      setMap((old) => {
        const next = { ...old };
        if (value === undefined) delete next[key];
        else next[key] = value;
        return next;
      });
    };
  }, []);
  const clear = useCallback(() => {
    epoch.current += 1;
    setMap({});
  }, []);
  return [map, bind, clear] as const;
}

type Pause = 'edits' | 'action' | 'hidden' | null;

export function App() {
  const [locale, setLocale] = useState<Locale>(initialLocale);
  const t: Messages = locales[locale];
  const [session, setSession] = useState<TabSession | null>(loadSession);
  /** Whether the login form shows because the session ended (rather than a logout or a first visit). */
  const [ended, setEnded] = useState(false);
  const route = useRoute();
  const [report, setReport] = useState<HandoffReport | null>(null);
  const [loads, setLoads] = useState(0);
  /** Why the last load failed (rendered with failureText), or null. */
  const [loadError, setLoadError] = useState<unknown>(null);
  const [drafts, bindDraft, clearDrafts] = useKeyed<CardDraft>();
  const [attempts, bindAttempt, clearAttempts] = useKeyed<SendAttempt>();
  const [forms, bindForms, clearForms] = useKeyed<Forms>();
  const [preflights, bindPreflight, clearPreflights] = useKeyed<Preflight>();
  /** The project the drafts, attempts and forms in memory were made in. */
  const memoryOf = useRef(session?.project_id);
  const [busy, setBusy] = useState(0);
  const [hidden, setHidden] = useState(() => document.visibilityState !== 'visible');

  useEffect(() => {
    document.documentElement.lang = locale;
    document.title = t.appTitle;
    localStorage.setItem('baton.locale', locale);
  }, [locale, t]);

  /** The managed-work views load their own data: the report is neither shown nor reloaded there. */
  const onWork = route.view === 'sessions' || route.view === 'session';
  const scope = route.view === 'workspace' || route.view === 'markdown' ? route.scope_id : null;
  const scopeForms = scope === null ? undefined : forms[scope];
  const shownRevision =
    scope === null ? 0 : (report?.workstreams.find((w) => w.scope_id === scope)?.selection.revision ?? 0);
  const pause: Pause =
    busy > 0
      ? 'action'
      : route.view === 'workspace' &&
          (isEdited(drafts[route.scope_id]) ||
            attempts[route.scope_id] !== undefined ||
            hasReceiverInput(scopeForms?.receiver, shownRevision) ||
            hasOutcomeInput(scopeForms?.outcome))
        ? 'edits'
        : hidden
          ? 'hidden'
          : null;
  const pauseRef = useRef<Pause>(pause);
  pauseRef.current = pause;
  const onWorkRef = useRef(onWork);
  onWorkRef.current = onWork;
  const workspaceRef = useRef<string | null>(null);
  workspaceRef.current = route.view === 'workspace' ? route.scope_id : null;

  /** Back to the login form; what was typed stays for a login to the same project. */
  const signOut = useCallback((why: 'ended' | 'logout') => {
    clearSession();
    setSession(null);
    setReport(null);
    setLoadError(null);
    setEnded(why === 'ended');
  }, []);

  /** Forget everything typed, sent or checked in this tab: no later login may see or send it. */
  const forget = () => {
    clearDrafts();
    clearAttempts();
    clearForms();
    clearPreflights();
  };

  const sessionRef = useRef(session);
  sessionRef.current = session;
  /**
   * A client for this session. Its 401 signs out only while its session is still the page's:
   * a late answer to a session already ended must not end the one logged in since.
   */
  const client = useMemo(
    () =>
      session
        ? makeApi(session.csrf, () => {
            if (sessionRef.current?.csrf === session.csrf) signOut('ended');
          })
        : null,
    [session, signOut],
  );
  const clientRef = useRef(client);
  clientRef.current = client;

  /**
   * Load the project's report, and the open workspace's preflight with it, so that both change
   * together and a refresh never flashes a mismatch. A background load that lands while paused
   * is dropped.
   */
  const load = useCallback(
    async (mode: 'background' | 'user') => {
      if (!client) return;
      try {
        const next = await client.report();
        const scope = workspaceRef.current;
        const shown = next.workstreams.find((w) => w.scope_id === scope);
        const preflight =
          scope !== null && shown?.current
            ? await runPreflight(client, scope, shown.selection.revision)
            : null;
        if (mode === 'background' && pauseRef.current !== null) return;
        // A report of a session ended while it loaded (another project's, perhaps) is dropped.
        if (clientRef.current !== client) return;
        setReport(next);
        if (scope !== null && preflight) bindPreflight(scope)(preflight);
        setLoads((n) => n + 1);
        setLoadError(null);
      } catch (error) {
        // A 401 has already returned to the login form (the client's onUnauthorized); an ended
        // session's failure is not this one's.
        if (clientRef.current === client && !(error instanceof ApiError && error.status === 401))
          setLoadError(error);
      }
    },
    [client],
  );

  useEffect(() => {
    void load('user');
  }, [load]);

  // Back from a managed-work view, whose time the report did not follow: load it at once.
  const wasOnWork = useRef(onWork);
  useEffect(() => {
    if (wasOnWork.current && !onWork) void load('user');
    wasOnWork.current = onWork;
  }, [onWork, load]);

  // The five-second refresh: only while logged in, visible and not paused; it changes no control.
  useEffect(() => {
    if (!client) return;
    let timer = 0;
    const tick = async () => {
      if (pauseRef.current === null && !onWorkRef.current) await load('background');
      timer = window.setTimeout(() => void tick(), refreshIntervalMs);
    };
    timer = window.setTimeout(() => void tick(), refreshIntervalMs);
    const onVisibility = () => setHidden(document.visibilityState !== 'visible');
    document.addEventListener('visibilitychange', onVisibility);
    return () => {
      window.clearTimeout(timer);
      document.removeEventListener('visibilitychange', onVisibility);
    };
  }, [client, load]);

  /** Run a user action: the refresh pauses while it runs, and the report is reloaded after it. */
  const act = useCallback(async <T,>(action: () => Promise<T>): Promise<T> => {
    setBusy((n) => n + 1);
    try {
      return await action();
    } finally {
      setBusy((n) => n - 1);
    }
  }, []);

  /** Take a session on: one logged in here, or in another tab (whose cookie this tab now sends). */
  const adopt = (next: WebSession | TabSession): TabSession => {
    if (next.project_id !== memoryOf.current) forget();
    memoryOf.current = next.project_id;
    const saved = saveSession(next);
    setSession(saved);
    setEnded(false);
    return saved;
  };

  const tabs = useRef<ReturnType<typeof joinTabs> | null>(null);
  const onTabMessage = useRef<(message: TabMessage) => void>(() => undefined);
  onTabMessage.current = (message) => {
    const mine = sessionRef.current;
    if (message.type === 'ask') {
      if (mine) tabs.current?.tell({ type: 'session', session: mine });
    } else if (message.type === 'session') {
      if (mine?.csrf !== message.session.csrf) adopt(message.session);
    } else if (mine) {
      forget();
      signOut('ended');
    }
  };
  useEffect(() => {
    const joined = joinTabs((message) => onTabMessage.current(message));
    tabs.current = joined;
    if (!sessionRef.current) joined.tell({ type: 'ask' });
    return () => {
      tabs.current = null;
      joined.close();
    };
  }, []);

  const onLogin = async (token: string) => {
    const created = adopt(await login(token));
    tabs.current?.tell({ type: 'session', session: created });
  };

  const onLogout = async () => {
    try {
      await client?.logout();
    } finally {
      forget();
      signOut('logout');
      tabs.current?.tell({ type: 'logout' });
    }
  };

  const status =
    pause === null
      ? t.autoRefreshOn
      : t.autoRefreshPaused(
          pause === 'edits' ? t.pausedEdits : pause === 'action' ? t.pausedAction : t.pausedHidden,
        );

  return (
    <MessagesContext.Provider value={t}>
      <header className="top">
        <a className="brand" href={href({ view: 'project' })}>
          {t.appTitle}
        </a>
        {session && <span className="project">{t.project(session.project_id)}</span>}
        {session?.read_only && (
          <span className="badge read-only" title={t.readOnlyHint}>
            {t.readOnly}
          </span>
        )}
        {session && (
          <nav className="views" aria-label={t.appTitle}>
            <a href={href({ view: 'project' })} aria-current={onWork ? undefined : 'page'}>
              {t.workstreams}
            </a>
            <a href={href({ view: 'sessions' })} aria-current={onWork ? 'page' : undefined}>
              {t.managedWork}
            </a>
          </nav>
        )}
        {session && !onWork && (
          <span className="refresh" role="status" data-pause={pause ?? 'none'}>
            {status}
          </span>
        )}
        {session && !onWork && (
          <button type="button" onClick={() => void load('user')}>
            {t.refreshNow}
          </button>
        )}
        <label className="locale">
          <span>{t.language}</span>
          <select
            value={locale}
            onChange={(event) => isLocale(event.target.value) && setLocale(event.target.value)}
          >
            {Object.entries(localeNames).map(([value, name]) => (
              <option key={value} value={value} lang={value}>
                {name}
              </option>
            ))}
          </select>
        </label>
        {session && (
          <button type="button" onClick={() => void onLogout()}>
            {t.logOut}
          </button>
        )}
      </header>
      <main data-loads={loads}>
        {!session || !client ? (
          <Login onLogin={onLogin} ended={ended} />
        ) : (
          <>
            {loadError !== null && !onWork && (
              <p className="error" role="alert">
                {t.loadFailed}: {failureText(t, loadError)}
              </p>
            )}
            {route.view === 'project' && report && <ProjectView report={report} drafts={drafts} />}
            {route.view === 'workspace' && report && (
              <Workspace
                key={route.scope_id}
                api={client}
                scope_id={route.scope_id}
                readOnly={session.read_only}
                workstream={report.workstreams.find((w) => w.scope_id === route.scope_id)}
                preflight={preflights[route.scope_id]}
                setPreflight={bindPreflight(route.scope_id)}
                draft={drafts[route.scope_id]}
                setDraft={bindDraft(route.scope_id)}
                attempt={attempts[route.scope_id]}
                setAttempt={bindAttempt(route.scope_id)}
                forms={scopeForms ?? { receiver: emptyReceiver(shownRevision), outcome: emptyOutcome() }}
                setForms={bindForms(route.scope_id)}
                act={act}
                reload={() => load('user')}
              />
            )}
            {route.view === 'markdown' && (
              <MarkdownView api={client} scope_id={route.scope_id} through={route.through} />
            )}
            {route.view === 'sessions' && <SessionsView api={client} />}
            {route.view === 'session' && (
              <SessionWork
                key={route.session_id}
                api={client}
                session_id={route.session_id}
                readOnly={session.read_only}
              />
            )}
          </>
        )}
      </main>
    </MessagesContext.Provider>
  );
}
