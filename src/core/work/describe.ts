/**
 * Managed-work values in a few words, as the CLI prints them and the web page shows them: an
 * owner, what a criterion checks, an evidence reference. Pure; names and ids stay as stored.
 */
import type { CriterionKind, EvidenceRef, WorkOwner } from './model.ts';

/** An owner as people name it: `human`, `worker`, `tool:NAME`, `flow:NAME`. */
export function ownerText(value: WorkOwner): string {
  return value.type === 'tool' || value.type === 'flow' ? `${value.type}:${value.name}` : value.type;
}

/** What a criterion checks, in a few words. */
export function criterionKindText(value: CriterionKind): string {
  switch (value.type) {
    case 'shell':
      return `shell: ${value.command}`;
    case 'file_exists':
      return `file exists: ${value.path}`;
    case 'file_contains':
      return `file ${value.path} contains ${JSON.stringify(value.pattern)}`;
    case 'tool_succeeded':
      return `tool succeeded: ${value.tool}`;
    case 'flow_completed':
      return `flow completed: ${value.flow}`;
    case 'external_receipt':
      return `external receipt: ${value.integration}`;
    case 'semantic':
      return `semantic: ${value.statement}`;
  }
}

/** A reference in a few words: its type and what it names. */
export function evidenceRefText(ref: EvidenceRef): string {
  switch (ref.type) {
    case 'ledger_entry':
    case 'receipt':
      return `${ref.type} ${ref.session_id} entry ${ref.entry_id}`;
    case 'tool_result':
      return `${ref.type} ${ref.session_id} ${ref.tool_use_id}`;
    case 'checkpoint_diff':
      return `${ref.type} ${ref.session_id} ${ref.from_seq}..${ref.to_seq}`;
    case 'flow_node':
      return `${ref.type} ${ref.flow} run ${ref.run_id} node ${ref.node_id}`;
    case 'child_session':
      return `${ref.type} ${ref.session_id}`;
    case 'external_operation':
      return `${ref.type} ${ref.integration} ${ref.operation_id}`;
  }
}
