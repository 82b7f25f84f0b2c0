/**
 * One session's managed work, live (useLiveWork): the contract's objective, revision and
 * status, every item (status, owner, attempt, child session, blocker, its criteria with their
 * verdicts, its evidence with links), the criteria, open assumptions and warnings. Everything
 * shown is the server's projection of the ledger; progress is never read from prose. A person
 * may cancel a live item or retry a failed, interrupted or cancelled one; the server decides
 * whether the change is allowed.
 */
import { useState } from 'react';
import { ownerText, criterionKindText, evidenceRefText } from '../../src/core/work/describe.ts';
import {
  contractTransitionAllowed,
  itemTransitionAllowed,
  retryFrom,
} from '../../src/core/work/transitions.ts';
import { visibleControls } from '../../src/core/text.ts';
import type { Api } from './api.ts';
import { failureText } from './failure.ts';
import { SessionTranscript } from './Transcript.tsx';
import { useMessages } from './i18n.ts';
import { useLiveWork, type LiveState } from './live.ts';
import { href } from './route.ts';
import type {
  ContractProjection,
  CriterionState,
  EvidenceAvailability,
  EvidenceRef,
  WorkItemState,
  WorkSnapshot,
} from './types.ts';
import { ContractBadge, ItemBadge, VerdictBadge } from './WorkBadges.tsx';

/** Stored text as it may be shown: its control characters and overrides as escapes. */
const shown = visibleControls;

function LiveStatus({ live }: { live: LiveState }) {
  const t = useMessages();
  const text =
    live.state === 'live'
      ? t.liveOn
      : live.state === 'retrying'
        ? t.liveRetrying(live.seconds)
        : live.state === 'connecting'
          ? t.liveConnecting
          : null;
  if (text === null) return null;
  return (
    <span className="live" role="status" data-live={live.state}>
      {text}
    </span>
  );
}

/** A reference that names a session links to that session's work. */
function Evidence({
  reference,
  availability,
}: {
  reference: EvidenceRef;
  availability?: EvidenceAvailability;
}) {
  const t = useMessages();
  const text = shown(evidenceRefText(reference));
  const session =
    'session_id' in reference && typeof reference.session_id === 'string' ? reference.session_id : null;
  return (
    <li data-evidence={reference.type}>
      {session !== null ? (
        <a href={href({ view: 'session', session_id: session })}>{text}</a>
      ) : (
        <span>{text}</span>
      )}
      {availability?.status === 'unavailable' && (
        <span className="evidence-unavailable"> · {t.citationUnavailable(availability.reason)}</span>
      )}
      {availability?.status === 'unchecked' && <span className="muted"> · {t.evidenceUnchecked}</span>}
    </li>
  );
}

interface ItemActions {
  readonly readOnly: boolean;
  readonly run: (contract_id: string, item_id: string, action: 'cancel' | 'retry') => Promise<void>;
  /** confirm_work at the revision the person read, with their answers. */
  readonly confirm: (
    contract_id: string,
    revision: number,
    resolutions: { assumption_id: string; resolution: string }[],
  ) => Promise<void>;
  /** commit_handoff of a Prepared Handoff on the head it was prepared on; the revision it became. */
  readonly publish: (handoff: PreparedHandoffLink) => Promise<number>;
}

type PreparedHandoffLink = NonNullable<NonNullable<WorkSnapshot['projection']>['terminal']>['handoff'] & {};

/**
 * The Handoff an interrupted bound session prepared (docs/managed-work.md, "An interrupted bound
 * session"): where it is, and a button that publishes it. Publishing again answers the same
 * revision; a workstream that moved on refuses it (revision_conflict), shown beside the button.
 */
