/**
 * The wire types the page reads and sends, taken type-only from the server's own definitions
 * (the typed client's OperationMap), so the page and the API cannot drift apart. Nothing here
 * exists at run time: the bundle carries none of the server's code.
 */
import type { OperationInput, OperationResult } from '../../src/client/types.ts';
import type { WorkContinuity, TimelineEvent } from '../../src/core/continuity/projection.ts';
import type { HandoffReport, RevisionSummary, WorkstreamReport } from '../../src/core/handoff/report.ts';
import type { Disposition, PreparedHandoff } from '../../src/core/handoff/prepared.ts';
import type { EvidenceCheck, HandoffResolution } from '../../src/core/handoff/resolution.ts';
import type { SourceRef } from '../../src/core/ledger/source.ts';
import type { WorkSnapshot } from '../../src/app/work.ts';
import type { Transcript, TranscriptEntry } from '../../src/app/transcript.ts';
import type { ListedSession, ListSessionsResult } from '../../src/app/work-list.ts';
import type {
  EvidenceAvailability,
  EvidenceRef,
  WorkCriterion,
  WorkItemDefinition,
  WorkItemStatus,
} from '../../src/core/work/model.ts';
import type { ContractProjection, CriterionState, WorkItemState } from '../../src/core/work/projector.ts';

export type {
  Disposition,
  EvidenceCheck,
  HandoffReport,
  HandoffResolution,
  PreparedHandoff,
  RevisionSummary,
  SourceRef,
  TimelineEvent,
  WorkContinuity,
  WorkstreamReport,
  WorkSnapshot,
  Transcript,
  TranscriptEntry,
  ListedSession,
  ListSessionsResult,
  ContractProjection,
  CriterionState,
  WorkItemState,
  WorkItemDefinition,
  WorkItemStatus,
  WorkCriterion,
  EvidenceRef,
  EvidenceAvailability,
};

export type BoundaryInput = OperationInput<'handoff_current_work'>;
export type PreparedResult = OperationResult<'handoff_current_work'>;
export type CommitResult = OperationResult<'commit_handoff'>;
export type AcknowledgeInput = OperationInput<'acknowledge_handoff'>;
export type AcknowledgeResult = OperationResult<'acknowledge_handoff'>;
export type OutcomeInput = OperationInput<'record_task_outcome'>;
export type OutcomeResult = OperationResult<'record_task_outcome'>;
export type ReceiptStatus = AcknowledgeInput['status'];

/** What POST /v1/session answers. */
export interface WebSession {
  readonly csrf: string;
  readonly expires_at: string;
  readonly project_id: string;
  /** The token is read-only: the server refuses every write of this session (403). */
  readonly read_only: boolean;
}
