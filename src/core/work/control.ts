/**
 * The model's control block: one bounded `<work_contract revision="N">` text rebuilt from the
 * projection every turn and placed in the request tail, never stored in history, so compaction
 * never summarises or drops it. It carries ids, titles and statuses only, scrubbed of
 * anything that looks like a secret and escaped so that stored text stays inside the block;
 * never tool output. A terminal contract renders nothing; another live contract (beside a
 * branch) is named in one line.
 */
import { scrubSecrets } from '../secrets.ts';
import { prefix } from '../text.ts';
import { terminalContractStatuses } from './model.ts';
import { activeContract, type WorkProjection } from './projector.ts';

/** The block never exceeds this many characters. */
export const controlBlockLimit = 4000;

const rules = [
  'do not claim completion while required items remain unfinished',
  'use the work tool for state changes',
  'only the verifier marks items succeeded; move finished items to ready_for_verification',
];

/**
 * Stored text on one line, scrubbed and escaped as XML text is (`&`, `<`, `>`): a title,
 * objective or blocker can neither close the block nor open another one the model would read
 * as Baton's.
 */
function line(text: string, max: number): string {
  const flat = scrubSecrets(text.replace(/\s+/g, ' ').trim())
    .text.replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;');
  return flat.length > max ? `${prefix(flat, max - 1)}…` : flat;
}

/** How many other live contracts the block names; more are counted. */
const otherLimit = 5;

/**
 * One line for each other live contract (a branch was started beside it, or it beside a
 * branch): its work is active too and the stop gate holds the agent to it, so it never leaves
 * the model's context while it is live.
 */
function otherLive(projection: WorkProjection, shown: string): string[] {
  const others = projection.contracts.filter(
    (candidate) => candidate.contract_id !== shown && !terminalContractStatuses.has(candidate.status),
  );
  const lines = others.slice(0, otherLimit).map((other) => {
    const required = new Set(
      other.contract.items.filter((item) => item.required).map((item) => item.item_id),
    );
    const open = other.items.filter(
      (item) => required.has(item.item_id) && item.status !== 'succeeded',
    ).length;
    return `Also live: ${other.contract_id} revision ${other.revision}, ${other.status}: ${open} required items unfinished`;
  });
  if (others.length > otherLimit) lines.push(`Also live: ${others.length - otherLimit} more contracts`);
  return lines;
}

/** The control block for the live contract, or null when none is live. */
export function renderControlBlock(projection: WorkProjection | null): string | null {
  const contract = activeContract(projection);
  if (!contract || terminalContractStatuses.has(contract.status)) return null;
  const definitions = new Map(contract.contract.items.map((item) => [item.item_id, item]));
  const head = [
    `<work_contract revision="${contract.revision}">`,
    `Objective: ${line(contract.contract.objective, 400)}`,
    `Status: ${contract.status}`,
  ];
  const open = contract.contract.assumptions.filter(
    (assumption) => assumption.requires_confirmation && !assumption.resolution,
  );
  if (open.length > 0)
    head.push(`Awaiting input on: ${open.map((assumption) => assumption.assumption_id).join(', ')}`);
  const tail = [
    ...otherLive(projection!, contract.contract_id),
    'Rules:',
    ...rules.map((rule) => `- ${rule}`),
    '</work_contract>',
  ];
  const budget = controlBlockLimit - [...head, ...tail].join('\n').length - 64;
  const items: string[] = ['Required items:'];
  let used = items[0]!.length + 1;
  const required = contract.items.filter((item) => definitions.get(item.item_id)?.required);
  let shown = 0;
  for (const item of required) {
    const title = line(definitions.get(item.item_id)!.title, 120);
    const blocker = item.blocker ? ` (blocked: ${line(item.blocker, 120)})` : '';
    const text = `- ${item.item_id}: ${item.status} — ${title}${blocker}`;
    if (used + text.length + 1 > budget) break;
    items.push(text);
    used += text.length + 1;
    shown += 1;
  }
  if (shown < required.length)
    items.push(`- … ${required.length - shown} more required items (use the work tool to get them)`);
  return [...head, ...items, ...tail].join('\n');
}
