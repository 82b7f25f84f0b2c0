/**
 * "What am I handing off?": the card prefilled from the current committed handoff. Editing
 * writes nothing; Send Handoff prepares and publishes one attempt, shows a partial success
 * (prepared, publishing not confirmed) and retries that same Prepared Handoff.
 */
import { useEffect, useId, useMemo, useRef, useState, type FormEvent } from 'react';
import { visibleControls } from '../../src/core/text.ts';
import { cardFields, emptyItem, isEdited, prefill, type Draft, type DraftItem } from './draft.ts';
import { failureText } from './failure.ts';
import { FieldError } from './FieldError.tsx';
import { useMessages } from './i18n.ts';
import { publish, send } from './send.ts';
import type { Disposition } from './types.ts';
import type { WorkspaceProps } from './Workspace.tsx';

const dispositions: readonly Disposition[] = ['continue', 'blocked', 'complete'];

type Props = WorkspaceProps & { readonly workstream: NonNullable<WorkspaceProps['workstream']> };

/**
 * Under a field whose text holds direction overrides or control characters (which the field
 * shows as the browser renders them: an override reorders what the reader sees), a note with
 * the text as stored, those characters written as escapes. Nothing when there are none.
 */
function HiddenCharacters({ id, text }: { id: string; text: string }) {
  const t = useMessages();
  if (!holdsHidden(text)) return null;
  const shown = visibleControls(text);
  return (
    <p id={id} className="notice hidden-characters">
      {t.hiddenCharacters} <code>{shown}</code>
    </p>
  );
}

/** Whether text holds what visibleControls escapes (a CRLF, which it only turns into LF, aside). */
function holdsHidden(text: string): boolean {
  return visibleControls(text) !== text.replaceAll('\r\n', '\n');
}

/** The id of the HiddenCharacters note for a field, when it has one. */
function describedByHidden(id: string, text: string): string | undefined {
  return holdsHidden(text) ? id : undefined;
}

