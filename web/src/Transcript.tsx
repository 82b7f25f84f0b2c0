/**
 * A session's conversation (GET /v1/sessions/{id}/transcript), folded under the work: what the
 * person and Baton said, the model's turns, each tool call with its result, each model
 * request's cost, and in goal mode the goal and each audit of it. Loaded when opened, then, while
 * open, again as the session's work moves and every two seconds while the session lives; never
 * more often than every two seconds. It is history to read:
 * progress is the work above, never this.
 */
import { useEffect, useRef, useState } from 'react';
import type { Api } from './api.ts';
import { failureText } from './failure.ts';
import { useMessages } from './i18n.ts';
import type { Transcript, TranscriptEntry } from './types.ts';
import { visibleControls as shown } from '../../src/core/text.ts';

function Entry({ entry }: { entry: TranscriptEntry }) {
  const t = useMessages();
  switch (entry.type) {
    case 'message':
      return (
        <li className={`turn message ${entry.author}`} data-position={entry.position}>
          <strong>{entry.author === 'baton' ? t.authorBaton : t.authorPerson}</strong>
          <pre>{shown(entry.text)}</pre>
        </li>
      );
    case 'model':
      return entry.text === '' ? null : (
        <li className="turn model" data-position={entry.position}>
          <strong>{t.authorModel}</strong>
          <pre>{shown(entry.text)}</pre>
        </li>
      );
    case 'tool_call':
      return (
        <li className="turn tool-call" data-position={entry.position} data-tool-use-id={entry.tool_use_id}>
          <strong>
            {t.toolCall}: <code>{shown(entry.tool)}</code>
          </strong>{' '}
          <code className="tool-use-id">{shown(entry.tool_use_id)}</code>
          <pre>{shown(entry.input)}</pre>
        </li>
      );
    case 'tool_result':
      return (
        <li
          className={`turn tool-result${entry.is_error ? ' is-error' : ''}`}
          data-position={entry.position}
          data-tool-use-id={entry.tool_use_id}
        >
          <strong>
            {entry.is_error ? t.toolError : t.toolResult}: <code>{shown(entry.tool)}</code>
          </strong>{' '}
          <code className="tool-use-id">{shown(entry.tool_use_id)}</code>
          <pre>{shown(entry.output)}</pre>
        </li>
      );
    case 'model_request':
      return (
        <li className="turn model-request" data-position={entry.position}>
          {t.modelRequest(shown(entry.model), entry.attempts, entry.duration_ms)}
          {entry.input_tokens !== null && <> · {t.tokens(entry.input_tokens, entry.output_tokens ?? 0)}</>}
        </li>
      );
    case 'goal_audit':
      return (
        <li className={`turn goal-audit verdict-${entry.verdict}`} data-position={entry.position}>
          <strong>
            {t.goalAudit}: {t.verdicts[entry.verdict]}
          </strong>
          <pre>{shown(entry.reason)}</pre>
        </li>
      );
  }
}

/** The shortest time between two loads of an open transcript. */
const reloadMs = 2000;

export function SessionTranscript({
  api,
  session_id,
  position,
  live,
}: {
  api: Api;
  session_id: string;
  /** The session's work position: a new one reloads an open transcript. */
  position: number;
  /** The session has not ended: an open transcript is reloaded as its run goes on. */
  live: boolean;
}) {
  const t = useMessages();
  const [open, setOpen] = useState(false);
  const [transcript, setTranscript] = useState<Transcript | null>(null);
  const [failure, setFailure] = useState<unknown>(null);
  /** When the transcript was last asked for: a busy run reloads it at most every reloadMs. */
  const asked = useRef(0);
  // A run's messages and tool calls are not work events: while the session lives, an open
  // transcript also asks again every reloadMs.
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (!open || !live) return;
    const timer = setInterval(() => setTick((count) => count + 1), reloadMs);
    return () => clearInterval(timer);
  }, [open, live]);
  useEffect(() => {
    if (!open) return;
    let current = true;
    const load = () => {
      asked.current = performance.now();
      api.transcript(session_id).then(
        (loaded) => {
          if (!current) return;
          setTranscript(loaded);
          setFailure(null);
        },
        (error: unknown) => {
          if (current) setFailure(error);
        },
      );
    };
    // The latest position always loads, at most reloadMs after the last load: a run writing
    // many entries a second costs each viewer one request per reloadMs, not one per entry.
    const timer = setTimeout(load, Math.max(0, asked.current + reloadMs - performance.now()));
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [api, session_id, open, position, tick]);
  return (
    <details className="transcript" onToggle={(event) => setOpen(event.currentTarget.open)}>
      <summary>
        {t.conversation}
        {transcript !== null && ` (${transcript.total})`}
      </summary>
      <p className="hint">{t.conversationNote}</p>
      {transcript?.goal != null && (
        <p className="goal">
          <strong>{t.goal}:</strong> {shown(transcript.goal)}
        </p>
      )}
      {failure !== null && (
        <p className="error" role="alert">
          {t.conversationLoadFailed}: {failureText(t, failure)}
        </p>
      )}
      {transcript !== null &&
        (transcript.total === 0 ? (
          <p>{t.conversationEmpty}</p>
        ) : (
          <>
            {transcript.total > transcript.entries.length && (
              <p className="notice">{t.conversationLeftOut(transcript.total - transcript.entries.length)}</p>
            )}
            <ol className="turns">
              {transcript.entries.map((entry) => (
                <Entry key={entry.position} entry={entry} />
              ))}
            </ol>
          </>
        ))}
    </details>
  );
}
