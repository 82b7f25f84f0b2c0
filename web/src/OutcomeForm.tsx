/**
 * The Task Outcome form shown after acceptance while the result is uncovered. It is linked to
 * exactly the accepted receipt that decides the transfer, so recording it covers that receipt.
 * Checks are the receiver's declarations: nothing here marks them verified.
 */
import { useId, useState, type FormEvent } from 'react';
import { ApiError } from './api.ts';
import { outcomeStatuses, parseChecks, type OutcomeForm as Form, type OutcomeStatus } from './forms.ts';
import { useMessages } from './i18n.ts';
import { newAttemptId } from './ids.ts';
import { useOnce } from './once.ts';
import type { SourceRef } from './types.ts';
import type { WorkspaceProps } from './Workspace.tsx';

type Props = WorkspaceProps & {
  readonly receipt: SourceRef;
  readonly revision: number;
  readonly objective: string;
};

export function OutcomeForm({
  api,
  scope_id,
  forms,
  setForms,
  act,
  reload,
  receipt,
  revision,
  objective,
}: Props) {
  const t = useMessages();
  const id = useId();
  const [error, setError] = useState<string | null>(null);
  const { running, once } = useOnce();
  const form = forms.outcome;
  const setForm = (patch: Partial<Form>) => {
    setForms({ ...forms, outcome: { ...form, ...patch } });
    setError(null);
  };

  const submit = (event: FormEvent) => {
    event.preventDefault();
    return once(record);
  };
  const record = async () => {
    const parsed = parseChecks(form.checks);
    if ('bad' in parsed) {
      setError(t.badChecks(parsed.bad));
      return;
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
    await act(async () => {
      try {
        await api.recordOutcome({ ...body, source_id });
        setForms({ ...forms, outcome: { status: 'succeeded', summary: '', checks: '', remaining: '' } });
        await reload();
      } catch (failure) {
        setError(failure instanceof ApiError ? `${failure.code}: ${failure.message}` : String(failure));
      }
    });
  };

  return (
    <form className="outcome" aria-labelledby={`${id}-title`} onSubmit={(event) => void submit(event)}>
      <h3 id={`${id}-title`}>{t.outcomeTitle}</h3>
      <p className="hint">{t.outcomeLinked(receipt.source_id, revision)}</p>
      <label htmlFor={`${id}-status`}>{t.outcomeStatus}</label>
      <select
        id={`${id}-status`}
        value={form.status}
        onChange={(event) => setForm({ status: event.target.value as OutcomeStatus })}
      >
        {outcomeStatuses.map((status) => (
          <option key={status} value={status}>
            {status}
          </option>
        ))}
      </select>
      <label htmlFor={`${id}-summary`}>{t.outcomeSummary}</label>
      <textarea
        id={`${id}-summary`}
        rows={2}
        required
        value={form.summary}
        onChange={(event) => setForm({ summary: event.target.value })}
      />
      <label htmlFor={`${id}-checks`}>{t.outcomeChecks}</label>
      <textarea
        id={`${id}-checks`}
        rows={3}
        value={form.checks}
        onChange={(event) => setForm({ checks: event.target.value })}
      />
      <label htmlFor={`${id}-remaining`}>{t.outcomeRemaining}</label>
      <textarea
        id={`${id}-remaining`}
        rows={2}
        value={form.remaining}
        onChange={(event) => setForm({ remaining: event.target.value })}
      />
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <button type="submit" className="primary" disabled={running}>
        {t.recordOutcome}
      </button>
    </form>
  );
}
