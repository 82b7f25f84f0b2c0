/** capture_source and retract_source: the Source journal of a Workstream. */
import { z } from 'zod';
import type { JsonObject, JsonValue } from '../core/json.ts';
import type { Entry } from '../core/ledger/entry.ts';
import type { SourceReceipt } from '../core/ledger/source.ts';
import { parseRecord, requireObject } from '../core/records.ts';
import { BatonError } from '../core/errors.ts';
import { jsonObjectSchema } from '../core/json.ts';
import { requireOwnSourceId } from '../core/continuity/experience.ts';
import { reservedKinds } from '../core/continuity/records.ts';
import type { AppDeps } from './deps.ts';

export interface CaptureSourceInput {
  readonly project_id: string;
  readonly scope_id: string;
  readonly source_id: string;
  /** Stored as metadata.kind, as typed ContentSources carry it. */
  readonly kind?: string;
  readonly content: JsonValue;
  readonly metadata?: JsonObject;
}

/** A source's kind, as capture_source takes it; the kinds of the work records are refused (reservedKinds). */
export const kindSchema = z
  .string()
  .regex(/^[a-z][a-z0-9-]{0,63}$/, 'a kind is 1-64 of a-z 0-9 - starting with a letter')
  .describe(
    `Stored as metadata.kind. ${reservedKinds.join(', ')} are refused: those records are written only by their own operation.`,
  );

/** Capture a source; the same content again returns the identical receipt, other content conflicts. */
export async function captureSource(deps: AppDeps, input: CaptureSourceInput): Promise<SourceReceipt> {
  requireObject(input, 'capture');
  if (typeof input.source_id === 'string') requireOwnSourceId(input.source_id, 'capture');
  const kind = input.kind === undefined ? undefined : parseRecord(kindSchema, input.kind, 'kind');
  if (input.metadata !== undefined) parseRecord(jsonObjectSchema, input.metadata, 'metadata');
  const stated = input.metadata?.kind;
  if (kind !== undefined && stated !== undefined && stated !== kind) {
    throw new BatonError(
      'invalid_input',
      `capture is invalid at metadata.kind: it says ${JSON.stringify(stated)} and kind says ${JSON.stringify(kind)}; give the kind once`,
      { issues: [{ path: 'metadata.kind', message: 'differs from kind' }] },
    );
  }
  const metadata: JsonObject = kind === undefined ? (input.metadata ?? {}) : { ...input.metadata, kind };
  const declared = metadata.kind;
  if (typeof declared === 'string' && reservedKinds.includes(declared)) {
    throw new BatonError(
      'invalid_input',
      `capture is invalid at kind: ${declared} records are written only by their own operation, which checks them`,
      { issues: [{ path: 'kind', message: `reserved kind ${declared}` }] },
    );
  }
  return deps.store.captureSource(
    { project_id: input.project_id, scope_id: input.scope_id },
    { source_id: input.source_id, content: input.content, metadata },
  );
}

export interface RetractSourceInput {
  readonly project_id: string;
  readonly scope_id: string;
  readonly source_id: string;
  readonly reason: string;
}

/** Purge content that must not be kept; the tombstone keeps its place and identity. */
export async function retractSource(deps: AppDeps, input: RetractSourceInput): Promise<Entry> {
  requireObject(input, 'retraction');
  return deps.store.retractSource(
    { project_id: input.project_id, scope_id: input.scope_id },
    input.source_id,
    input.reason,
  );
}
