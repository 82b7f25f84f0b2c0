/**
 * Handing work over and taking it on: the one-line handoff, commit, continue and ack. Each maps
 * its options onto registry operations and calls them through the transport; the rules
 * (evidence, receiver checks, compare-and-swap) stay in the app.
 */
import type { OperationInput } from '../../client/types.ts';
import type { Digest } from '../../core/canonical.ts';
import { dispositions } from '../../core/handoff/prepared.ts';
import { BatonError, isBatonError } from '../../core/errors.ts';
import type { JsonObject } from '../../core/json.ts';
import {
  list,
  oneOf,
  scopeHelp,
  scopedOptions,
  shellWord,
  text,
  transportHelp,
  UsageError,
  whole,
  type Command,
} from '../command.ts';
import { receiptSourceId, stableSourceId } from '../refs.ts';
import { lastSeen, recordSeen } from '../seen.ts';
import { readInput } from '../files.ts';
import * as render from '../render.ts';
import {
  attribution,
  attributionHelp,
  attributionOptions,
  currentWork,
  declared,
  saysTheSame,
  digestOption,
  selectionHelp,
  selectionOption,
} from './inputs.ts';

const handoff: Command = {
  positionals: true,
  summary: 'one-line handoff: prepare the current work and commit the next revision of the workstream',
  usage: `baton handoff "NEXT ACTION" [options]

  NEXT ACTION              the one next action for whoever continues (quote it)
  --objective TEXT         default: the workstream's current objective (its latest handoff's,
                           else its work contract's), else the next action itself
  --state TEXT             where the work stands, declared (repeatable)
  --omit TEXT              what is knowingly not included (repeatable)
  --disposition D          continue (default), blocked or complete
  --question, --option, --impact   with --disposition blocked: the decision a human must make
  --source-id ID           the boundary source; default derived from its content and the head
                           it is prepared on, so a retry reuses it instead of storing another
  --again                  publish it even when the latest revision already says exactly this
                           (otherwise that revision is printed and nothing is written)
  --no-commit              only prepare (handoff_current_work) and print the Prepared Handoff
${attributionHelp}
${scopeHelp}
${transportHelp}`,
  examples: [
    'baton handoff "Run the 100,000-row import again with the fix branch"',
    'baton handoff "Pick a retention period" --disposition blocked --question "Keep logs 30 or 90 days?" --option 30 --option 90 --impact "storage cost"',
  ],
  operations: ['prepare_context', 'handoff_current_work', 'commit_handoff'],
  fields: {
    objective: '--objective',
    current_state: '--state',
    omissions: '--omit',
    disposition: '--disposition',
    blocked: '--disposition blocked with --question, --option and --impact',
    'blocked.question': '--question',
    'blocked.options': '--option',
    'blocked.impact': '--impact',
    'next_action.text': 'the NEXT ACTION text',
    source_id: '--source-id',
  },
  options: {
    ...scopedOptions,
    ...attributionOptions,
    objective: { type: 'string' },
    state: { type: 'string', multiple: true },
    omit: { type: 'string', multiple: true },
    disposition: { type: 'string' },
    question: { type: 'string' },
    option: { type: 'string', multiple: true },
    impact: { type: 'string' },
    'source-id': { type: 'string' },
    'no-commit': { type: 'boolean' },
    again: { type: 'boolean' },
  },
  async run(context) {
    const values = context.values;
    const next = context.positionals.join(' ');
    if (next.trim() === '') throw new UsageError('say the next action: baton handoff "what to do next"');
    const disposition = oneOf(values, 'disposition', dispositions) ?? 'continue';
    const blockedGiven = ['question', 'option', 'impact'].some((name) => values[name] !== undefined);
    if (blockedGiven && disposition !== 'blocked')
      throw new UsageError('--question, --option and --impact go with --disposition blocked');
    const { scope_id } = await context.scope();
    const transport = await context.transport();
    const current = await currentWork(transport, scope_id);
    const objective = text(values, 'objective') ?? current.objective ?? next;
    const who = attribution(context);
    const boundary = {
      objective,
      current_state: declared(list(values, 'state')),
      disposition,
      next_action: { text: next, basis: 'declared' as const },
      omissions: list(values, 'omit'),
      ...(disposition === 'blocked'
        ? {
            blocked: {
              question: text(values, 'question') ?? '',
              options: list(values, 'option'),
              impact: text(values, 'impact') ?? '',
            },
          }
        : {}),
      ...(who ? { attribution: who } : {}),
    };
    const { head } = current;
    if (
      head !== null &&
      values.again !== true &&
      values['no-commit'] !== true &&
      saysTheSame(head.handoff, boundary)
    ) {
      // The same command run again after it committed (its answer lost, say): committing the
      // head's own handoff on its own base is the retry the ledger answers with that revision.
      const revision = await transport.invoke('commit_handoff', {
        scope_id,
        prepared: head.digest,
        expected_head: head.handoff.base_revision,
      });
      context.print({ prepared: null, revision, already_committed: true }, () =>
        [
          `Revision ${revision.revision} of ${revision.scope_id} already says exactly this: nothing new was written\n`,
          `  digest ${revision.prepared_digest}\n`,
          `  objective:   ${objective}\n`,
          `  next action: ${next}\n`,
          `  (--again publishes it as a new revision)\n`,
        ].join(''),
      );
      return;
    }
    const source_id =
      text(values, 'source-id') ??
      stableSourceId('handoff', { boundary, base_revision: head?.revision ?? 0 });
    const prepared = await transport.invoke('handoff_current_work', { scope_id, source_id, ...boundary });
    const base = prepared.prepared_handoff.base_revision;
    const retry = `baton commit --scope ${shellWord(scope_id)} --prepared ${prepared.digest} --expected-head ${base}`;
    if (values['no-commit'] === true) {
      context.print(prepared, () => `${render.prepared(prepared)}Commit it with: ${retry}\n`);
      return;
    }
    let committed;
    try {
      committed = await transport.invoke('commit_handoff', {
        scope_id,
        prepared: prepared.digest,
        expected_head: base,
      });
    } catch (error) {
      // With --json, stderr carries only the error envelope, and the envelope says what was
      // prepared: a script can retry or read the latest from it.
      if (context.values.json === true && error instanceof BatonError) {
        throw new BatonError(error.code, error.message, {
          ...error.data,
          prepared: prepared.digest,
          boundary_source_id: source_id,
          base_revision: base,
        });
      }
      context.io.err(
        `The handoff was prepared (${prepared.digest}, boundary source ${source_id}) but not committed.\n` +
          (isBatonError(error, 'revision_conflict')
            ? // Prepared on a revision that is no longer the head: it can never commit; read the new one.
              `Another handoff was committed meanwhile; this one was prepared on revision ${base}. ` +
              `Read the latest (baton continue --scope ${shellWord(scope_id)}), then hand off again.\n`
            : `Retry the same Prepared Handoff with: ${retry}\n`),
      );
      throw error;
    }
    context.print({ prepared, revision: committed }, () =>
      [
        render.revision(committed),
        `  objective:   ${objective}\n`,
        `  next action: ${next}\n`,
        `  boundary source ${source_id} at journal position ${prepared.boundary_receipt.position}\n`,
      ].join(''),
    );
  },
};