export function SenderCard({
  api,
  scope_id,
  readOnly,
  workstream,
  draft,
  setDraft,
  attempt,
  setAttempt,
  act,
  reload,
}: Props) {
  const t = useMessages();
  const id = useId();
  const [sent, setSent] = useState<number | null>(null);
  const shown = workstream.selection.revision;
  const handoff = workstream.current?.handoff ?? null;
  const fresh = useMemo(() => prefill(handoff, shown), [handoff, shown]);
  const edited = isEdited(draft);
  const value: Draft = edited && draft ? draft.current : fresh;
  const running = attempt?.phase === 'preparing' || attempt?.phase === 'committing';
  const errors = (attempt?.phase === 'failed' && attempt.fields) || {};
  const submitRef = useRef<HTMLButtonElement>(null);
  /** Set after a send: then the focus goes to the first refused field, or back to Send when lost. */
  const [settled, setSettled] = useState(0);

  /** Edit the draft; `fields` are the fields the edit touched, whose refusal no longer applies. */
  const change = (patch: Partial<Draft>, ...fields: string[]) => {
    const original = edited && draft ? draft.original : fresh;
    const next = { original, current: { ...value, ...patch } };
    setDraft(isEdited(next) ? next : undefined);
    setSent(null);
    if (attempt?.phase !== 'failed') return;
    // The "Not sent" line was about the draft before this edit: it goes, and so does what the
    // server refused in the edited fields (the other fields keep theirs).
    const kept = Object.fromEntries(
      Object.entries(attempt.fields ?? {}).filter(([field]) => !fields.includes(field)),
    );
    setAttempt({ ...attempt, failure: undefined, fields: kept });
  };
  const changeItem = (index: number, text: string) =>
    change(
      { state: value.state.map((item, i) => (i === index ? { ...item, text } : item)) },
      `state-${index}`,
    );
  /** A field's invalid state and description: its own hints, then what the server refused in it. */
  const field = (name: string, ...describedBy: (string | undefined)[]) => ({
    id: `${id}-${name}`,
    'aria-invalid': errors[name] !== undefined ? true : undefined,
    'aria-describedby':
      [...describedBy, errors[name] !== undefined ? `${id}-${name}-error` : undefined]
        .filter(Boolean)
        .join(' ') || undefined,
  });
  const fieldError = (name: string) => <FieldError id={`${id}-${name}-error`} message={errors[name]} />;

  useEffect(() => {
    if (settled === 0) return;
    const first = cardFields(value).find((name) => errors[name] !== undefined);
    if (first !== undefined) document.getElementById(`${id}-${first}`)?.focus();
    else if (document.activeElement === document.body) submitRef.current?.focus();
    // Only after a send settles (settled changes): other renders never move the focus.
  }, [settled]);

  const finish = async (revision: number | undefined) => {
    if (revision === undefined) return;
    await reload();
    setDraft(undefined);
    setAttempt(undefined);
    setSent(revision);
  };

  const onSend = async (event: FormEvent) => {
    event.preventDefault();
    const result = await act(() =>
      send({ api, scope_id, draft: value, shown, previous: attempt, update: setAttempt }),
    );
    await finish(result?.revision);
    setSettled((n) => n + 1);
  };

  const onRetry = async () => {
    if (!attempt) return;
    const result = await act(() => publish({ api, scope_id, update: setAttempt }, attempt));
    await finish(result?.revision);
    setSettled((n) => n + 1);
  };

  const basis = (item: DraftItem) =>
    item.evidence.length > 0 && item.text === item.original ? t.basisVerified : t.basisDeclared;

  return (
    <section className="panel sender" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{t.senderTitle}</h2>
      <p className="hint">{t.senderIntro}</p>
      <p className="base">
        {value.base > 0 ? t.senderFromRevision(value.base) : t.senderFromNothing}
        {edited && <span className="badge draft">{t.editedNotSent}</span>}
      </p>
      {edited && value.base < shown && <p className="notice">{t.draftBehind(value.base, shown)}</p>}
      <form onSubmit={(event) => void onSend(event)}>
        <label htmlFor={`${id}-objective`}>{t.objective}</label>
        <textarea
          {...field('objective', describedByHidden(`${id}-objective-hidden`, value.objective))}
          rows={2}
          required
          value={value.objective}
          onChange={(event) => change({ objective: event.target.value }, 'objective')}
        />
        {fieldError('objective')}
        <HiddenCharacters id={`${id}-objective-hidden`} text={value.objective} />

        <fieldset>
          <legend>{t.state}</legend>
          <ol className="state-items">
            {value.state.map((item, index) => (
              <li key={index}>
                <label htmlFor={`${id}-state-${index}`}>{t.stateItem(index + 1)}</label>
                <textarea
                  {...field(
                    `state-${index}`,
                    `${id}-basis-${index}`,
                    describedByHidden(`${id}-state-${index}-hidden`, item.text),
                  )}
                  rows={2}
                  value={item.text}
                  onChange={(event) => changeItem(index, event.target.value)}
                />
                {fieldError(`state-${index}`)}
                <HiddenCharacters id={`${id}-state-${index}-hidden`} text={item.text} />
                <span id={`${id}-basis-${index}`} className="hint">
                  {basis(item)}
                </span>
                <button
                  type="button"
                  className="link"
                  aria-label={t.removeStateItem(index + 1)}
                  onClick={() =>
                    change(
                      { state: value.state.filter((_, i) => i !== index) },
                      ...value.state.map((_, i) => `state-${i}`),
                    )
                  }
                >
                  {t.remove}
                </button>
              </li>
            ))}
          </ol>
          <button
            type="button"
            onClick={() =>
              change({ state: [...value.state, emptyItem()] }, ...value.state.map((_, i) => `state-${i}`))
            }
          >
            {t.addStateItem}
          </button>
        </fieldset>

        <label htmlFor={`${id}-disposition`}>{t.disposition}</label>
        <select
          {...field('disposition')}
          value={value.disposition}
          onChange={(event) => change({ disposition: event.target.value as Disposition }, 'disposition')}
        >
          {dispositions.map((disposition) => (
            <option key={disposition} value={disposition}>
              {t.dispositions[disposition]} ({disposition})
            </option>
          ))}
        </select>
        {fieldError('disposition')}
        {value.disposition === 'blocked' && (
          <div className="blocked">
            <label htmlFor={`${id}-question`}>{t.blockedQuestion}</label>
            <textarea
              {...field('question')}
              rows={2}
              required
              value={value.question}
              onChange={(event) => change({ question: event.target.value }, 'question')}
            />
            {fieldError('question')}
            <label htmlFor={`${id}-options`}>{t.blockedOptions}</label>
            <textarea
              {...field('options')}
              rows={3}
              required
              value={value.options}
              onChange={(event) => change({ options: event.target.value }, 'options')}
            />
            {fieldError('options')}
            <label htmlFor={`${id}-impact`}>{t.blockedImpact}</label>
            <textarea
              {...field('impact')}
              rows={2}
              required
              value={value.impact}
              onChange={(event) => change({ impact: event.target.value }, 'impact')}
            />
            {fieldError('impact')}
          </div>
        )}

        <label htmlFor={`${id}-next`}>{t.nextAction}</label>
        <textarea
          {...field(
            'next',
            `${id}-next-basis`,
            describedByHidden(`${id}-next-hidden`, value.nextAction.text),
          )}
          rows={2}
          required
          value={value.nextAction.text}
          onChange={(event) =>
            change({ nextAction: { ...value.nextAction, text: event.target.value } }, 'next')
          }
        />
        {fieldError('next')}
        <HiddenCharacters id={`${id}-next-hidden`} text={value.nextAction.text} />
        <span id={`${id}-next-basis`} className="hint basis-line">
          {basis(value.nextAction)}
        </span>

        <label htmlFor={`${id}-omissions`}>{t.omissions}</label>
        <textarea
          {...field('omissions', describedByHidden(`${id}-omissions-hidden`, value.omissions))}
          rows={3}
          value={value.omissions}
          onChange={(event) => change({ omissions: event.target.value }, 'omissions')}
        />
        {fieldError('omissions')}
        <HiddenCharacters id={`${id}-omissions-hidden`} text={value.omissions} />

        <div className="actions">
          <button
            type="submit"
            className="primary"
            ref={submitRef}
            disabled={running || readOnly}
            aria-describedby={readOnly ? `${id}-read-only` : undefined}
          >
            {running ? t.sending : t.sendHandoff}
          </button>
          {edited && (
            <button
              type="button"
              onClick={() => {
                setDraft(undefined);
                setAttempt(undefined);
              }}
            >
              {t.discardEdits}
            </button>
          )}
        </div>
        {readOnly && (
          <p id={`${id}-read-only`} className="hint">
            {t.readOnlyHint}
          </p>
        )}
      </form>

      <div aria-live="polite">
        {sent !== null && <p className="ok">{t.sent(sent)}</p>}
        {attempt?.phase === 'partial' && attempt.prepared && (
          <div className="partial" role="alert">
            <h3>{t.partialTitle}</h3>
            <p>{t.partialBody(attempt.prepared.digest, attempt.source_id)}</p>
            {attempt.failure !== undefined && <p className="error">{failureText(t, attempt.failure)}</p>}
            <button type="button" className="primary" onClick={() => void onRetry()}>
              {t.partialRetry}
            </button>
          </div>
        )}
        {attempt?.phase === 'head_moved' && (attempt.head ?? 0) > shown && (
          <div className="partial" role="alert">
            <p>{t.headMoved(attempt.head ?? 0)}</p>
            <button type="button" onClick={() => void reload()}>
              {t.refreshNow}
            </button>
          </div>
        )}
        {attempt?.phase === 'failed' && attempt.failure !== undefined && (
          <p className="error" role="alert">
            {t.sendFailed}: {failureText(t, attempt.failure)}
          </p>
        )}
      </div>
    </section>
  );
}
