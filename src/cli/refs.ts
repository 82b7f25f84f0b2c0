/**
 * Source references and stable source ids as a person types them. A reference is
 * `SOURCE_ID@sha256:<hex>` (exact), or a bare SOURCE_ID that names one of the workstream's work
 * records (contract, boundary, receipt, outcome), whose digest the continuity projection knows.
 * A derived source id is a digest of what is being stored, so retrying the same command
 * reuses the same id and the ledger answers with the same receipt.
 */
import { canonicalJson, digestPattern, sha256Digest, type Digest } from '../core/canonical.ts';
import { BatonError } from '../core/errors.ts';
import type { SourceRef } from '../core/ledger/source.ts';
import { UsageError } from './command.ts';
import type { Transport } from './transport.ts';

/** `prefix-` and 16 hex digits of the digest of the value: stable for the same value. */
export function stableSourceId(prefix: string, value: unknown): string {
  return `${prefix}-${sha256Digest(canonicalJson(value)).slice('sha256:'.length, 'sha256:'.length + 16)}`;
}

/**
 * The receipt source id of an acknowledgement: a digest of what is acknowledged and of the
 * receipt it follows (`receipts`: the workstream's receipt source ids in journal order). The
 * same `baton ack` run again after it was stored (its answer lost, say) finds its own receipt
 * latest and reuses that id, so the ledger answers with the same receipt. The same choice made
 * again after another one (accepted, needs-clarification, accepted) follows that other one:
 * a new receipt, which decides the transfer state as the latest choice must.
 */
export function receiptSourceId(fields: unknown, receipts: readonly string[]): string {
  const id = (after: string | null) => stableSourceId('receipt', { fields, after });
  const latest = receipts.at(-1);
  if (latest !== undefined && latest === id(receipts.at(-2) ?? null)) return latest;
  return id(latest ?? null);
}

export interface TypedRef {
  readonly source_id: string;
  readonly digest?: Digest;
}

/**
 * A reference as typed after `option`. Text after the last `@` that starts like a digest must be
 * one: `b1@sha256:zz` is a usage error naming the digest, not a search for a source id
 * `b1@sha256:zz`.
 */
export function parseRef(text: string, option: string): TypedRef {
  const at = text.lastIndexOf('@');
  const after = text.slice(at + 1);
  if (at > 0 && digestPattern.test(after)) {
    return { source_id: text.slice(0, at), digest: after as Digest };
  }
  if (at > 0 && after.startsWith('sha256:')) {
    throw new UsageError(
      `${option} ${text}: ${JSON.stringify(after)} is not a digest; a digest is sha256: and 64 lowercase hex digits`,
      { showUsage: false },
    );
  }
  return { source_id: text };
}

/** The exact ref of a typed reference in a scope; a bare id must name a work record there. */
export async function exactRef(
  transport: Transport,
  scope_id: string,
  typed: TypedRef,
  option: string,
): Promise<SourceRef> {
  if (typed.digest) return { scope_id, source_id: typed.source_id, digest: typed.digest };
  const continuity = await transport.invoke('get_work_continuity', { scope_id });
  const known = [
    continuity.active_receipt_ref,
    continuity.covering_outcome_ref,
    ...continuity.timeline.map((event) => event.source_ref),
  ].find((candidate) => candidate?.source_id === typed.source_id);
  if (!known) {
    throw new BatonError(
      'not_found',
      `${option} ${typed.source_id}: no work record with that source_id in ${scope_id}; ` +
        'give the exact reference SOURCE_ID@sha256:… (baton capture prints the digest)',
      { scope_id, source_id: typed.source_id },
    );
  }
  return known;
}

/**
 * `--receipt` as typed: "active" for the workstream's active receipt, else a reference to a
 * receipt (SOURCE_ID[@DIGEST]); undefined when not given.
 */
export async function receiptRef(
  transport: Transport,
  scope_id: string,
  typed: string | undefined,
): Promise<SourceRef | undefined> {
  if (typed === undefined) return undefined;
  if (typed !== 'active') return exactRef(transport, scope_id, parseRef(typed, '--receipt'), '--receipt');
  const continuity = await transport.invoke('get_work_continuity', { scope_id });
  if (!continuity.active_receipt_ref) {
    throw new BatonError(
      'not_found',
      `--receipt active: ${scope_id} has no receipt for its current revision`,
      {
        scope_id,
      },
    );
  }
  return continuity.active_receipt_ref;
}