function PreparedHandoff({ handoff, actions }: { handoff: PreparedHandoffLink; actions: ItemActions }) {
  const t = useMessages();
  const [running, setRunning] = useState(false);
  const [failure, setFailure] = useState<unknown>(null);
  const [published, setPublished] = useState<number | null>(null);
  const publish = async () => {
    setRunning(true);
    setFailure(null);
    try {
      setPublished(await actions.publish(handoff));
    } catch (error) {
      setFailure(error);
    } finally {
      setRunning(false);
    }
  };
  return (
    <section className="panel prepared-handoff" aria-labelledby="prepared-handoff">
      <h2 id="prepared-handoff">{t.handoffPrepared}</h2>
      <p>{t.handoffPreparedBody}</p>
      <dl>
        <dt>{t.handoffWorkstream}</dt>
        <dd>
          <a href={href({ view: 'workspace', scope_id: handoff.scope_id })}>{shown(handoff.scope_id)}</a>
        </dd>
        <dt>{t.handoffBase}</dt>
        <dd>{handoff.base_revision}</dd>
        <dt>{t.handoffDigest}</dt>
        <dd>
          <code>{handoff.prepared_digest}</code>
        </dd>
      </dl>
      <div className="item-actions">
        <button
          type="button"
          disabled={actions.readOnly || running}
          title={actions.readOnly ? t.readOnlyHint : undefined}
          onClick={() => void publish()}
        >
          {t.publishHandoff}
        </button>
        {published !== null && <p role="status">{t.handoffPublished(published)}</p>}
        {failure !== null && (
          <p className="error" role="alert">
            {t.actionFailed}: {failureText(t, failure)}
          </p>
        )}
      </div>
    </section>
  );
}

/**
 * A person's confirmation of a draft, awaiting or blocked contract: an answer to each open
 * assumption, sent against the revision they read. When the contract is revised meanwhile the
 * form says so and keeps the answers; the person reads the new revision and confirms that.
 */
function ConfirmForm({ contract, actions }: { contract: ContractProjection; actions: ItemActions }) {
  const t = useMessages();
  const [seen, setSeen] = useState(contract.revision);
  const [answers, setAnswers] = useState<Readonly<Record<string, string>>>({});
  const [running, setRunning] = useState(false);
  const [failure, setFailure] = useState<unknown>(null);
  const open = contract.contract.assumptions.filter(
    (assumption) => assumption.requires_confirmation && !assumption.resolution,
  );
  const behind = contract.revision !== seen;
  const submit = async () => {
    setRunning(true);
    setFailure(null);
    try {
      const resolutions = open
        .map((assumption) => ({
          assumption_id: assumption.assumption_id,
          resolution: (answers[assumption.assumption_id] ?? '').trim(),
        }))
        .filter((answer) => answer.resolution !== '');
      await actions.confirm(contract.contract_id, seen, resolutions);
    } catch (error) {
      setFailure(error);
    } finally {
      setRunning(false);
    }
  };
  return (
    <form
      className="panel confirm-form"
      aria-labelledby="confirm-title"
      onSubmit={(event) => {
        event.preventDefault();
        void submit();
      }}
    >
      <h3 id="confirm-title">{t.confirmTitle}</h3>
      <p className="hint">{contract.status === 'blocked' ? t.resumeIntro : t.confirmIntro}</p>
      {open.map((assumption) => (
        <label key={assumption.assumption_id}>
          <span>
            <code>{shown(assumption.assumption_id)}</code> {shown(assumption.text)}
          </span>
          <textarea
            aria-label={t.answerFor(assumption.assumption_id)}
            required
            rows={2}
            maxLength={4000}
            value={answers[assumption.assumption_id] ?? ''}
            onChange={(event) => setAnswers({ ...answers, [assumption.assumption_id]: event.target.value })}
          />
        </label>
      ))}
      {behind && (
        <p className="notice">
          {t.revisedMeanwhile(seen, contract.revision)}{' '}
          <button type="button" onClick={() => setSeen(contract.revision)}>
            {t.readRevision(contract.revision)}
          </button>
        </p>
      )}
      <button
        type="submit"
        className="primary"
        disabled={actions.readOnly || running || behind}
        title={actions.readOnly ? t.readOnlyHint : undefined}
      >
        {t.confirmContract(seen)}
      </button>
      {failure !== null && (
        <p className="error" role="alert">
          {t.actionFailed}: {failureText(t, failure)}
        </p>
      )}
    </form>
  );
}

