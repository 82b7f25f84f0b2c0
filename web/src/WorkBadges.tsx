/** Managed-work statuses and verdicts as badges: the translated word, the wire name in data-status. */
import { useMessages } from './i18n.ts';
import type { ContractProjection, WorkItemStatus } from './types.ts';
import type { Verdict } from '../../src/core/work/model.ts';

export function ItemBadge({ status }: { status: WorkItemStatus }) {
  const t = useMessages();
  return (
    <span className={`badge item-${status}`} data-status={status}>
      {t.itemStatuses[status]}
    </span>
  );
}

export function ContractBadge({ status }: { status: ContractProjection['status'] }) {
  const t = useMessages();
  return (
    <span className={`badge contract-${status}`} data-status={status}>
      {t.contractStatuses[status]}
    </span>
  );
}

export function VerdictBadge({ verdict }: { verdict: Verdict | null }) {
  const t = useMessages();
  return (
    <span className={`badge verdict-${verdict ?? 'none'}`} data-verdict={verdict ?? 'none'}>
      {verdict === null ? t.noVerdict : t.verdicts[verdict]}
    </span>
  );
}
