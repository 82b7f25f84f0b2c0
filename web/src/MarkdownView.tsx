/** The human Markdown view of a workstream's handoff, as the server renders it, shown as plain text. */
import { useEffect, useState } from 'react';
import type { Api } from './api.ts';
import { failureText } from './failure.ts';
import { useMessages } from './i18n.ts';
import { href } from './route.ts';

export function MarkdownView({ api, scope_id, through }: { api: Api; scope_id: string; through?: number }) {
  const t = useMessages();
  const [markdown, setMarkdown] = useState<string | null>(null);
  /** Why the load failed (rendered with failureText), or null. */
  const [error, setError] = useState<unknown>(null);

  useEffect(() => {
    let live = true;
    setMarkdown(null);
    setError(null);
    api.markdown(scope_id, through === undefined ? undefined : { through }).then(
      (result) => live && setMarkdown(result.markdown),
      (failure: unknown) => live && setError(failure),
    );
    return () => {
      live = false;
    };
  }, [api, scope_id, through]);

  return (
    <section className="markdown-view panel" aria-labelledby="markdown-title">
      <p>
        <a href={href({ view: 'workspace', scope_id })}>{t.backToWorkspace}</a>
      </p>
      <h1 id="markdown-title">{t.markdownTitle(scope_id)}</h1>
      {error !== null && (
        <p className="error" role="alert">
          {failureText(t, error)}
        </p>
      )}
      {markdown !== null && <pre className="markdown">{markdown}</pre>}
    </section>
  );
}
