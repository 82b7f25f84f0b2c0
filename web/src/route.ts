/**
 * Where the page is, in the URL fragment (the server serves one page at `/`):
 * `#/` the project, `#/w/<scope>` a workstream's workspace, `#/w/<scope>/markdown[?through=N]`
 * its human Markdown view.
 */
import { useEffect, useState } from 'react';

export type Route =
  | { readonly view: 'project' }
  | { readonly view: 'workspace'; readonly scope_id: string }
  | { readonly view: 'markdown'; readonly scope_id: string; readonly through?: number };

export function parseRoute(hash: string): Route {
  const match = /^#\/w\/([^/?]+)(\/markdown)?(?:\?through=(\d+))?$/.exec(hash);
  if (!match) return { view: 'project' };
  let scope_id: string;
  try {
    scope_id = decodeURIComponent(match[1]!);
  } catch {
    return { view: 'project' };
  }
  if (!match[2]) return { view: 'workspace', scope_id };
  return match[3] === undefined
    ? { view: 'markdown', scope_id }
    : { view: 'markdown', scope_id, through: Number(match[3]) };
}

export function href(route: Route): string {
  if (route.view === 'project') return '#/';
  const base = `#/w/${encodeURIComponent(route.scope_id)}`;
  if (route.view === 'workspace') return base;
  return route.through === undefined ? `${base}/markdown` : `${base}/markdown?through=${route.through}`;
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
