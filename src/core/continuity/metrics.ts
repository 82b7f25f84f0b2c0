/**
 * Continuity metrics, computed from valid work records only (definitions: docs/continuity-metrics.md).
 * Accepted never counts as completion; a declared success never counts as verified.
 */
import type { ValidWorkRecord } from './projection.ts';
import { sameRef } from './projection.ts';

export interface Rate {
  /** numerator / denominator, or null when there is nothing to measure. */
  readonly rate: number | null;
  readonly numerator: number;
  readonly denominator: number;
}

export interface ContinuityMetrics {
  readonly clarification_rate: Rate;
  readonly evidence_availability_rate: Rate;
  readonly handoff_result_coverage_rate: Rate;
  readonly counts: {
    readonly receipts: number;
    readonly accepted_receipts: number;
    readonly outcomes: number;
    readonly verified_passed_checks: number;
    readonly declared_passed_checks: number;
  };
}

function rate(numerator: number, denominator: number): Rate {
  return { rate: denominator === 0 ? null : numerator / denominator, numerator, denominator };
}

/** Metrics over every scope of a project: records grouped per scope. */
export function computeMetrics(scopes: readonly (readonly ValidWorkRecord[])[]): ContinuityMetrics {
  let receipts = 0;
  let clarifications = 0;
  let checked = 0;
  let available = 0;
  let accepted = 0;
  let outcomes = 0;
  let verifiedPassed = 0;
  let declaredPassed = 0;
  let transfers = 0;
  let covered = 0;
  for (const records of scopes) {
    const transferKeys = new Set<string>();
    const coveredKeys = new Set<string>();
    const outcomeRecords = records.flatMap((r) => (r.work.kind === 'task-outcome' ? [r.work.record] : []));
    for (const record of records) {
      if (record.work.kind === 'task-outcome') {
        outcomes += 1;
        for (const check of record.work.record.checks) {
          if (check.status !== 'passed') continue;
          if (check.basis === 'verified') verifiedPassed += 1;
          else declaredPassed += 1;
        }
      }
      if (record.work.kind !== 'handoff-receipt') continue;
      const receipt = record.work.record;
      receipts += 1;
      if (receipt.status === 'needs_clarification') clarifications += 1;
      checked += receipt.citations_checked;
      available += receipt.citations_checked - receipt.unavailable_citations.length;
      if (receipt.target.kind !== 'exact') continue;
      const key = `${receipt.target.revision}:${receipt.target.digest}`;
      transferKeys.add(key);
      if (receipt.status !== 'accepted') continue;
      accepted += 1;
      if (outcomeRecords.some((outcome) => sameRef(outcome.handoff_receipt_ref, record.source_ref)))
        coveredKeys.add(key);
    }
    transfers += transferKeys.size;
    covered += coveredKeys.size;
  }
  return {
    clarification_rate: rate(clarifications, receipts),
    evidence_availability_rate: rate(available, checked),
    handoff_result_coverage_rate: rate(covered, transfers),
    counts: {
      receipts,
      accepted_receipts: accepted,
      outcomes,
      verified_passed_checks: verifiedPassed,
      declared_passed_checks: declaredPassed,
    },
  };
}
