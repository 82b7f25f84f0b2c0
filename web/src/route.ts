/**
 * Where the page is, in the URL fragment (the server serves one page at `/`):
 * `#/` the project, `#/w/<scope>` a workstream's workspace, `#/w/<scope>/markdown[?through=N]`
 * its human Markdown view, `#/work` the project's managed-work sessions and `#/work/<session>`
 * one session's work.
 */
import { useEffect, useState } from 'react';

export type Route =
  | { readonly view: 'project' }
  | { readonly view: 'workspace'; readonly scope_id: string }
  | { readonly view: 'markdown'; readonly scope_id: string; readonly through?: number }
  | { readonly view: 'sessions' }
  | { readonly view: 'session'; readonly session_id: string };

function decoded(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

export function parseRoute(hash: string): Route {
  if (hash === '#/work' || hash === '#/work/') return { view: 'sessions' };
  const work = /^#\/work\/([^/?]+)$/.exec(hash);
  if (work) {
    const session_id = decoded(work[1]!);
    return session_id === null ? { view: 'sessions' } : { view: 'session', session_id };
  }
  const match = /^#\/w\/([^/?]+)(\/markdown)?(?:\?through=(\d+))?$/.exec(hash);
  if (!match) return { view: 'project' };
  const scope_id = decoded(match[1]!);
  if (scope_id === null) return { view: 'project' };
  if (!match[2]) return { view: 'workspace', scope_id };
  return match[3] === undefined
    ? { view: 'markdown', scope_id }
    : { view: 'markdown', scope_id, through: Number(match[3]) };
}

export function href(route: Route): string {
  switch (route.view) {
    case 'project':
      return '#/';
    case 'sessions':
      return '#/work';
    case 'session':
      return `#/work/${encodeURIComponent(route.session_id)}`;
    case 'workspace':
      return `#/w/${encodeURIComponent(route.scope_id)}`;
    case 'markdown': {
      const base = `#/w/${encodeURIComponent(route.scope_id)}/markdown`;
      return route.through === undefined ? base : `${base}?through=${route.through}`;
    }
  }
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return route;
}
