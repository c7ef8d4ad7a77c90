import { userInfo } from 'os';
import { RunNotFoundError, UsageError } from '../errors';
import { attemptLabel, isFinished, RUN_STATUSES, type RunInfo, type RunStatus } from '../domain/run-info';
import { checked, checkedOption, countOption, jsonArgument, KEY, NAME, REASON, RUN_ID, stringOption, WORKFLOW } from './args';
import type { Command, CommandContext, Output } from './command';
import { fields, table } from './table';
import type { SendEventOutcome } from '../runs/event-delivery';
import { dropReason } from '../domain/drop-reason';

/**
 * The step the run is at: its name, or its position when the definition is not registered here
 * (`#0` is the first); none for a completed run, which is past its last step.
 */
const stepOf = (run: RunInfo): string | null => (run.status === 'completed' ? null : (run.step ?? `#${run.stepIndex}`));

/** The runs as a table. */
function runsTable(runs: RunInfo[]): string {
  return table(
    ['ID', 'WORKFLOW', 'STATUS', 'KEY', 'STEP', 'ATTEMPT', 'CREATED'],
    runs.map((r) => [r.id, r.workflow, r.status, r.key, stepOf(r), r.attempt, r.createdAt]),
    'no runs',
  );
}

/** The run `id`, or `RunNotFoundError`. */
async function getRun(ctx: CommandContext, id: string): Promise<RunInfo> {
  const run = await (await ctx.connection.durable()).getRun(id);
  if (!run) throw new RunNotFoundError(id);
  return run;
}

/** What an action on a run prints: the run's status after it. */
async function after(ctx: CommandContext, id: string, done: string, extra: Record<string, unknown> = {}): Promise<Output> {
  const run = await getRun(ctx, id);
  return { json: { runId: id, ...extra, status: run.status }, text: `${done}: run ${id} is ${run.status}` };
}

/** Whether run `id`'s workflow deadline has passed, or `RunNotFoundError`. */
async function pastDeadline(ctx: CommandContext, id: string): Promise<boolean> {
  const { db, store } = await ctx.connection.overview();
  const past = await store.pastDeadline(db, id);
  if (past === undefined) throw new RunNotFoundError(id);
  return past;
}

/**
 * What sending the input or event `name` to a run prints: the engine's outcome and the run's status
 * after it (`extra` added to the JSON); a dropped one is refused (exit 1), its text saying why
 * (`dropReason`, told whether the run's workflow deadline has passed). `buffer`: an event was sent
 * with `--buffer` (an input is always kept).
 */
async function sent(
  ctx: CommandContext,
  id: string,
  what: 'input' | 'event',
  name: string,
  outcome: SendEventOutcome,
  { buffer = false, extra = {} }: { buffer?: boolean; extra?: Record<string, unknown> } = {},
): Promise<Output> {
  const run = await getRun(ctx, id);
  const done = `${what} "${name}" ${outcome}`;
  const json = { runId: id, name, outcome, ...extra, status: run.status };
  if (outcome !== 'dropped') return { json, text: `${done}: run ${id} is ${run.status}`, refused: false };
  const unbufferedEvent = what === 'event' && !buffer ? name : undefined;
  const why = dropReason({ status: run.status, pastDeadline: await pastDeadline(ctx, id), unbufferedEvent });
  return { json, text: `${done}: run ${id} ${why}`, refused: true };
}