/**
 * The Prepared Handoff in what --prepared-file held: the body itself, or the answer of
 * handoff_current_work (`baton handoff --no-commit --json`), which carries it as
 * `prepared_handoff` beside its digest. A body has a `schema`; that answer has none.
 */
function preparedBody(value: unknown): JsonObject {
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && !('schema' in value)) {
    const inner = (value as { prepared_handoff?: unknown }).prepared_handoff;
    if (typeof inner === 'object' && inner !== null && !Array.isArray(inner)) return inner as JsonObject;
  }
  return value as JsonObject;
}

const commit: Command = {
  summary: 'publish a Prepared Handoff as the next revision if the head is still the expected one',
  usage: `baton commit (--prepared DIGEST | --prepared-file FILE) --expected-head N [options]

  --prepared DIGEST      a Prepared Handoff stored here, by digest
  --prepared-file FILE   a Prepared Handoff body as transported unchanged (JSON), or the
                         output of baton handoff --no-commit --json; - reads standard input
  --expected-head N      the head it was prepared on (its base_revision; 0 when none)
${scopeHelp}
${transportHelp}`,
  examples: ['baton commit --prepared sha256:3f1c… --expected-head 1'],
  operations: ['commit_handoff'],
  fields: { expected_head: '--expected-head', prepared: '--prepared' },
  options: {
    ...scopedOptions,
    prepared: { type: 'string' },
    'prepared-file': { type: 'string' },
    'expected-head': { type: 'string' },
  },
  async run(context) {
    const digest = digestOption(context, 'prepared');
    const file = text(context.values, 'prepared-file');
    if ((digest === undefined) === (file === undefined))
      throw new UsageError('give the handoff once: --prepared DIGEST or --prepared-file FILE');
    const expected_head = whole(context.values, 'expected-head');
    if (expected_head === undefined)
      throw new UsageError('--expected-head is required: the head you saw (the base_revision)');
    let prepared: Digest | JsonObject;
    if (digest !== undefined) prepared = digest;
    else {
      const source = await readInput(file!);
      try {
        prepared = preparedBody(JSON.parse(source));
      } catch (error) {
        throw new UsageError(`--prepared-file ${file}: ${(error as Error).message}`);
      }
    }
    const { scope_id } = await context.scope();
    const result = await (
      await context.transport()
    ).invoke('commit_handoff', { scope_id, prepared, expected_head });
    context.print(result, () => render.revision(result));
  },
};

