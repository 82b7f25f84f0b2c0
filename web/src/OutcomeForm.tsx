/**
 * The Task Outcome form shown after acceptance while the result is uncovered. It is linked to
 * exactly the accepted receipt that decides the transfer, so recording it covers that receipt.
 * Checks are the receiver's declarations: nothing here marks them verified. What the server
 * (or the page, for an unreadable check line) refuses is shown under its field.
 */
import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import { failureText } from './failure.ts';
import { FieldError } from './FieldError.tsx';
import { outcomeStatuses, parseChecks, type OutcomeForm as Form, type OutcomeStatus } from './forms.ts';
import { useMessages } from './i18n.ts';
import { fieldErrors, issuesOf } from './issues.ts';
import { newAttemptId } from './ids.ts';
import { useOnce } from './once.ts';
import type { SourceRef } from './types.ts';
import type { WorkspaceProps } from './Workspace.tsx';

type Props = WorkspaceProps & {
  readonly receipt: SourceRef;
  readonly revision: number;
  readonly objective: string;
  /** Told once the outcome is recorded (and the report reloaded), when this form goes away. */
  readonly onRecorded: () => void;
};

/** The form's fields, in the order the focus looks for the first refused one. */
const fields = ['status', 'summary', 'checks', 'remaining'] as const;
type Field = (typeof fields)[number];

/** The form field a wire path of record_task_outcome names (`checks.0.name` is the Checks field). */
function outcomeField(path: string): Field | undefined {
  const head = path.split('.')[0];
  if (head === 'status' || head === 'summary' || head === 'checks') return head;
  if (head === 'remaining_work') return 'remaining';
  return undefined;
}

export function OutcomeForm({
  api,
  scope_id,
  readOnly,
  forms,
  setForms,
  act,
  reload,
  receipt,
  revision,
  objective,
  onRecorded,
}: Props) {
  const t = useMessages();
  const id = useId();
  const [error, setError] = useState<string | null>(null);
  /** What was refused in a field, under that field. */
  const [invalid, setInvalid] = useState<Readonly<Partial<Record<Field, string>>>>({});
  /** Set when a refused send settles: the focus goes to the first refused field, or back to the button. */
  const [settled, setSettled] = useState(0);
  const submitRef = useRef<HTMLButtonElement>(null);
  const { running, once } = useOnce();
  const form = forms.outcome;
  const setForm = (patch: Partial<Form>) => {
    setForms({ ...forms, outcome: { ...form, ...patch } });
    setError(null);
    setInvalid(Object.fromEntries(Object.entries(invalid).filter(([name]) => !(name in patch))));
  };

  useEffect(() => {
    if (settled === 0) return;
    const first = fields.find((name) => invalid[name] !== undefined);
    if (first !== undefined) document.getElementById(`${id}-${first}`)?.focus();
    else if (document.activeElement === document.body) submitRef.current?.focus();
    // Only when a send settles (settled changes): other renders never move the focus.
  }, [settled]);

  const submit = (event: FormEvent) => {
    event.preventDefault();
    return once(async () => {
      if (await record()) onRecorded();
      else setSettled((n) => n + 1);
    });
  };
  /** Record the outcome; true once it is recorded. */
  const record = async (): Promise<boolean> => {
    setError(null);
    setInvalid({});
    const parsed = parseChecks(form.checks);
    if ('bad' in parsed) {
      setInvalid({ checks: t.badChecks(parsed.bad) });
      return false;
    }
    const body = {
      scope_id,
      objective,
      status: form.status,
      summary: form.summary,
      handoff_receipt_ref: receipt,
      checks: parsed.checks,
      remaining_work: form.remaining
        .split('\n')
        .map((line) => line.trim())
        .filter(Boolean),
    };
    const key = JSON.stringify(body);
    const source_id = form.pending?.key === key ? form.pending.source_id : newAttemptId('web-outcome');
    const pending = { ...form, pending: { source_id, key } };
    setForms({ ...forms, outcome: pending });
    return act(async () => {
      try {
        await api.recordOutcome({ ...body, source_id });
      } catch (failure) {
        setError(failureText(t, failure));
        setInvalid(fieldErrors(issuesOf(failure), outcomeField));
        return false;
      }
      setForms({ ...forms, outcome: { status: 'succeeded', summary: '', checks: '', remaining: '' } });
      await reload();
      return true;
    });
  };
  /** A field's id, and its invalid state and description when something was refused in it. */
  const field = (name: Field) => ({
    id: `${id}-${name}`,
    'aria-invalid': invalid[name] !== undefined ? true : undefined,
    'aria-describedby': invalid[name] !== undefined ? `${id}-${name}-error` : undefined,
  });
  const fieldError = (name: Field) => <FieldError id={`${id}-${name}-error`} message={invalid[name]} />;

  return (
    <form className="outcome" aria-labelledby={`${id}-title`} onSubmit={(event) => void submit(event)}>
      <h3 id={`${id}-title`}>{t.outcomeTitle}</h3>
      <p className="hint">{t.outcomeLinked(receipt.source_id, revision)}</p>
      <label htmlFor={`${id}-status`}>{t.outcomeStatus}</label>
      <select
        {...field('status')}
        value={form.status}
        onChange={(event) => setForm({ status: event.target.value as OutcomeStatus })}
      >
        {outcomeStatuses.map((status) => (
          <option key={status} value={status}>
            {status}
          </option>
        ))}
      </select>
      {fieldError('status')}
      <label htmlFor={`${id}-summary`}>{t.outcomeSummary}</label>
      <textarea
        {...field('summary')}
        rows={2}
        required
        value={form.summary}
        onChange={(event) => setForm({ summary: event.target.value })}
      />
      {fieldError('summary')}
      <label htmlFor={`${id}-checks`}>{t.outcomeChecks}</label>
      <textarea
        {...field('checks')}
        rows={3}
        value={form.checks}
        onChange={(event) => setForm({ checks: event.target.value })}
      />
      {fieldError('checks')}
      <label htmlFor={`${id}-remaining`}>{t.outcomeRemaining}</label>
      <textarea
        {...field('remaining')}
        rows={2}
        value={form.remaining}
        onChange={(event) => setForm({ remaining: event.target.value })}
      />
      {fieldError('remaining')}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <button
        type="submit"
        className="primary"
        ref={submitRef}
        disabled={running || readOnly}
        aria-describedby={readOnly ? `${id}-read-only` : undefined}
      >
        {t.recordOutcome}
      </button>
      {readOnly && (
        <p id={`${id}-read-only`} className="hint">
          {t.readOnlyHint}
        </p>
      )}
    </form>
  );
}
