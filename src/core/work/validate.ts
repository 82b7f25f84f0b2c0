/**
 * Deterministic validation of a Work Contract, never trusting whoever wrote it: each rejection
 * is an invalid_input BatonError whose data names the rule and the offending id.
 */
import { BatonError } from '../errors.ts';
import type { WorkContract, WorkOwner } from './model.ts';

export const validationRules = [
  'empty_objective',
  'empty_title',
  'duplicate_id',
  'unknown_dependency',
  'dependency_cycle',
  'unknown_criterion',
  'missing_required_criteria',
  'unsupported_owner',
  'path_outside_workspace',
  'too_many_items',
  'too_many_revisions',
  'capability_escalation',
  'unsupported_tool',
  'unsupported_flow',
] as const;
export type ValidationRule = (typeof validationRules)[number];

export interface ValidationContext {
  readonly max_items: number;
  readonly max_revisions: number;
  /** Owner kinds this session can run. */
  readonly owners: ReadonlySet<WorkOwner['type']>;
  /** Tools the session may use: tool owners and tool_succeeded criteria must name one. */
  readonly tools: ReadonlySet<string>;
  /** Flows the session may run: flow owners and flow_completed criteria must name one. */
  readonly flows: ReadonlySet<string>;
  /** Capabilities the session holds; an item may ask for no more. */
  readonly capabilities: ReadonlySet<string>;
  /** Whether the session may write; a writing item in a read-only session is an escalation. */
  readonly write: boolean;
  /**
   * Whether a contract path lies inside the workspace, after resolving `..` and symbolic
   * links. Supplied by the caller, who owns the file system.
   */
  insideWorkspace(path: string): boolean;
}

function reject(rule: ValidationRule, id: string, message: string): never {
  throw new BatonError('invalid_input', `work contract rejected (${rule}): ${message}`, { rule, id });
}

function requireUnique(kind: string, ids: readonly string[]): void {
  const seen = new Set<string>();
  for (const id of ids) {
    if (seen.has(id)) reject('duplicate_id', id, `${kind} id "${id}" appears more than once`);
    seen.add(id);
  }
}

/** The first dependency cycle among items, as the ids along it, or undefined. */
export function findCycle(
  items: readonly { item_id: string; dependencies: readonly string[] }[],
): string[] | undefined {
  const edges = new Map(items.map((item) => [item.item_id, item.dependencies]));
  const state = new Map<string, 'open' | 'done'>();
  for (const root of edges.keys()) {
    if (state.has(root)) continue;
    // Iterative depth-first walk; the path is the chain of open items.
    const path: string[] = [];
    const stack: { id: string; next: number }[] = [{ id: root, next: 0 }];
    state.set(root, 'open');
    path.push(root);
    while (stack.length > 0) {
      const frame = stack[stack.length - 1]!;
      const dependencies = edges.get(frame.id) ?? [];
      if (frame.next >= dependencies.length) {
        state.set(frame.id, 'done');
        stack.pop();
        path.pop();
        continue;
      }
      const dependency = dependencies[frame.next++]!;
      const seen = state.get(dependency);
      if (seen === 'open') return [...path.slice(path.indexOf(dependency)), dependency];
      if (seen === undefined && edges.has(dependency)) {
        state.set(dependency, 'open');
        path.push(dependency);
        stack.push({ id: dependency, next: 0 });
      }
    }
  }
  return undefined;
}

/**
 * The rules that need no context: unique ids, known dependencies and criteria, no cycle. The
 * projector applies these to every contract it reads, whoever wrote it.
 */
export function validateStructure(contract: WorkContract): void {
  const { items, criteria } = contract;
  requireUnique(
    'item',
    items.map((item) => item.item_id),
  );
  requireUnique(
    'criterion',
    criteria.map((criterion) => criterion.criterion_id),
  );
  requireUnique(
    'constraint',
    contract.constraints.map((constraint) => constraint.constraint_id),
  );
  requireUnique(
    'assumption',
    contract.assumptions.map((assumption) => assumption.assumption_id),
  );
  const itemIds = new Set(items.map((item) => item.item_id));
  const criterionIds = new Set(criteria.map((criterion) => criterion.criterion_id));
  for (const item of items) {
    for (const dependency of item.dependencies) {
      if (!itemIds.has(dependency)) {
        reject(
          'unknown_dependency',
          item.item_id,
          `item "${item.item_id}" depends on unknown item "${dependency}"`,
        );
      }
    }
    for (const criterion_id of item.criterion_ids) {
      if (!criterionIds.has(criterion_id)) {
        reject(
          'unknown_criterion',
          item.item_id,
          `item "${item.item_id}" names unknown criterion "${criterion_id}"`,
        );
      }
    }
  }
  const cycle = findCycle(items);
  if (cycle)
    reject('dependency_cycle', cycle[0]!, `items depend on each other in a cycle: ${cycle.join(' -> ')}`);
}

