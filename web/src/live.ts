/**
 * One session's work, live: the snapshot (GET …/work), then the session's event stream from the
 * snapshot's position. Each event reloads the snapshot, which the server rebuilds from the
 * ledger: the page never patches a projection itself, so it always shows what the ledger says.
 * Events that arrive while a reload runs are covered by it and skipped. When the stream breaks
 * off, the page waits (2, 4, 8 … at most 30 seconds), loads the snapshot again and follows from
 * its position: the spec's "reconnect must fetch the snapshot and rebuild the view".
 */
import { useCallback, useEffect, useState } from 'react';
import { BatonError } from '../../src/core/errors.ts';
import { ApiError, type Api } from './api.ts';
import type { WorkSnapshot } from './types.ts';

export type LiveState =
  | { readonly state: 'connecting' }
  | { readonly state: 'live' }
  | { readonly state: 'retrying'; readonly seconds: number }
  /** The session does not exist (or is another project's): nothing to follow. */
  | { readonly state: 'missing' };

const maxWaitSeconds = 30;

function isMissing(error: unknown): boolean {
  return (
    (error instanceof ApiError && error.status === 404) ||
    (error instanceof BatonError && error.code === 'not_found')
  );
}

function pause(seconds: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, seconds * 1000);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** The newer of two snapshots of one session: a late answer never takes the view back. */
function newer(old: WorkSnapshot | null, next: WorkSnapshot): WorkSnapshot {
  return old !== null && old.position > next.position ? old : next;
}

export function useLiveWork(api: Api, session_id: string) {
  const [snapshot, setSnapshot] = useState<WorkSnapshot | null>(null);
  const [failure, setFailure] = useState<unknown>(null);
  const [live, setLive] = useState<LiveState>({ state: 'connecting' });

  useEffect(() => {
    const stop = new AbortController();
    const { signal } = stop;
    setSnapshot(null);
    setFailure(null);
    void (async () => {
      let failures = 0;
      while (!signal.aborted) {
        setLive({ state: 'connecting' });
        try {
          let shown = await api.work(session_id);
          if (signal.aborted) return;
          setSnapshot((old) => newer(old, shown));
          setFailure(null);
          const events = api.followWork(session_id, shown.position, {
            signal,
            onOpen: () => {
              failures = 0;
              setLive({ state: 'live' });
            },
          });
          for await (const message of events) {
            if (message.position <= shown.position) continue;
            shown = await api.work(session_id);
            if (signal.aborted) return;
            setSnapshot((old) => newer(old, shown));
          }
        } catch (error) {
          if (signal.aborted) return;
          setFailure(error);
          if (isMissing(error)) {
            setLive({ state: 'missing' });
            return;
          }
          if (error instanceof ApiError && error.status === 401) return;
          failures += 1;
          const seconds = Math.min(maxWaitSeconds, 2 ** failures);
          setLive({ state: 'retrying', seconds });
          await pause(seconds, signal);
        }
      }
    })();
    return () => stop.abort();
  }, [api, session_id]);

  /** Show the snapshot a change answered (it is the work just after that change). */
  const show = useCallback((next: WorkSnapshot) => setSnapshot((old) => newer(old, next)), []);
  return { snapshot, failure, live, show };
}