function ItemCard({
  contract,
  item,
  criteria,
  actions,
}: {
  contract: ContractProjection;
  item: WorkItemState;
  criteria: ReadonlyMap<string, CriterionState>;
  actions: ItemActions;
}) {
  const t = useMessages();
  const [confirming, setConfirming] = useState(false);
  const [running, setRunning] = useState(false);
  const [failure, setFailure] = useState<unknown>(null);
  const definition = contract.contract.items.find((candidate) => candidate.item_id === item.item_id);
  // A contract is live while a person may still cancel it; an ended one takes no item change.
  const open = contractTransitionAllowed('human', contract.status, 'cancelled');
  const canCancel = open && itemTransitionAllowed('human', item.status, 'cancelled');
  const canRetry = open && retryFrom.has(item.status);
  const run = async (action: 'cancel' | 'retry') => {
    setRunning(true);
    setFailure(null);
    try {
      await actions.run(contract.contract_id, item.item_id, action);
      setConfirming(false);
    } catch (error) {
      setFailure(error);
    } finally {
      setRunning(false);
    }
  };
  const disabled = actions.readOnly || running;
  return (
    <li className="panel work-item" data-item={item.item_id} data-status={item.status}>
      <h3>
        <span className="item-title">{shown(definition?.title ?? item.item_id)}</span>{' '}
        <code>{shown(item.item_id)}</code> <ItemBadge status={item.status} />
      </h3>
      <p className="facts">
        <span>{definition?.required === false ? t.optional : t.required}</span>
        {definition?.readonly && <span>{t.readOnlyItem}</span>}
        <span>{t.attempt(item.attempt)}</span>
        {definition && definition.dependencies.length > 0 && (
          <span>{t.after(definition.dependencies.map(shown).join(', '))}</span>
        )}
      </p>
      <dl>
        <dt>{t.columns.owner}</dt>
        <dd className="owner">{shown(ownerText(item.owner))}</dd>
        {item.child_session_id !== null && (
          <>
            <dt>{t.columns.child}</dt>
            <dd>
              <a href={href({ view: 'session', session_id: item.child_session_id })}>
                {shown(item.child_session_id)}
              </a>
            </dd>
          </>
        )}
        {item.blocker !== null && (
          <>
            <dt>{t.columns.blocker}</dt>
            <dd className="blocker">{shown(item.blocker)}</dd>
          </>
        )}
        {definition && definition.criterion_ids.length > 0 && (
          <>
            <dt>{t.columns.criteria}</dt>
            <dd>
              <ul className="inline-list">
                {definition.criterion_ids.map((id) => (
                  <li key={id} data-criterion={id}>
                    <code>{shown(id)}</code>{' '}
                    <VerdictBadge verdict={criteria.get(id)?.result?.verdict ?? null} />
                  </li>
                ))}
              </ul>
            </dd>
          </>
        )}
        <dt>{t.columns.evidence}</dt>
        <dd>
          {item.evidence_count === 0 ? (
            t.noEvidence
          ) : (
            <>
              {item.evidence_count > item.evidence.length && (
                <span className="muted">{t.evidenceLatest(item.evidence.length, item.evidence_count)}</span>
              )}
              <ul className="evidence-list">
                {item.evidence.map((reference, at) => (
                  <Evidence key={at} reference={reference} availability={item.evidence_availability[at]} />
                ))}
              </ul>
            </>
          )}
        </dd>
      </dl>
      {(canCancel || canRetry) && (
        <div className="item-actions">
          {canRetry && (
            <button
              type="button"
              disabled={disabled}
              title={actions.readOnly ? t.readOnlyHint : undefined}
              onClick={() => void run('retry')}
            >
              {t.retryItem}
            </button>
          )}
          {canCancel &&
            (confirming ? (
              <>
                <button
                  type="button"
                  className="danger"
                  disabled={disabled}
                  onClick={() => void run('cancel')}
                >
                  {t.confirmCancel(shown(item.item_id))}
                </button>
                <button type="button" disabled={running} onClick={() => setConfirming(false)}>
                  {t.keepItem}
                </button>
              </>
            ) : (
              <button
                type="button"
                disabled={disabled}
                title={actions.readOnly ? t.readOnlyHint : undefined}
                onClick={() => setConfirming(true)}
              >
                {t.cancelItem}
              </button>
            ))}
          {failure !== null && (
            <p className="error" role="alert">
              {t.actionFailed}: {failureText(t, failure)}
            </p>
          )}
        </div>
      )}
    </li>
  );
}