/** `runs …`: list, show, cancel, retry, release the key of, and send input or events to runs. */
export const runsCommands: Command[] = [
  {
    name: 'runs list',
    args: [],
    options: {
      '--workflow <name>': 'only runs of this workflow',
      '--status <status>': `only runs in this status (${RUN_STATUSES.join(', ')})`,
      '--key <key>': 'only runs with this key',
      '--limit <n>': 'at most this many, newest first (default 50, at most 1000)',
    },
    summary: 'runs, newest first',
    async run(ctx) {
      const status = stringOption(ctx.parsed, 'status');
      if (status !== undefined && !RUN_STATUSES.includes(status as RunStatus)) {
        throw new UsageError(`--status must be one of ${RUN_STATUSES.join(', ')}, got ${JSON.stringify(status)}`);
      }
      const limit = countOption(ctx.parsed, 'limit', 1000);
      const workflow = checkedOption(ctx.parsed, 'workflow', WORKFLOW);
      const key = checkedOption(ctx.parsed, 'key', KEY);
      const runs = await (
        await ctx.connection.durable()
      ).listRuns({
        workflow,
        key,
        status: status as RunStatus | undefined,
        limit,
      });
      return { json: runs, text: runsTable(runs) };
    },
  },
  {
    name: 'runs get',
    args: ['<id>'],
    options: {},
    summary: 'one run: status, step, progress, input, context, result, error, key',
    async run(ctx) {
      const run = await getRun(ctx, checked(ctx.args[0], '<id>', RUN_ID));
      const text = fields([
        ['id', run.id],
        ['workflow', run.workflow],
        ['status', run.status],
        ['key', run.key],
        ['holds key', run.holdsKey],
        ['step', stepOf(run)],
        ['attempt', run.attempt],
        ['progress', run.progress],
        ['priority', run.priority],
        ['input', run.input],
        ['context', run.context],
        ['result', run.result],
        ['error', run.error],
        ['re-adds', run.readds],
        ['runs after', run.runsAfterId],
        ['flow', run.flowId],
        ['created', run.createdAt],
        ['started', run.startedAt],
        ['finished', run.finishedAt],
      ]);
      return { json: run, text };
    },
  },
  {
    name: 'runs history',
    args: ['<id>'],
    options: {},
    summary: 'every attempt of every step of a run, in the order they ended',
    async run(ctx) {
      const id = checked(ctx.args[0], '<id>', RUN_ID); // before connecting
      const attempts = await (await ctx.connection.durable()).getRunHistory(id);
      const text = table(
        ['STEP', 'ATTEMPT', 'STATUS', 'STARTED', 'FINISHED', 'NODE', 'ERROR'],
        attempts.map((a) => [
          attemptLabel(a),
          a.attempt,
          a.status,
          a.startedAt,
          a.finishedAt,
          a.nodeId,
          (a.error as { message?: unknown } | undefined)?.message ?? a.error,
        ]),
        'no step attempts',
      );
      return { json: attempts, text };
    },
  },
  {
    name: 'runs cancel',
    args: ['<id>'],
    options: { '--reason <text>': 'recorded as the cancel reason (1 to 1000 bytes)' },
    summary: 'cancels a run that is still going (a finished run is left as it is)',
    async run(ctx) {
      const id = checked(ctx.args[0], '<id>', RUN_ID);
      const reason = checkedOption(ctx.parsed, 'reason', REASON);
      const before = await getRun(ctx, id);
      await (await ctx.connection.durable()).cancel(id, { reason });
      const run = await getRun(ctx, id);
      // a finished run is left as it is (also one that finished between the two reads)
      const cancelled = !isFinished(before.status) && run.status === 'cancelled';
      const text = cancelled ? `cancelled: run ${id} is cancelled` : `not cancelled: run ${id} had already finished (${run.status}); it is left as it is`;
      return { json: { runId: id, status: run.status, cancelled }, text };
    },
  },
  {
    name: 'runs retry',
    args: ['<id>'],
    options: {},
    summary: 'resumes a failed run at its failed step, under its workflow’s key rules',
    async run(ctx) {
      const id = checked(ctx.args[0], '<id>', RUN_ID);
      await (await ctx.connection.durable()).retry(id);
      return after(ctx, id, 'retried');
    },
  },
  {
    name: 'runs release-key',
    args: ['<id>'],
    options: { '--by <who>': 'recorded in the key_released event (default cli:<user>)' },
    summary: 'lets a finished run’s key go, so the item can be processed again',
    async run(ctx) {
      const id = checked(ctx.args[0], '<id>', RUN_ID);
      const by = checkedOption(ctx.parsed, 'by', NAME) ?? `cli:${userInfo().username}`;
      await (await ctx.connection.durable()).releaseKey(id, { by });
      return after(ctx, id, 'key released', { releasedBy: by });
    },
  },
  {
    name: 'runs provide-input',
    args: ['<id>', '<name>', '<json>'],
    options: {},
    summary: 'provides the value a run waits for with ctx.waitForInput(name): delivered, kept or dropped (dropped exits 1)',
    async run(ctx) {
      const [id, name, json] = [checked(ctx.args[0], '<id>', RUN_ID), checked(ctx.args[1], '<name>', NAME), ctx.args[2]];
      const value = jsonArgument(json, '<json>');
      // as durable.provideInput does, with what the engine did with the value
      const outcome = await (await ctx.connection.events()).provideInput(id, name, value);
      return sent(ctx, id, 'input', name, outcome, { extra: { ignored: outcome === 'dropped' } });
    },
  },
  {
    name: 'runs send-event',
    args: ['<id>', '<name>', '[<json>]'],
    options: { '--buffer': 'keep the event for a later waitForEvent when the run is not waiting for it' },
    summary: 'sends an event to a run: delivered, kept or dropped (dropped exits 1)',
    async run(ctx) {
      const [id, name, json] = [checked(ctx.args[0], '<id>', RUN_ID), checked(ctx.args[1], '<name>', NAME), ctx.args[2]];
      const payload = json === undefined ? undefined : jsonArgument(json, '<json>');
      const buffer = ctx.parsed.options.has('buffer');
      const outcome = await (await ctx.connection.durable()).sendEvent(id, name, payload, { buffer });
      return sent(ctx, id, 'event', name, outcome, { buffer });
    },
  },
];
