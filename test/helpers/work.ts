/** Fixture builders for managed work: contracts, events and ledgers of them, for the pure projector. */
import type { JsonValue } from '../../src/core/json.ts';
import type { ActorType, WorkContract, WorkEventInput } from '../../src/core/work/model.ts';
import { workContractSchema } from '../../src/core/work/model.ts';
import type { ProjectableEntry } from '../../src/core/work/projector.ts';

export type ContractShape = Omit<Partial<WorkContract>, 'items' | 'criteria'> & {
  items?: Partial<WorkContract['items'][number]>[];
  criteria?: Partial<WorkContract['criteria'][number]>[];
};

/** A valid two-item contract (inspect → implement), each verified by one shell criterion. */
export function contract(shape: ContractShape = {}): WorkContract {
  return workContractSchema.parse({
    contract_id: 'work-1',
    revision: 1,
    objective: 'migrate the configuration loader',
    criteria: [
      {
        criterion_id: 'inspected',
        statement: 'the loader is mapped',
        kind: { type: 'file_exists', path: 'notes.md' },
      },
      { criterion_id: 'tests', statement: 'the tests pass', kind: { type: 'shell', command: 'npm test' } },
    ],
    items: [
      { item_id: 'inspect', title: 'Inspect the loader', criterion_ids: ['inspected'] },
      { item_id: 'implement', title: 'Implement', dependencies: ['inspect'], criterion_ids: ['tests'] },
    ],
    ...shape,
  });
}

const actorOf = (type: ActorType) => ({ type, id: type === 'human' ? 'ana' : type });

export function event(
  kind: WorkEventInput['kind'],
  options: { actor?: ActorType; contract_id?: string; revision?: number } = {},
): WorkEventInput {
  return {
    schema: 'baton.work-event/v1',
    contract_id: options.contract_id ?? 'work-1',
    revision: options.revision ?? 1,
    kind,
    actor: actorOf(options.actor ?? 'runtime'),
    operation: null,
  };
}

export const ev = {
  created: (c: WorkContract = contract(), options: { branch?: boolean; actor?: ActorType } = {}) =>
    event(
      { type: 'contract_created', contract: c, branch: options.branch ?? false },
      {
        actor: options.actor ?? 'model',
        contract_id: c.contract_id,
      },
    ),
  status: (from: string, to: string, actor: ActorType = 'runtime', revision = 1, contract_id = 'work-1') =>
    event({ type: 'contract_status_changed', from, to, reason: '' } as WorkEventInput['kind'], {
      actor,
      revision,
      contract_id,
    }),
  item: (
    item_id: string,
    from: string,
    to: string,
    actor: ActorType = 'runtime',
    attempt = 1,
    revision = 1,
  ) =>
    event({ type: 'item_status_changed', item_id, from, to, attempt, reason: '' } as WorkEventInput['kind'], {
      actor,
      revision,
    }),
  verdict: (
    criterion_id: string,
    verdict: string,
    checkpoint: string | null = null,
    actor: ActorType = 'verifier',
    revision = 1,
  ) =>
    event(
      {
        type: 'verification_recorded',
        criterion_id,
        result: { verdict, reason: '', evidence: [], checkpoint },
      } as WorkEventInput['kind'],
      { actor, revision },
    ),
  revised: (next: WorkContract, previous_revision: number, actor: ActorType = 'model') =>
    event(
      { type: 'contract_revised', previous_revision, contract: next, reason: 'scope changed' },
      {
        actor,
        revision: next.revision,
        contract_id: next.contract_id,
      },
    ),
  resolved: (assumption_id: string, resolution: string, revision = 1) =>
    event({ type: 'assumption_resolved', assumption_id, resolution }, { actor: 'human', revision }),
  evidence: (item_id: string, tool_use_id: string) =>
    event(
      {
        type: 'evidence_attached',
        item_id,
        evidence: { type: 'tool_result', session_id: 's-1', tool_use_id },
      },
      {
        actor: 'model',
      },
    ),
};

/** Session entries at positions 1..n from work events and other entries. */
export function ledger(
  ...items: (WorkEventInput | { type: string; content: JsonValue })[]
): ProjectableEntry[] {
  return items.map((item, index) => {
    const entry =
      'schema' in item && item.schema === 'baton.work-event/v1'
        ? { type: 'work_event', content: item }
        : item;
    return {
      position: index + 1,
      type: (entry as { type: string }).type,
      recorded_at: new Date(Date.UTC(2026, 11, 2, 9, 0, index)).toISOString(),
      content: (entry as { content: JsonValue }).content,
    };
  });
}

/** A contract made active with its first item ready: the start of most scenarios. */
export function activeStart(c: WorkContract = contract()): WorkEventInput[] {
  return [ev.created(c), ev.status('draft', 'active', 'human'), ev.item('inspect', 'proposed', 'ready')];
}
