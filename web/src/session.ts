/**
 * The logged-in tab: the CSRF secret and project the server answered at login, kept in
 * sessionStorage so a reload stays logged in. The session itself is the HttpOnly cookie, which
 * the page never sees; the token is never kept. The cookie belongs to the browser, not to a
 * tab, so the open tabs of this page share the session over a BroadcastChannel: a login in one
 * tab hands its CSRF secret to the others (the cookie they send is now that session's), a
 * logout ends them all, and a new tab asks the open ones. Nothing outlives the last tab.
 */
import type { WebSession } from './types.ts';

const key = 'baton.session';

export interface TabSession {
  readonly csrf: string;
  readonly project_id: string;
  /** The page disables its writes up front; the server refuses them anyway. */
  readonly read_only: boolean;
}

/** What the tabs of this page tell each other. */
export type TabMessage =
  | { readonly type: 'session'; readonly session: TabSession }
  | { readonly type: 'logout' }
  | { readonly type: 'ask' };

function isTabSession(value: unknown): value is TabSession {
  const session = value as Partial<TabSession> | null;
  return (
    typeof session?.csrf === 'string' &&
    typeof session.project_id === 'string' &&
    typeof session.read_only === 'boolean'
  );
}

export function loadSession(): TabSession | null {
  try {
    const value: unknown = JSON.parse(sessionStorage.getItem(key) ?? 'null');
    return isTabSession(value) ? tabSession(value) : null;
  } catch {
    return null;
  }
}

function tabSession(session: WebSession | TabSession): TabSession {
  return { csrf: session.csrf, project_id: session.project_id, read_only: session.read_only };
}

export function saveSession(session: WebSession | TabSession): TabSession {
  const tab = tabSession(session);
  sessionStorage.setItem(key, JSON.stringify(tab));
  return tab;
}

export function clearSession(): void {
  sessionStorage.removeItem(key);
}

/**
 * Join the other tabs: `onMessage` hears what they say (a `session` message with a valid
 * session, a `logout`, an `ask`); the result tells them something. Without BroadcastChannel a
 * tab stays on its own.
 */
export function joinTabs(onMessage: (message: TabMessage) => void): {
  readonly tell: (message: TabMessage) => void;
  readonly close: () => void;
} {
  if (typeof BroadcastChannel === 'undefined') return { tell: () => undefined, close: () => undefined };
  const channel = new BroadcastChannel(key);
  channel.onmessage = (event: MessageEvent<unknown>) => {
    const message = event.data as Partial<TabMessage> | null;
    if (message?.type === 'session' && isTabSession(message.session))
      onMessage({ type: 'session', session: tabSession(message.session) });
    else if (message?.type === 'logout' || message?.type === 'ask') onMessage({ type: message.type });
  };
  return { tell: (message) => channel.postMessage(message), close: () => channel.close() };
}
