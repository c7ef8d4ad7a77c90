import { UnknownWorkflowError, UsageError } from '../errors';
import { GOING_STATUSES } from '../domain/run-info';
import { concurrentIndexStatements, migrateConcurrently, pendingMigrations, runMigrations } from '../store/migrator';
import type { StatusCount } from '../store/overview.store';
import type { ActivityKind } from '../store/activity.store';
import { checked, checkedOption, countOption, KEY, RUN_ID, stringOption, WORKFLOW } from './args';
import { keysExplainCommand } from './keys-explain.command';
import type { Command, CommandContext } from './command';
import { table } from './table';

/** The kinds of event the activity log holds (every one: the type makes a new kind a compile error here). */
const ACTIVITY_KINDS: Record<ActivityKind, true> = {
  key_duplicate: true,
  key_handed_off: true,
  key_released: true,
  key_retaken: true,
  dashboard_action: true,
};

/** The window of "finished lately" in `status` and `workflows list`. */
const RECENT_MS = 3_600_000;

/** Counts as `{ workflow: { status: count } }`. */
function byWorkflow(...lists: StatusCount[][]): Map<string, Record<string, number>> {
  const out = new Map<string, Record<string, number>>();
  for (const c of lists.flat()) out.set(c.workflow, { ...out.get(c.workflow), [c.status]: c.count });
  return out;
}

/** Going runs and runs finished in the last hour, per workflow and status. */
async function counts(ctx: CommandContext) {
  const { db, store } = await ctx.connection.overview();
  const [going, finished] = await Promise.all([store.going(db), store.finished(db, RECENT_MS)]);
  return { going, finished };
}

/**
 * A count table: one row per workflow, a column per going status, one per final status seen in
 * the last hour, then the `extra` columns.
 */
function countsTable(
  counts: Map<string, Record<string, number>>,
  finished: StatusCount[],
  extra: { column: string; of: (workflow: string) => unknown }[] = [],
): string {
  const finals = [...new Set(finished.map((c) => c.status))].sort();
  const statuses = [...GOING_STATUSES, ...finals];
  const rows = [...counts].map(([workflow, n]) => [workflow, ...statuses.map((st) => n[st] ?? 0), ...extra.map((e) => e.of(workflow))]);
  const columns = [
    'WORKFLOW',
    ...GOING_STATUSES.map((st) => st.toUpperCase()),
    ...finals.map((st) => `${st.toUpperCase()} (1H)`),
    ...extra.map((e) => e.column),
  ];
  return table(columns, rows, 'no runs going or finished in the last hour');
}

/**
 * `workflows pause|resume <name>`: on every node, from its next claim on. The CLI has no
 * definitions: a name the database knows nothing of (no run, no schedule, no definition written by
 * an app node, never paused or resumed) is refused as unknown rather than paused blindly (a misspelt name
 * would pause nothing).
 */
const pauseCommand = (verb: 'pause' | 'resume'): Command => ({
  name: `workflows ${verb}`,
  args: ['<name>'],
  options: {},
  summary:
    verb === 'pause'
      ? "stops claiming a workflow's runs on every node (running steps finish; pending runs wait)"
      : "claims a paused workflow's runs again on every node",
  async run(ctx) {
    const name = checked(ctx.args[0], '<name>', WORKFLOW);
    const durable = await ctx.connection.durable();
    const { db, definitions } = await ctx.connection.overview();
    const [runs, schedules, controlled, definition] = await Promise.all([
      durable.listRuns({ workflow: name, limit: 1 }),
      durable.listSchedules(),
      (await ctx.connection.controls()).controlled(),
      definitions.get(db, name),
    ]);
    if (runs.length === 0 && !schedules.some((s) => s.workflow === name) && !controlled.has(name) && !definition) {
      throw new UnknownWorkflowError(
        name,
        undefined,
        `workflows ${verb}: schema ${ctx.connection.target.schema} has no run, schedule or definition of workflow "${name}"`,
      );
    }
    await (verb === 'pause' ? durable.pause(name) : durable.resume(name));
    const json = { workflow: name, paused: verb === 'pause' };
    return { json, text: `${name}: ${verb === 'pause' ? 'paused (its runs are not claimed until resumed)' : 'resumed'}` };
  },
});