function ContractView({ contract, actions }: { contract: ContractProjection; actions: ItemActions }) {
  const t = useMessages();
  const criteria = new Map(contract.criteria.map((criterion) => [criterion.criterion_id, criterion]));
  const states = new Map(contract.items.map((item) => [item.item_id, item]));
  // Items in the contract's own order; any state without a definition after them.
  const ordered = [
    ...contract.contract.items.flatMap((definition) => states.get(definition.item_id) ?? []),
    ...contract.items.filter((item) => !contract.contract.items.some((d) => d.item_id === item.item_id)),
  ];
  const open = contract.contract.assumptions.filter(
    (assumption) => assumption.requires_confirmation && !assumption.resolution,
  );
  return (
    <article className="contract" data-contract={contract.contract_id}>
      <h2>
        {t.contractTitle(shown(contract.contract_id), contract.revision)}{' '}
        <ContractBadge status={contract.status} />
        {contract.branch && <span className="badge">{t.branch}</span>}
      </h2>
      {contract.status_reason !== '' && (
        <p className="muted status-reason">{shown(contract.status_reason)}</p>
      )}
      <p className="hint">{t.untrustedWork}</p>
      {contractTransitionAllowed('human', contract.status, 'active') && (
        <ConfirmForm key={contract.contract_id} contract={contract} actions={actions} />
      )}
      <h3>{t.objective}</h3>
      <p className="objective-text">{shown(contract.contract.objective)}</p>
      {contract.contract.constraints.length > 0 && (
        <>
          <h3>{t.constraints}</h3>
          <ul>
            {contract.contract.constraints.map((constraint) => (
              <li key={constraint.constraint_id}>{shown(constraint.text)}</li>
            ))}
          </ul>
        </>
      )}
      {open.length > 0 && (
        <>
          <h3>{t.openAssumptions}</h3>
          <ul className="assumptions">
            {open.map((assumption) => (
              <li key={assumption.assumption_id}>
                <code>{shown(assumption.assumption_id)}</code> {shown(assumption.text)}
              </li>
            ))}
          </ul>
        </>
      )}
      <h3>
        {t.itemsTitle} ({ordered.length})
      </h3>
      <ol className="work-items">
        {ordered.map((item) => (
          <ItemCard
            key={item.item_id}
            contract={contract}
            item={item}
            criteria={criteria}
            actions={actions}
          />
        ))}
      </ol>
      <h3>
        {t.criteriaTitle} ({contract.contract.criteria.length})
      </h3>
      <ul className="criteria">
        {contract.contract.criteria.map((criterion) => {
          const state = criteria.get(criterion.criterion_id);
          const result = state?.result ?? null;
          return (
            <li key={criterion.criterion_id} className="criterion" data-criterion={criterion.criterion_id}>
              <p>
                <code>{shown(criterion.criterion_id)}</code>{' '}
                <VerdictBadge verdict={result?.verdict ?? null} />{' '}
                <span className="muted">{criterion.required ? t.required : t.optional}</span>
                {state?.stale && <span className="badge stale"> {t.stale}</span>}
              </p>
              <p>{shown(criterion.statement)}</p>
              <p className="muted">{shown(criterionKindText(criterion.kind))}</p>
              {result !== null && result.reason !== '' && (
                <p className="verdict-reason">{shown(result.reason)}</p>
              )}
              {result !== null && result.evidence.length > 0 && (
                <ul className="evidence-list">
                  {result.evidence.map((reference, at) => (
                    <Evidence key={at} reference={reference} />
                  ))}
                </ul>
              )}
            </li>
          );
        })}
      </ul>
    </article>
  );
}

