/**
 * The logged-in tab: the CSRF secret and project the server answered at login, kept in
 * sessionStorage (this tab only) so a reload stays logged in. The session itself is the
 * HttpOnly cookie, which the page never sees; the token is never kept.
 */
import type { WebSession } from './types.ts';

const key = 'baton.session';

export interface TabSession {
  readonly csrf: string;
  readonly project_id: string;
}

export function loadSession(): TabSession | null {
  try {
    const value = JSON.parse(sessionStorage.getItem(key) ?? 'null') as Partial<TabSession> | null;
    return typeof value?.csrf === 'string' && typeof value.project_id === 'string'
      ? { csrf: value.csrf, project_id: value.project_id }
      : null;
  } catch {
    return null;
  }
}

export function saveSession(session: WebSession): TabSession {
  const tab = { csrf: session.csrf, project_id: session.project_id };
  sessionStorage.setItem(key, JSON.stringify(tab));
  return tab;
}

export function clearSession(): void {
  sessionStorage.removeItem(key);
}