/** `status`, `workflows …`, `keys list`, `keys explain`, `activity` and `migrate`. */
export const overviewCommands: Command[] = [
  {
    name: 'status',
    args: [],
    options: { '--node-timeout <duration>': "a node heard from within this is alive (default 30s, the module's default: give your app's nodeTimeout)" },
    summary: 'runs going per workflow and status, runs finished in the last hour, the backlog and the nodes',
    async run(ctx) {
      const { going, finished } = await counts(ctx);
      const { db, runs } = await ctx.connection.overview();
      const [backlog, nodes] = await Promise.all([runs.backlog(db), (await ctx.connection.durable()).listNodes()]);
      const json = {
        schema: ctx.connection.target.schema,
        going,
        finishedLastHour: finished,
        backlog: { due: backlog.pending, lagMs: Math.round(backlog.lagMs) },
        nodes,
      };
      const text = [
        `schema ${json.schema}: ${backlog.pending} run(s) due, the oldest waiting ${json.backlog.lagMs} ms`,
        '',
        countsTable(byWorkflow(going, finished), finished),
        '',
        table(
          ['NODE', 'ALIVE', 'RUNNING', 'STARTED', 'LAST SEEN'],
          nodes.map((n) => [n.nodeId, n.alive ? 'yes' : 'no', n.running, n.startedAt, n.lastSeenAt]),
          'no nodes',
        ),
      ].join('\n');
      return { json, text };
    },
  },
  {
    name: 'workflows list',
    args: [],
    options: {},
    summary: 'workflows with runs going or finished in the last hour, a schedule, paused, or a definition written by an app node (with its key rules)',
    async run(ctx) {
      const { going, finished } = await counts(ctx);
      const { db, definitions } = await ctx.connection.overview();
      const [schedules, paused, defined] = await Promise.all([
        (await ctx.connection.durable()).listSchedules(),
        (await ctx.connection.controls()).paused(),
        definitions.list(db),
      ]);
      const names = byWorkflow(going, finished);
      const definitionOf = new Map(defined.map((d) => [d.workflow, d]));
      for (const w of [...schedules.map((s) => s.workflow), ...paused, ...definitionOf.keys()]) if (!names.has(w)) names.set(w, {});
      const scheduleNames = (workflow: string) => schedules.filter((sc) => sc.workflow === workflow).map((sc) => sc.name);
      const json = [...names].map(([workflow, n]) => ({
        workflow,
        counts: n,
        schedules: scheduleNames(workflow),
        paused: paused.has(workflow),
        definition: definitionOf.get(workflow) ?? null,
      }));
      const text = countsTable(names, finished, [
        { column: 'SCHEDULES', of: (w) => scheduleNames(w).join(', ') },
        { column: 'PAUSED', of: (w) => (paused.has(w) ? 'yes' : '') },
        { column: 'REUSE', of: (w) => definitionOf.get(w)?.reuse },
        { column: 'ON DUPLICATE', of: (w) => definitionOf.get(w)?.onDuplicate },
      ]);
      return { json, text: json.length ? text : 'no workflows with runs, schedules or definitions' };
    },
  },
  pauseCommand('pause'),
  pauseCommand('resume'),
  {
    name: 'keys list',
    args: [],
    options: {
      '--workflow <name>': 'only keys of this workflow (default: every workflow, newest first)',
      '--search <text>': 'only keys containing this text',
      '--limit <n>': 'at most this many (default 50, at most 1000)',
      '--cursor <cursor>': 'the page after this cursor, as the line "older keys: --cursor …" (--json: next) of the page before gives it',
    },
    summary: 'keys with their holder, runs and re-adds in the last day',
    async run(ctx) {
      const limit = countOption(ctx.parsed, 'limit', 1000);
      const workflow = checkedOption(ctx.parsed, 'workflow', WORKFLOW);
      // with a workflow, the cursor is a key; across workflows, a run id
      const cursor = checkedOption(ctx.parsed, 'cursor', workflow === undefined ? RUN_ID : KEY);
      const { keys, next } = await (await ctx.connection.insights()).keysPage({ workflow, search: stringOption(ctx.parsed, 'search'), limit, cursor });
      const text = table(
        ['WORKFLOW', 'KEY', 'HOLDER', 'HOLDER STATUS', 'RUNS', 'RE-ADDS (1D)'],
        keys.map((k) => [k.workflow, k.key, k.holderId, k.holderStatus, k.runs, k.readdsLastDay]),
        'no keys',
      );
      // a page across workflows can stop short of --limit (or hold no key) with older keys beyond:
      // next, not the last key's cursor, is where the next page starts
      return { json: { keys, next }, text: next === null ? text : `${text}\nolder keys: --cursor ${next}` };
    },
  },
  keysExplainCommand,
  {
    name: 'activity',
    args: [],
    options: {
      '--key <key>': 'only events of this key',
      '--kind <kind>': `only events of this kind (${Object.keys(ACTIVITY_KINDS).join(', ')})`,
      '--workflow <name>': 'only events of this workflow',
      '--run <id>': 'only events of this run',
      '--limit <n>': 'at most this many, newest first (default 100, at most 1000)',
    },
    summary: 'the activity log (key duplicates, hand-offs, releases, retakes), newest first',
    async run(ctx) {
      const kind = stringOption(ctx.parsed, 'kind');
      if (kind !== undefined && !Object.hasOwn(ACTIVITY_KINDS, kind)) {
        throw new UsageError(`--kind must be one of ${Object.keys(ACTIVITY_KINDS).join(', ')}, got ${JSON.stringify(kind)}`);
      }
      const limit = countOption(ctx.parsed, 'limit', 1000);
      const filter = {
        key: checkedOption(ctx.parsed, 'key', KEY),
        kinds: kind === undefined ? undefined : [kind],
        workflow: checkedOption(ctx.parsed, 'workflow', WORKFLOW),
        runId: checkedOption(ctx.parsed, 'run', RUN_ID),
        limit,
      };
      const events = await (await ctx.connection.durable()).listActivity(filter);
      const text = table(
        ['AT', 'KIND', 'RUN', 'WORKFLOW', 'KEY', 'DETAILS'],
        events.map((e) => {
          const { workflow, key, ...rest } = e.details;
          return [e.at, e.kind, e.runId, workflow, key, rest];
        }),
        'no activity',
      );
      return { json: events, text };
    },
  },
  {
    name: 'migrate',
    args: [],
    options: {
      '--print-sql': 'print the statements of the pending migrations instead of applying them (writes nothing)',
      '--concurrently':
        'apply the migrations one by one, building each one’s indexes first with CREATE INDEX CONCURRENTLY, so that writes go on while they build (for big tables)',
    },
    summary: 'applies the module’s pending migrations to the schema',
    async run(ctx) {
      const { schema, transactionPooler } = ctx.connection.target;
      const dataSource = await ctx.connection.dataSource();
      const concurrently = ctx.parsed.options.has('concurrently');
      if (ctx.parsed.options.has('print-sql')) {
        const pending = await pendingMigrations(dataSource, schema);
        const first = concurrently ? concurrentIndexStatements(pending).map((c) => c.statement) : [];
        const blocks = [
          ...(first.length ? [`-- built first, each outside a transaction\n${first.map((st) => `${st};`).join('\n\n')}`] : []),
          ...pending.map((m) => `-- ${m.name}\n${m.statements.map((st) => `${st};`).join('\n\n')}`),
        ];
        const text = pending.length ? blocks.join('\n\n') : `-- schema ${schema} is up to date`;
        return { json: { schema, ...(concurrently ? { concurrently: first } : {}), pending }, text };
      }
      const { built, applied } = concurrently
        ? await migrateConcurrently(dataSource, schema, { transactionPooler })
        : { built: [], applied: await runMigrations(dataSource, schema) };
      const text = [
        ...(built.length ? [`built concurrently in ${schema}: ${built.join(', ')}`] : []),
        applied.length ? `applied to ${schema}: ${applied.join(', ')}` : `schema ${schema} is up to date`,
      ].join('\n');
      return { json: { schema, ...(concurrently ? { builtConcurrently: built } : {}), applied }, text };
    },
  },
];