/**
 * Refuse what the configured limits never allow, whatever the stream holds: a revision numbered
 * past max_revisions (too_many_revisions), no items or more than max_items (too_many_items).
 */
export function checkLimits(
  contract_id: string,
  { revision, items }: { readonly revision: number; readonly items: number },
  context: Pick<ValidationContext, 'max_items' | 'max_revisions'>,
): void {
  if (revision > context.max_revisions) {
    reject(
      'too_many_revisions',
      contract_id,
      `revision ${revision} is over the limit of ${context.max_revisions} revisions`,
    );
  }
  if (items === 0 || items > context.max_items) {
    reject('too_many_items', contract_id, `a contract holds 1 to ${context.max_items} items, not ${items}`);
  }
}

/** Throw the first rule the contract breaks; return quietly when it keeps them all. */
export function validateContract(contract: WorkContract, context: ValidationContext): void {
  const { contract_id, items, criteria } = contract;
  if (contract.objective.trim() === '') reject('empty_objective', contract_id, 'the objective is empty');
  checkLimits(contract_id, { revision: contract.revision, items: items.length }, context);
  validateStructure(contract);
  const criteriaById = new Map(criteria.map((criterion) => [criterion.criterion_id, criterion]));
  for (const item of items) {
    // New contracts only: a contract already in the ledger is read as it was written.
    if (item.title.trim() === '') reject('empty_title', item.item_id, `item "${item.item_id}" has no title`);
    requireUnique(`item "${item.item_id}" dependency`, item.dependencies);
    requireUnique(`item "${item.item_id}" criterion`, item.criterion_ids);
    if (
      item.required &&
      !item.criterion_ids.some((criterion_id) => criteriaById.get(criterion_id)?.required)
    ) {
      reject(
        'missing_required_criteria',
        item.item_id,
        `required item "${item.item_id}" has no required criterion to verify it`,
      );
    }
    checkOwner(item.item_id, item.owner, context);
    checkAuthority(item, context);
    for (const path of item.path_claims) checkPath(item.item_id, path, context);
  }
  for (const criterion of criteria) {
    const kind = criterion.kind;
    if (kind.type === 'tool_succeeded' && !context.tools.has(kind.tool)) {
      reject(
        'unsupported_tool',
        criterion.criterion_id,
        `criterion "${criterion.criterion_id}" names unknown tool "${kind.tool}"`,
      );
    }
    if (kind.type === 'flow_completed' && !context.flows.has(kind.flow)) {
      reject(
        'unsupported_flow',
        criterion.criterion_id,
        `criterion "${criterion.criterion_id}" names unknown flow "${kind.flow}"`,
      );
    }
    if (kind.type === 'file_exists' || kind.type === 'file_contains') {
      checkPath(criterion.criterion_id, kind.path, context);
    }
  }
}

/** An owner the session can run: a supported kind, and a known tool or flow. */
export function checkOwner(item_id: string, owner: WorkOwner, context: ValidationContext): void {
  if (!context.owners.has(owner.type)) {
    reject(
      'unsupported_owner',
      item_id,
      `item "${item_id}" has owner ${owner.type}, which this session cannot run`,
    );
  }
  if (owner.type === 'tool' && !context.tools.has(owner.name)) {
    reject('unsupported_tool', item_id, `item "${item_id}" is owned by unknown tool "${owner.name}"`);
  }
  if (owner.type === 'flow' && !context.flows.has(owner.name)) {
    reject('unsupported_flow', item_id, `item "${item_id}" is owned by unknown flow "${owner.name}"`);
  }
}

function checkAuthority(
  item: { item_id: string; readonly: boolean; capabilities: readonly string[] },
  context: ValidationContext,
): void {
  if (!item.readonly && !context.write) {
    reject(
      'capability_escalation',
      item.item_id,
      `item "${item.item_id}" would write in a read-only session`,
    );
  }
  const beyond = item.capabilities.find((capability) => !context.capabilities.has(capability));
  if (beyond !== undefined) {
    reject(
      'capability_escalation',
      item.item_id,
      `item "${item.item_id}" asks for capability "${beyond}", which the session does not hold`,
    );
  }
}

function checkPath(id: string, path: string, context: ValidationContext): void {
  if (!context.insideWorkspace(path)) {
    reject('path_outside_workspace', id, `"${id}" names path "${path}" outside the workspace`);
  }
}
