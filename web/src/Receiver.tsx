/**
 * "Can I take it?": automatic preflight (Continue on the latest committed handoff) beside the
 * receiver's own live checks, and exactly three choices bound to the exact revision shown.
 * When the latest revision is not the one shown, every choice waits for a refresh: a receiver
 * never acknowledges a revision they have not seen. Readable citations are never "verified".
 */
import { useCallback, useEffect, useId, useRef, useState } from 'react';
import { failureText } from './failure.ts';
import { FieldError } from './FieldError.tsx';
import { receiverFor, type ReceiverForm } from './forms.ts';
import { useMessages } from './i18n.ts';
import { fieldErrors, issuesOf } from './issues.ts';
import { newAttemptId } from './ids.ts';
import { useOnce } from './once.ts';
import { OutcomeForm } from './OutcomeForm.tsx';
import { latestRevision, runPreflight, type Preflight } from './preflight.ts';
import type { ReceiptStatus } from './types.ts';
import type { WorkspaceProps } from './Workspace.tsx';

type Props = WorkspaceProps & { readonly workstream: NonNullable<WorkspaceProps['workstream']> };

export function Receiver(props: Props) {
  const { api, scope_id, readOnly, workstream, preflight, setPreflight, forms, setForms, act, reload } =
    props;
  const t = useMessages();
  const id = useId();
  const shown = workstream.selection.revision;
  const current = workstream.current;
  const [error, setError] = useState<string | null>(null);
  const [recorded, setRecorded] = useState<string | null>(null);
  const reasonRef = useRef<HTMLTextAreaElement>(null);
  const nameRef = useRef<HTMLInputElement>(null);
  const resultRef = useRef<HTMLDivElement>(null);
  /** What the server refused in the reason or the name, under that field. */
  const [invalid, setInvalid] = useState<Readonly<Record<string, string>>>({});
  /** Set when a choice settles: the focus goes to a refused field, or to the result when lost. */
  const [settled, setSettled] = useState(0);
  useEffect(() => {
    if (settled === 0) return;
    if (invalid.reason !== undefined) reasonRef.current?.focus();
    else if (invalid.receiver !== undefined) nameRef.current?.focus();
    else if (document.activeElement === document.body) resultRef.current?.focus();
    // Only when a choice settles (settled changes): other renders never move the focus.
  }, [settled]);
  const coveredRef = useRef<HTMLParagraphElement>(null);
  /** Set when an outcome is recorded: its form is gone, so the focus goes to the covered line. */
  const [outcomeRecorded, setOutcomeRecorded] = useState(0);
  useEffect(() => {
    if (outcomeRecorded === 0) return;
    if (document.activeElement === document.body) (coveredRef.current ?? resultRef.current)?.focus();
  }, [outcomeRecorded]);
  const { running, once } = useOnce();
  const sequence = useRef(0);
  const store = useRef(setPreflight);
  store.current = setPreflight;

  const check = useCallback(async (): Promise<Preflight> => {
    const mine = ++sequence.current;
    const result = await runPreflight(api, scope_id, shown);
    if (mine === sequence.current) store.current(result);
    return result;
  }, [api, scope_id, shown]);

  // Opened, or shown a revision no preflight ran for: run one (report loads bring their own).
  const hasCurrent = current !== null;
  const stale = preflight?.shown !== shown;
  useEffect(() => {
    if (hasCurrent && stale) void check();
  }, [check, hasCurrent, stale]);

  if (!current) {
    return (
      <section className="panel receiver" aria-labelledby={`${id}-title`}>
        <h2 id={`${id}-title`}>{t.receiverTitle}</h2>
        <p>{t.nothingToTake}</p>
      </section>
    );
  }

  const form = receiverFor(forms.receiver, shown);
  const setForm = (patch: Partial<ReceiverForm>) => {
    setForms({ ...forms, receiver: { ...form, ...patch } });
    setError(null);
    setRecorded(null);
    setInvalid(Object.fromEntries(Object.entries(invalid).filter(([name]) => !(name in patch))));
  };
  const result = stale ? undefined : preflight?.result;
  const latest = stale ? undefined : latestRevision(preflight);
  const mismatch = latest !== undefined && latest !== shown;
  const ready = latest === shown;
  const unavailable = result?.evidence === 'unavailable';
  const allChecks = form.live_workspace && form.capability && form.authorization;
  const acceptDisabled = readOnly || !ready || unavailable || !allChecks;
  const acceptHint = readOnly
    ? null
    : !ready
      ? mismatch
        ? t.choicesBlocked
        : t.preflightRunning
      : unavailable
        ? t.acceptBlockedEvidence
        : !allChecks
          ? t.acceptNeedsChecks
          : null;

  /** The id of the hint that says why no choice can be made, in a read-only session. */
  const readOnlyHint = readOnly ? `${id}-read-only` : undefined;

  const choose = (status: ReceiptStatus) =>
    once(async () => {
      await record(status);
      setSettled((n) => n + 1);
    });
  const record = async (status: ReceiptStatus) => {
    setError(null);
    setRecorded(null);
    setInvalid({});
    const reason = form.reason.trim();
    if (status !== 'accepted' && !reason) {
      setError(t.reasonRequired);
      reasonRef.current?.focus();
      return;
    }
    await act(async () => {
      // Continue again right before recording: the latest must still be the revision shown.
      const again = await check();
      if (latestRevision(again) !== shown) return;
      if (status === 'accepted' && again.result?.evidence === 'unavailable') return;
      const confirmation = (value: boolean) => (value ? ('confirmed' as const) : ('not_confirmed' as const));
      const body = {
        scope_id,
        target: { exact: shown },
        status,
        receiver_checks: {
          live_workspace: confirmation(form.live_workspace),
          capability: confirmation(form.capability),
          authorization: confirmation(form.authorization),
        },
        ...(reason ? { reason } : {}),
        ...(form.receiver.trim() ? { receiver: form.receiver.trim() } : {}),
      };
      const key = JSON.stringify(body);
      const source_id = form.pending?.key === key ? form.pending.source_id : newAttemptId('web-receipt');
      const pendingForm = { ...form, pending: { source_id, key } };
      setForms({ ...forms, receiver: pendingForm });
      try {
        await api.acknowledge({ ...body, source_id });
        setForms({
          ...forms,
          receiver: {
            ...pendingForm,
            live_workspace: false,
            capability: false,
            authorization: false,
            reason: '',
            pending: undefined,
          },
        });
        setRecorded(t.recorded(t.transferStates[status], shown));
        await reload();
      } catch (failure) {
        setError(failureText(t, failure));
        setInvalid(
          fieldErrors(issuesOf(failure), (path) =>
            path === 'reason' || path === 'receiver' ? path : undefined,
          ),
        );
      }
    });
  };

  const continuity = workstream.continuity;
  const receipt = continuity.active_receipt_ref;
  const evidenceState = result?.evidence;

  return (
    <section className="panel receiver" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{t.receiverTitle}</h2>

      <div className="preflight" aria-live="polite">
        {!result && !(preflight?.failure !== undefined && !stale) && <p>{t.preflightRunning}</p>}
        {preflight?.failure !== undefined && !stale && (
          <p className="error">
            {t.preflightFailed}: {failureText(t, preflight.failure)}
          </p>
        )}
        {result && latest !== undefined && <p className="preflight-for">{t.preflightFor(latest)}</p>}
        {ready && <p className="ok">{t.preflightMatches}</p>}
        {mismatch && (
          <div className="mismatch" role="alert">
            <p>{t.preflightMismatch(latest, shown)}</p>
            <button type="button" className="primary" onClick={() => void reload()}>
              {t.refreshNow}
            </button>
          </div>
        )}
        <button type="button" onClick={() => void check()}>
          {t.checkAgain}
        </button>
      </div>

      {result && (
        <section className="citations" aria-labelledby={`${id}-citations`}>
          <h3 id={`${id}-citations`}>{t.citations}</h3>
          <p className={`evidence evidence-${evidenceState}`} data-evidence={evidenceState}>
            {evidenceState && t.evidence[evidenceState]}
          </p>
          <p className="hint">{t.citationsNote}</p>
          <ul className="checks">
            {result.evidence_checks.map((check) => (
              <li key={`${check.location}`} className={`citation-${check.status}`}>
                <code>{check.citation.source_id}</code> <span className="hint">{check.location}</span>{' '}
                <span className="citation-state">
                  {check.status === 'available' ? t.citationReadable : t.citationUnavailable(check.reason)}
                </span>
              </li>
            ))}
          </ul>
        </section>
      )}

      <fieldset className="live-checks">
        <legend>{t.receiverChecks}</legend>
        <p className="hint">{t.receiverChecksNote}</p>
        {(
          [
            ['live_workspace', t.checkWorkspace],
            ['capability', t.checkCapability],
            ['authorization', t.checkAuthorization],
          ] as const
        ).map(([name, label]) => (
          <label key={name} className="check">
            <input
              type="checkbox"
              checked={form[name]}
              onChange={(event) => setForm({ [name]: event.target.checked })}
            />
            {label}
          </label>
        ))}
      </fieldset>

      <label htmlFor={`${id}-receiver`}>{t.receiverName}</label>
      <input
        id={`${id}-receiver`}
        ref={nameRef}
        value={form.receiver}
        autoComplete="name"
        aria-invalid={invalid.receiver !== undefined ? true : undefined}
        aria-describedby={invalid.receiver !== undefined ? `${id}-receiver-error` : undefined}
        onChange={(event) => setForm({ receiver: event.target.value })}
      />
      <FieldError id={`${id}-receiver-error`} message={invalid.receiver} />
      <label htmlFor={`${id}-reason`}>{t.reason}</label>
      <textarea
        id={`${id}-reason`}
        ref={reasonRef}
        rows={3}
        value={form.reason}
        aria-invalid={error === t.reasonRequired || invalid.reason !== undefined}
        aria-describedby={
          invalid.reason !== undefined ? `${id}-reason-error` : error ? `${id}-error` : undefined
        }
        onChange={(event) => setForm({ reason: event.target.value })}
      />
      <FieldError id={`${id}-reason-error`} message={invalid.reason} />

      <div className="choices" role="group" aria-label={t.choices}>
        <button
          type="button"
          className="primary"
          disabled={acceptDisabled || running}
          aria-describedby={readOnlyHint ?? (acceptHint ? `${id}-accept-hint` : undefined)}
          onClick={() => void choose('accepted')}
        >
          {t.accept}
        </button>
        <button
          type="button"
          disabled={readOnly || !ready || running}
          aria-describedby={readOnlyHint}
          onClick={() => void choose('needs_clarification')}
        >
          {t.needsClarification}
        </button>
        <button
          type="button"
          disabled={readOnly || !ready || running}
          aria-describedby={readOnlyHint}
          onClick={() => void choose('declined')}
        >
          {t.decline}
        </button>
      </div>
      {readOnly && (
        <p id={readOnlyHint} className="hint">
          {t.readOnlyHint}
        </p>
      )}
      {acceptHint && (
        <p id={`${id}-accept-hint`} className="hint">
          {acceptHint}
        </p>
      )}
      <div aria-live="polite" ref={resultRef} tabIndex={-1}>
        {error && (
          <p id={`${id}-error`} className="error" role="alert">
            {error}
          </p>
        )}
        {recorded && <p className="ok">{recorded}</p>}
      </div>

      {continuity.transfer_state === 'accepted' &&
        continuity.outcome_state === 'awaiting_outcome' &&
        receipt && (
          <OutcomeForm
            {...props}
            receipt={receipt}
            revision={shown}
            objective={current.handoff.objective}
            onRecorded={() => setOutcomeRecorded((n) => n + 1)}
          />
        )}
      {continuity.outcome_state === 'covered' && (
        <p className="ok covered" ref={coveredRef} tabIndex={-1}>
          {t.covered}
        </p>
      )}
    </section>
  );
}
