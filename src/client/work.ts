/**
 * The client's managed-work methods, one per endpoint of the work table: the session and item
 * in the input go into the path, the rest is the JSON body. Inputs are the zod input types of
 * the app's fields; results are the app's WorkSnapshot (and the bulk answers), as JSON.
 */
import type { z } from 'zod';
import type {
  confirmFields,
  createContractFields,
  endSessionFields,
  evidenceFields,
  itemFields,
  reassignFields,
  reviseFields,
  startSessionFields,
  transitionFields,
  WorkSnapshot,
} from '../app/work.ts';
import { requireObject } from '../core/records.ts';
import { checkedAnswer } from './errors.ts';
import type { SessionHeader } from '../core/work/session.ts';
import type {
  CancelItemsResult,
  cancelItemsFields,
  QueryWorkResult,
  queryWorkFields,
} from '../app/work-bulk.ts';
import type { ListSessionsResult } from '../app/work-list.ts';
import type { Transcript } from '../app/transcript.ts';
import { fillPath, findWorkEndpoint } from '../http/work-api.ts';

export type { WorkSnapshot } from '../app/work.ts';
export type {
  CancelItemsResult,
  CancelledItem,
  EntryError,
  QueriedWork,
  QueryWorkResult,
} from '../app/work-bulk.ts';
export type { ListedSession, ListSessionsResult } from '../app/work-list.ts';
export type { Transcript, TranscriptEntry } from '../app/transcript.ts';
export type { ContractSummary, SessionSummary } from '../core/work/summary.ts';

type Fields<Shape extends z.core.$ZodLooseShape> = z.input<z.ZodObject<Shape, z.core.$strict>>;

export type StartSessionInput = Fields<typeof startSessionFields>;
export type CreateWorkInput = Fields<typeof createContractFields>;
export type ConfirmWorkInput = Fields<typeof confirmFields>;
export type ReviseWorkInput = Fields<typeof reviseFields>;
export type TransitionWorkItemInput = Fields<typeof transitionFields>;
export type WorkItemInput = Fields<typeof itemFields>;
export type ReassignWorkItemInput = Fields<typeof reassignFields>;
export type AttachWorkEvidenceInput = Fields<typeof evidenceFields>;
export type QueryWorkInput = Fields<typeof queryWorkFields>;
export type CancelWorkItemsInput = Fields<typeof cancelItemsFields>;
export type EndSessionInput = Fields<typeof endSessionFields>;

export interface WorkMethods {
  /** GET /v1/sessions: the project's sessions, newest first, each summarized. */
  listSessions(): Promise<ListSessionsResult>;
  /** POST /v1/sessions: the session's header. */
  startSession(input: StartSessionInput): Promise<SessionHeader>;
  /** GET /v1/sessions/{session_id}/work: the projected snapshot. */
  getWork(input: { readonly session_id: string }): Promise<WorkSnapshot>;
  /** GET /v1/sessions/{session_id}/transcript: the conversation, newest entries, as history. */
  getTranscript(input: { readonly session_id: string }): Promise<Transcript>;
  createWork(input: CreateWorkInput): Promise<WorkSnapshot>;
  confirmWork(input: ConfirmWorkInput): Promise<WorkSnapshot>;
  reviseWork(input: ReviseWorkInput): Promise<WorkSnapshot>;
  /** POST /v1/sessions/{session_id}/work/reconcile: running items reconciled with their child sessions. */
  reconcileWork(input: { readonly session_id: string }): Promise<WorkSnapshot>;
  transitionWorkItem(input: TransitionWorkItemInput): Promise<WorkSnapshot>;
  retryWorkItem(input: WorkItemInput): Promise<WorkSnapshot>;
  cancelWorkItem(input: WorkItemInput): Promise<WorkSnapshot>;
  reassignWorkItem(input: ReassignWorkItemInput): Promise<WorkSnapshot>;
  attachWorkEvidence(input: AttachWorkEvidenceInput): Promise<WorkSnapshot>;
  /** POST /v1/sessions/{session_id}/end: the terminal marker, once; a parent observes it at once. */
  endWorkSession(input: EndSessionInput): Promise<WorkSnapshot>;
  /** Up to 100 sessions; each answers its work or its own error. */
  queryWork(input: QueryWorkInput): Promise<QueryWorkResult>;
  /** Up to 100 items of one session; each answers its own result. */
  cancelWorkItems(input: CancelWorkItemsInput): Promise<CancelItemsResult>;
}

export type Request = (
  method: 'GET' | 'POST',
  path: string,
  what: string,
  body?: unknown,
) => Promise<unknown>;

/** The methods over one request function (the client's), to the server at origin. */
export function workMethods(request: Request, origin: string): WorkMethods {
  const call =
    (operationId: string) =>
    async (input: unknown): Promise<never> => {
      const endpoint = findWorkEndpoint(operationId)!;
      requireObject(input, `${operationId} input`);
      const path = fillPath(endpoint, input);
      const body = Object.fromEntries(
        Object.entries(input).filter(([name]) => !(endpoint.params as readonly string[]).includes(name)),
      );
      const answer = await (endpoint.method === 'GET'
        ? request('GET', path, operationId)
        : request('POST', path, operationId, body));
      return checkedAnswer(endpoint.output, answer, operationId, origin) as never;
    };
  return {
    listSessions: () => call('list_sessions')({}),
    startSession: call('start_session'),
    getWork: call('get_work'),
    getTranscript: call('get_transcript'),
    createWork: call('create_work'),
    confirmWork: call('confirm_work'),
    reviseWork: call('revise_work'),
    reconcileWork: call('reconcile_work'),
    transitionWorkItem: call('transition_work_item'),
    retryWorkItem: call('retry_work_item'),
    cancelWorkItem: call('cancel_work_item'),
    reassignWorkItem: call('reassign_work_item'),
    attachWorkEvidence: call('attach_work_evidence'),
    endWorkSession: call('end_work_session'),
    queryWork: call('query_work'),
    cancelWorkItems: call('cancel_work_items'),
  };
}
