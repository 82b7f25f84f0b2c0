/**
 * One user action at a time: while an action runs, another start is ignored and `running` is
 * true, so its buttons can be disabled. A double click records one choice, not two, though the
 * second click's handler still sees the form as it was before the first.
 */
import { useCallback, useRef, useState } from 'react';

export function useOnce(): {
  readonly running: boolean;
  readonly once: (action: () => Promise<void>) => Promise<void>;
} {
  const [running, setRunning] = useState(false);
  const busy = useRef(false);
  const once = useCallback(async (action: () => Promise<void>) => {
    if (busy.current) return;
    busy.current = true;
    setRunning(true);
    try {
      await action();
    } finally {
      busy.current = false;
      setRunning(false);
    }
  }, []);
  return { running, once };
}
