/**
 * One workstream on one screen: left "What am I handing off?" (the sender card), right "Can I
 * take it?" (preflight and the three choices), below "What happened afterward?" (the
 * continuity timeline) and the revision trail. Everything shown comes from one frozen report.
 */
import type { Api } from './api.ts';
import { Afterward, RevisionTrail } from './Afterward.tsx';
import type { CardDraft } from './draft.ts';
import type { Forms } from './forms.ts';
import type { Preflight } from './preflight.ts';
import { useMessages } from './i18n.ts';
import { Receiver } from './Receiver.tsx';
import { href } from './route.ts';
import type { SendAttempt } from './send.ts';
import { SenderCard } from './SenderCard.tsx';
import type { WorkstreamReport } from './types.ts';

export interface WorkspaceProps {
  readonly api: Api;
  readonly scope_id: string;
  /** The session cannot write: every write control is disabled, with readOnlyHint as the reason. */
  readonly readOnly: boolean;
  readonly workstream: WorkstreamReport | undefined;
  /** The latest preflight of this workstream, and where a new one goes. */
  readonly preflight: Preflight | undefined;
  readonly setPreflight: (preflight: Preflight) => void;
  readonly draft: CardDraft | undefined;
  readonly setDraft: (draft: CardDraft | undefined) => void;
  readonly attempt: SendAttempt | undefined;
  readonly setAttempt: (attempt: SendAttempt | undefined) => void;
  readonly forms: Forms;
  readonly setForms: (forms: Forms) => void;
  readonly act: <T>(action: () => Promise<T>) => Promise<T>;
  readonly reload: () => Promise<void>;
}

export function Workspace(props: WorkspaceProps) {
  const t = useMessages();
  const { workstream, scope_id } = props;
  return (
    <div className="workspace">
      <nav className="crumbs" aria-label={t.workstream}>
        <a href={href({ view: 'project' })}>{t.backToProject}</a>
        <span aria-hidden="true"> / </span>
        <h1>{scope_id}</h1>
        {workstream && (
          <a className="md-link" href={href({ view: 'markdown', scope_id })}>
            {t.markdownView}
          </a>
        )}
      </nav>
      {!workstream ? (
        <p>{t.nothingRecorded(scope_id)}</p>
      ) : (
        <>
          <div className="columns">
            <SenderCard {...props} workstream={workstream} />
            <Receiver {...props} workstream={workstream} />
          </div>
          <div className="below">
            <Afterward continuity={workstream.continuity} />
            <RevisionTrail workstream={workstream} />
          </div>
        </>
      )}
    </div>
  );
}