const continueCommand: Command = {
  summary: 'resolve the latest (or a given) handoff to an exact one and check every citation',
  usage: `baton continue [--revision N | --prepared DIGEST] [options]

  Without --revision or --prepared, the latest committed revision.
${selectionHelp}
${scopeHelp}
${transportHelp}`,
  examples: ['baton continue', 'baton continue --revision 2 --json'],
  operations: ['continue_handoff'],
  options: { ...scopedOptions, revision: { type: 'string' }, prepared: { type: 'string' } },
  async run(context) {
    const selection = selectionOption(context) ?? 'latest';
    const { scope_id } = await context.scope();
    const transport = await context.transport();
    const result = await transport.invoke('continue_handoff', { scope_id, selection });
    if (result.selection.kind === 'exact') {
      await recordSeen(context.cwd, transport.where, scope_id, result.selection);
    }
    context.print(result, () => render.resolution(result));
  },
};

const ackStatuses = {
  accepted: 'accepted',
  'needs-clarification': 'needs_clarification',
  needs_clarification: 'needs_clarification',
  declined: 'declined',
} as const;

const ack: Command = {
  positionals: true,
  summary: 'acknowledge one exact handoff: accepted, needs-clarification or declined',
  usage: `baton ack (accepted | needs-clarification | declined) [options]

  The target is --revision/--prepared, else the revision baton continue last showed in this
  work tree, if it is still the latest (else refused). Without either, needs-clarification
  and declined take the latest right now (never "latest" itself), and accepted is refused:
  accepting takes what you inspected. Baton runs Continue again and checks the evidence.
  --confirm-workspace       you checked the live workspace
  --confirm-capability      you can do the work
  --confirm-authorization   you are authorized to do it
                            (accepted needs all three; they are observations, not access control)
  --reason TEXT             why: required for needs-clarification and declined
  --receiver LABEL          who acknowledges (attribution only)
  --source-id ID            the receipt source; default derived from the acknowledgement and
                            the receipt before it: the same command run again reuses it
${selectionHelp}
${scopeHelp}
${transportHelp}`,
  examples: [
    'baton ack accepted --revision 2 --confirm-workspace --confirm-capability --confirm-authorization',
    'baton ack needs-clarification --reason "The reproduction data is missing"',
  ],
  operations: ['continue_handoff', 'acknowledge_handoff'],
  fields: {
    'receiver_checks.live_workspace': '--confirm-workspace',
    'receiver_checks.capability': '--confirm-capability',
    'receiver_checks.authorization': '--confirm-authorization',
    reason: '--reason',
    receiver: '--receiver',
    source_id: '--source-id',
  },
  options: {
    ...scopedOptions,
    revision: { type: 'string' },
    prepared: { type: 'string' },
    'confirm-workspace': { type: 'boolean' },
    'confirm-capability': { type: 'boolean' },
    'confirm-authorization': { type: 'boolean' },
    reason: { type: 'string' },
    receiver: { type: 'string' },
    'source-id': { type: 'string' },
  },
  async run(context) {
    const [word, ...extra] = context.positionals;
    const status = word === undefined ? undefined : ackStatuses[word as keyof typeof ackStatuses];
    if (!status || extra.length > 0) {
      throw new UsageError(
        word === undefined
          ? 'say how you take it: baton ack accepted | needs-clarification | declined'
          : `${JSON.stringify(context.positionals.join(' '))} is not accepted, needs-clarification or declined`,
      );
    }
    const { scope_id } = await context.scope();
    const transport = await context.transport();
    let target = selectionOption(context);
    if (!target) {
      const latest = await transport.invoke('continue_handoff', { scope_id, selection: 'latest' });
      const seen = await lastSeen(context.cwd, transport.where, scope_id);
      if (
        seen !== undefined &&
        latest.selection.kind === 'exact' &&
        (seen.revision !== latest.selection.revision || seen.digest !== latest.selection.digest)
      ) {
        // What the receiver read is not what "latest" is now: no choice binds until they read it.
        throw new BatonError(
          'precondition_failed',
          `the latest handoff is revision ${latest.selection.revision}, but baton continue last showed you revision ${seen.revision}: ` +
            `read the latest with baton continue, or pass --revision ${seen.revision} to answer the one you read`,
          { latest_revision: latest.selection.revision, seen_revision: seen.revision },
        );
      }
      if (status === 'accepted' && seen === undefined && latest.selection.kind === 'exact') {
        // Taking work on binds to what was inspected: the latest now may be what nobody read.
        throw new BatonError(
          'precondition_failed',
          'accepting takes the exact handoff you inspected: read it with baton continue, or pass the ' +
            `--revision you read (the latest is revision ${latest.selection.revision})`,
          { latest_revision: latest.selection.revision },
        );
      }
      target =
        latest.selection.kind === 'exact'
          ? { exact: latest.selection.revision }
          : { prepared: latest.selection.digest };
      if (context.values.json !== true && 'exact' in target && seen === undefined) {
        context.io.err(
          `note: acknowledging revision ${target.exact}, the latest right now; to acknowledge exactly what ` +
            'you inspected, pass the --revision that baton continue showed\n',
        );
      }
    }
    const confirmed = (name: string) => (context.values[name] === true ? 'confirmed' : 'not_confirmed');
    const reason = text(context.values, 'reason');
    const receiver = text(context.values, 'receiver');
    const fields = {
      target,
      status,
      receiver_checks: {
        live_workspace: confirmed('confirm-workspace'),
        capability: confirmed('confirm-capability'),
        authorization: confirmed('confirm-authorization'),
      },
      ...(reason === undefined ? {} : { reason }),
      ...(receiver === undefined ? {} : { receiver }),
    } satisfies Omit<OperationInput<'acknowledge_handoff'>, 'scope_id' | 'source_id'>;
    const receipts = async () =>
      (await transport.invoke('get_work_continuity', { scope_id })).timeline
        .filter((event) => event.kind === 'handoff-receipt')
        .map((event) => event.source_ref.source_id);
    const source_id = text(context.values, 'source-id') ?? receiptSourceId(fields, await receipts());
    const result = await transport.invoke('acknowledge_handoff', { scope_id, source_id, ...fields });
    context.print(result, () => render.acknowledged(result));
  },
};

export const handoffCommands: Record<string, Command> = {
  handoff,
  commit,
  continue: continueCommand,
  ack,
};