function WorkBody({ snapshot, actions }: { snapshot: WorkSnapshot; actions: ItemActions }) {
  const t = useMessages();
  const contracts = snapshot.projection?.contracts ?? [];
  const main = snapshot.contract ?? contracts.at(-1) ?? null;
  const others = contracts.filter((contract) => contract.contract_id !== main?.contract_id).reverse();
  const terminal = snapshot.terminal;
  return (
    <>
      <p className="facts">
        <span>{t.ledgerPosition(snapshot.position)}</span>
        {terminal !== null && <span>{t.sessionTerminal(terminal.status)}</span>}
      </p>
      {terminal?.handoff && <PreparedHandoff handoff={terminal.handoff} actions={actions} />}
      <p className="hint">{t.progressNote}</p>
      {main === null ? (
        <p>{t.noWork}</p>
      ) : (
        <>
          {snapshot.contract === null && <p className="notice">{t.notLive}</p>}
          <ContractView contract={main} actions={actions} />
        </>
      )}
      {snapshot.warnings.length > 0 && (
        <section className="warnings">
          <h3>{t.warnings}</h3>
          <ul>
            {snapshot.warnings.map((warning, at) => (
              <li key={at} data-warning={warning.code}>
                <code>{warning.code}</code> {shown(warning.message)}
              </li>
            ))}
          </ul>
        </section>
      )}
      {others.length > 0 && (
        <details className="other-contracts">
          <summary>
            {t.earlierContracts} ({others.length})
          </summary>
          {others.map((contract) => (
            <ContractView key={contract.contract_id} contract={contract} actions={actions} />
          ))}
        </details>
      )}
    </>
  );
}

export function SessionWork({
  api,
  session_id,
  readOnly,
}: {
  api: Api;
  session_id: string;
  readOnly: boolean;
}) {
  const t = useMessages();
  const { snapshot, failure, live, show } = useLiveWork(api, session_id);
  /** Show the work a change answered; after a refusal, the work as it now is, then the refusal. */
  const change = async (send: () => Promise<WorkSnapshot>): Promise<void> => {
    try {
      show(await send());
    } catch (error) {
      // A refused change is usually a view behind the ledger: show the work as it now is.
      await api.work(session_id).then(show, () => undefined);
      throw error;
    }
  };
  const actions: ItemActions = {
    readOnly,
    run: (contract_id, item_id, action) =>
      change(() => (action === 'cancel' ? api.cancelItem : api.retryItem)(session_id, contract_id, item_id)),
    confirm: (contract_id, revision, resolutions) =>
      change(() => api.confirmWork(session_id, { contract_id, revision, resolutions })),
    publish: async (handoff) =>
      (await api.commit(handoff.scope_id, handoff.prepared_digest, handoff.base_revision)).revision,
  };
  return (
    <div className="session-work">
      <nav className="crumbs">
        <a href={href({ view: 'sessions' })}>{t.allSessions}</a>
        <span aria-hidden="true"> / </span>
        <h1>{shown(session_id)}</h1>
        <LiveStatus live={live} />
      </nav>
      {live.state === 'missing' ? (
        <p role="alert">{t.sessionNotFound(shown(session_id))}</p>
      ) : (
        failure !== null && (
          <p className="error" role="alert">
            {t.workLoadFailed}: {failureText(t, failure)}
          </p>
        )
      )}
      {snapshot && live.state !== 'missing' && (
        <>
          <WorkBody snapshot={snapshot} actions={actions} />
          <SessionTranscript
            api={api}
            session_id={session_id}
            position={snapshot.position}
            live={snapshot.terminal === null}
          />
        </>
      )}
    </div>
  );
}
