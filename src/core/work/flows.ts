/**
 * Static flows (docs/flows.md): deterministic node graphs declared in baton.toml, `[flows.NAME]`
 * with `[[flows.NAME.nodes]]`. Each node is a command run in the read-only sandbox; `needs`
 * names the nodes that must pass first. Pure: the definition's schema and checks (unique ids,
 * known needs, no cycle), the order nodes run in, and what a run's node statuses make of the
 * flow. The executor is src/app/flows.ts.
 */
import { z } from 'zod';
import { BatonError } from '../errors.ts';
import { echoed } from '../text.ts';
import { configRefusal } from './config.ts';
import { workIdSchema } from './model.ts';

/**
 * The most nodes one flow holds: each node's receipt and the run's marker are attached to the
 * item, and an item shows its latest 64 pieces of evidence, so a whole run stays in view.
 */
export const maxFlowNodes = 32;

export const flowNodeSchema = z.object({
  node_id: workIdSchema,
  /** Run with `/bin/sh -c` in the read-only sandbox, in the session's workspace. */
  command: z.string().min(1).max(8000),
  /** Nodes that must pass before this one runs; when one does not, this one is skipped. */
  needs: z.array(workIdSchema).max(maxFlowNodes).default([]),
  timeout_ms: z.number().int().min(1000).max(3_600_000).default(600_000),
});
export type FlowNode = z.output<typeof flowNodeSchema>;

export const flowDefinitionSchema = z
  .object({
    description: z.string().max(400).default(''),
    nodes: z.array(flowNodeSchema).min(1, 'a flow needs at least one node').max(maxFlowNodes),
  })
  .superRefine((flow, context) => {
    const ids = new Set<string>();
    for (const [at, node] of flow.nodes.entries()) {
      if (ids.has(node.node_id)) {
        context.addIssue({
          code: 'custom',
          path: ['nodes', at, 'node_id'],
          message: `repeats ${node.node_id}`,
        });
      }
      ids.add(node.node_id);
    }
    for (const [at, node] of flow.nodes.entries()) {
      for (const need of node.needs) {
        if (!ids.has(need) || need === node.node_id) {
          context.addIssue({
            code: 'custom',
            path: ['nodes', at, 'needs'],
            message: need === node.node_id ? 'a node cannot need itself' : `names no node ${need}`,
          });
        }
      }
    }
    if (context.value.nodes.length > 0 && flowOrder(flow).length < flow.nodes.length) {
      context.addIssue({ code: 'custom', path: ['nodes'], message: 'the needs form a cycle' });
    }
  });
export type FlowDefinition = z.output<typeof flowDefinitionSchema>;
export type Flows = Readonly<Record<string, FlowDefinition>>;

/**
 * The order a flow's nodes run in: each after every node it needs, and otherwise in the order
 * they are declared, so the same definition always runs the same way. Nodes on a cycle are left
 * out (the schema refuses such a flow).
 */
export function flowOrder(flow: {
  readonly nodes: readonly Pick<FlowNode, 'node_id' | 'needs'>[];
}): string[] {
  const done = new Set<string>();
  const order: string[] = [];
  for (let progressed = true; progressed;) {
    progressed = false;
    for (const node of flow.nodes) {
      if (done.has(node.node_id) || !node.needs.every((need) => done.has(need))) continue;
      done.add(node.node_id);
      order.push(node.node_id);
      progressed = true;
      break;
    }
  }
  return order;
}

export const flowNodeStatuses = [
  'passed',
  'failed',
  'timed_out',
  'unavailable',
  'skipped',
  'cancelled',
] as const;
export type FlowNodeStatus = (typeof flowNodeStatuses)[number];
export const flowRunStatuses = ['completed', 'failed', 'cancelled'] as const;
export type FlowRunStatus = (typeof flowRunStatuses)[number];

/** Why a node does not run: a node it needs did not pass (null when all did). */
export function blockedBy(
  node: Pick<FlowNode, 'needs'>,
  statuses: ReadonlyMap<string, FlowNodeStatus>,
): string | null {
  return node.needs.find((need) => statuses.get(need) !== 'passed') ?? null;
}

/** A run's end from its nodes' statuses: completed only when every node passed. */
export function flowRunStatus(statuses: Iterable<FlowNodeStatus>): FlowRunStatus {
  const all = [...statuses];
  if (all.includes('cancelled')) return 'cancelled';
  return all.every((status) => status === 'passed') ? 'completed' : 'failed';
}

/** The purposes of the receipts a run records: one per node, then its completion marker. */
export const flowNodePurpose = 'flow_node';
export const flowCompletedPurpose = 'flow_completed';

/** A flow node's receipt details. */
export const flowNodeReceiptSchema = z.looseObject({
  flow: z.string(),
  run_id: z.string(),
  node_id: z.string(),
  status: z.enum(flowNodeStatuses),
  reason: z.string().default(''),
  exit_code: z.number().int().nullable().default(null),
  duration_ms: z.number().min(0).default(0),
  /** The command's output, scrubbed and cut. */
  output: z.string().default(''),
});
export type FlowNodeReceipt = z.output<typeof flowNodeReceiptSchema>;

/** The completion marker's details. */
export const flowCompletedReceiptSchema = z.looseObject({
  flow: z.string(),
  run_id: z.string(),
  status: z.enum(flowRunStatuses),
  /** The item the run worked, when it was linked to one; null for a standalone run. */
  contract_id: z.string().nullable().default(null),
  item_id: z.string().nullable().default(null),
  nodes: z.record(z.string(), z.enum(flowNodeStatuses)).default({}),
});
export type FlowCompletedReceipt = z.output<typeof flowCompletedReceiptSchema>;

/**
 * Read `[flows]` from a parsed baton.toml: each `[flows.NAME]` a flow. Unknown keys are warnings;
 * a bad flow is refused, naming it and the key.
 */
export function readFlowsConfig(
  document: unknown,
  file = 'baton.toml',
): { config: Flows; warnings: string[] } {
  const warnings: string[] = [];
  const section = (document as Record<string, unknown> | null | undefined)?.flows;
  if (section === undefined) return { config: {}, warnings };
  const isTable = (value: unknown): value is Record<string, unknown> =>
    typeof value === 'object' && value !== null && !Array.isArray(value);
  if (!isTable(section))
    throw new BatonError('invalid_input', `${file}: [flows] must be a table`, { key: 'flows' });
  const config: Record<string, FlowDefinition> = {};
  for (const [name, value] of Object.entries(section)) {
    const key = `flows.${echoed(name)}`;
    if (!workIdSchema.safeParse(name).success) {
      throw new BatonError(
        'invalid_input',
        `${file}: ${key} is not a valid flow name (letters, digits, . _ -)`,
        {
          key,
        },
      );
    }
    if (!isTable(value)) throw new BatonError('invalid_input', `${file}: [${key}] must be a table`, { key });
    for (const unknown of Object.keys(value).filter((field) => !['description', 'nodes'].includes(field))) {
      warnings.push(`${file}: unknown key ${key}.${echoed(unknown)} is ignored`);
    }
    if (Array.isArray(value.nodes)) {
      for (const [at, node] of value.nodes.entries()) {
        if (!isTable(node)) continue;
        for (const unknown of Object.keys(node).filter((field) => !(field in flowNodeSchema.shape))) {
          warnings.push(`${file}: unknown key ${key}.nodes.${at}.${echoed(unknown)} is ignored`);
        }
      }
    }
    const parsed = flowDefinitionSchema.safeParse(value);
    if (!parsed.success) throw configRefusal(file, key, parsed.error);
    config[name] = parsed.data;
  }
  return { config, warnings };
}
