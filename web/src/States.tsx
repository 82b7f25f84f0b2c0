/** Transfer and outcome states as badges: the translated word with the wire name beside it. */
import { useMessages } from './i18n.ts';
import type { WorkContinuity } from './types.ts';

export function TransferBadge({ state }: { state: WorkContinuity['transfer_state'] }) {
  const t = useMessages();
  return (
    <span className={`badge transfer-${state}`} data-state={state}>
      {t.transferStates[state]}
    </span>
  );
}

export function OutcomeBadge({ state }: { state: WorkContinuity['outcome_state'] }) {
  const t = useMessages();
  return (
    <span className={`badge outcome-${state}`} data-state={state}>
      {t.outcomeStates[state]}
    </span>
  );
}
