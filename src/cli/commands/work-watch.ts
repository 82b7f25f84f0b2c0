/**
 * `baton work watch <session>`: a session's work events as they happen, one line each (or one
 * JSON object per line with --json), from the start or after a position, until Ctrl-C or
 * --count events. On a server it reads the event stream through the typed client and, when the
 * stream breaks off after it was open, reconnects after the last position it printed (waiting
 * longer after each failure, up to 15 s), so no event is skipped or printed twice. On the local
 * store it follows the ledger directly and reads again every second, which catches what other
 * processes (a `baton serve` on the same file) commit.
 */
import { followWorkEvents } from '../../app/work.ts';
import { createClient } from '../../client/index.ts';
import { isBatonError } from '../../core/errors.ts';
import { sessionIdSchema } from '../../core/ledger/names.ts';
import { parseRecord } from '../../core/records.ts';
import { liveMessage, type WorkEventMessage } from '../../core/work/live.ts';
import { transportHelp, transportOptions, UsageError, whole, type Command } from '../command.ts';
import { appDeps, configHelp, configOption } from '../config.ts';
import type { Context } from '../context.ts';
import { workEventLine } from '../render-work.ts';

/** How often the local follower reads again without a notification (other processes' commits). */
export const localCatchUpMs = 1_000;
/** Waits before reconnecting to a server: doubled after each failure, at most the last. */
const reconnectDelaysMs = [500, 1_000, 2_000, 4_000, 8_000, 15_000];

/** Aborts on the first SIGINT or SIGTERM; the returned function stops listening. */
function abortOnSignal(controller: AbortController): () => void {
  const signals = ['SIGINT', 'SIGTERM'] as const;
  const stop = () => {
    for (const signal of signals) process.off(signal, interrupted);
  };
  function interrupted(): void {
    stop();
    controller.abort();
  }
  for (const signal of signals) process.once(signal, interrupted);
  return stop;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done);
  });
}

/**
 * Follow a server's stream from `after`, reconnecting when it breaks once it was open. A
 * refusal (no such session, a bad token, too many streams) or a server that cannot be reached
 * at the start ends the command with its error.
 */
async function* fromServer(
  context: Context,
  server: { url: string; token: string },
  session_id: string,
  after: number,
  signal: AbortSignal,
): AsyncGenerator<WorkEventMessage, void, undefined> {
  const client = createClient({ baseUrl: server.url, token: server.token });
  let last = after;
  let opened = false;
  let failures = 0;
  for (;;) {
    try {
      const events = client.workEvents(
        { session_id, after: last },
        {
          signal,
          onOpen: () => {
            if (opened && failures > 0) context.io.err(`resumed after position ${last}\n`);
            opened = true;
            failures = 0;
          },
        },
      );
      for await (const message of events) {
        yield message;
        last = message.position;
      }
      return;
    } catch (error) {
      if (signal.aborted) return;
      if (!opened || !isBatonError(error) || error.code !== 'unavailable') throw error;
      const wait = reconnectDelaysMs[Math.min(failures, reconnectDelaysMs.length - 1)]!;
      failures += 1;
      context.io.err(`${error.message}: reconnecting in ${wait / 1000} s (Ctrl-C stops)\n`);
      await sleep(wait, signal);
      if (signal.aborted) return;
    }
  }
}

async function* fromLocal(
  context: Context,
  session_id: string,
  after: number,
  signal: AbortSignal,
): AsyncGenerator<WorkEventMessage, void, undefined> {
  const deps = await appDeps(context);
  const entries = await followWorkEvents(deps, await context.project(), session_id, after, {
    signal,
    catchUpMs: localCatchUpMs,
    holdProcess: true,
  });
  for await (const entry of entries) yield liveMessage(entry);
}

export const watch: Command = {
  positionals: true,
  summary: "a session's work events as they happen, one line each, until Ctrl-C (or --count events)",
  usage: `baton work watch <session> [--after N] [--count N] [--json] [options]

  SESSION               the session id
  --after N             start after this ledger position (a snapshot's position, or the last
                        one printed); default 0: every work event so far, then each new one
  --count N             stop after N events: --count 1 waits for the next one
  --json                one JSON object per line: {name, position, recorded_at, event}, the
                        stored baton.work-event/v1 exactly (the typed client's WorkEventMessage)

  Each line: position, time recorded, event name, what changed, and who changed it. Ctrl-C
  ends it (exit 0). On a server a broken stream is reconnected after the last position
  printed; on the local database new events show within a second, also those that another
  process (a baton serve on the same file) writes.
${configHelp}
${transportHelp}`,
  examples: [
    'baton work watch fix-login',
    'baton work watch fix-login --after 12 --count 1     # wait for the next change',
    'baton work watch fix-login --json --server http://127.0.0.1:4680 --token "$BATON_TOKEN"',
  ],
  options: {
    ...transportOptions,
    ...configOption,
    after: { type: 'string' },
    count: { type: 'string' },
  },
  async run(context) {
    if (context.positionals.length !== 1) {
      throw new UsageError(`give SESSION${context.positionals.length > 1 ? ', nothing more' : ''}`);
    }
    const session_id = parseRecord(sessionIdSchema, context.positionals[0], 'session_id');
    const after = whole(context.values, 'after') ?? 0;
    const count = whole(context.values, 'count', { min: 1 });
    const json = context.values.json === true;
    const stopping = new AbortController();
    const stopListening = abortOnSignal(stopping);
    const server = context.server();
    const events =
      server === undefined
        ? fromLocal(context, session_id, after, stopping.signal)
        : fromServer(context, server, session_id, after, stopping.signal);
    let printed = 0;
    try {
      for await (const message of events) {
        context.io.out(json ? `${JSON.stringify(message)}\n` : workEventLine(message));
        printed += 1;
        // Waits for a slow reader, and stops when the output is gone (| head closed the pipe).
        if (context.io.flushed !== undefined && !(await context.io.flushed())) break;
        if (count !== undefined && printed >= count) break;
      }
    } finally {
      stopListening();
      stopping.abort();
    }
  },
};
