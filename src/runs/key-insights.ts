import { Injectable } from '@nestjs/common';
import { DurableConnection } from '../core/durable.connection';
import { WorkflowRegistry } from '../definition/workflow.registry';
import { ActivityStore } from '../store/activity.store';
import {
  assertValid,
  jsonProblem,
  keyProblem,
  onDuplicateProblem,
  optionNames,
  optionsProblems,
  problem,
  reuseProblem,
  storableTextProblem,
  unknownOptionProblems,
  uuidProblem,
} from '../domain/validation';
import { clampLimit, dateProblem, kindsProblem, limitProblem, workflowRefProblem } from '../domain/filters';
import { explainStart, type StartExplanation } from '../domain/keys.explain';
import type { OnDuplicate, ReusePolicy } from '../domain/keys.policy';
import { RunsStore } from '../store/runs.store';
import { DefinitionsStore, type DefinitionRow } from '../store/definitions.store';
import type { RunStatus } from '../domain/run-info';
import type { WorkflowRef } from '../definition/workflow-metadata';

/** One entry of the activity log. */
export interface ActivityEvent {
  id: string;
  kind: string;
  runId: string | null;
  at: Date;
  /** Always has `workflow` and `key` for key events; see docs/keys.md#watching-keys for each kind. */
  details: Record<string, unknown>;
}

/** A key of a workflow, with its holder. */
export interface KeyInfo {
  workflow: string;
  key: string;
  holderId: string | null;
  holderStatus: RunStatus | null;
  /** Runs started with this key (still stored). */
  runs: number;
  /** Starts that found the key held in the last 24 hours. */
  readdsLastDay: number;
  /** Pass it as `cursor` for the next page. */
  cursor: string;
}

/** A page of keys (`listKeysPage`). */
export interface KeysPage {
  keys: KeyInfo[];
  /**
   * Pass it as `cursor` for the next page; null when no more keys were found. Across workflows a
   * page can hold fewer keys than `limit`, or none, and still have one.
   */
  next: string | null;
}

/** An explanation from the definition the database holds (the CLI's `keys explain`). */
export interface StoredExplanation {
  workflow: string;
  key: string;
  /** What `explainStart` answers on a node that booted with {@link definition}. */
  explanation: StartExplanation;
  /** The definition read, as the last node that booted with it wrote it. */
  definition: DefinitionRow;
}

/** Filters of `listKeys`. */
export interface ListKeysOptions {
  /** Without it: the keys of every workflow, newest first (by their newest run). */
  workflow?: WorkflowRef;
  /** A part of the key. */
  search?: string;
  limit?: number;
  /** The `cursor` of the last key of the previous page. */
  cursor?: string;
}

/** Key statistics of a workflow, over the activity kept (`retention.activity`). */
export interface KeyStats {
  keysHeld: number;
  readdsByOutcome: Record<string, number>;
  droppedInputs: number;
  handoffs: number;
  readdsOverTime: { bucket: Date; count: number }[];
  topKeys: { key: string; readds: number }[];
}

/** Filters of `listActivity`. */
export interface ListActivityOptions {
  kinds?: string[];
  workflow?: WorkflowRef;
  key?: string;
  runId?: string;
  since?: Date;
  limit?: number;
  /** The `id` of the last event of the previous page: the events older than it. */
  cursor?: string;
}

const LIST_ACTIVITY_OPTION_NAMES = optionNames<ListActivityOptions>({
  kinds: true,
  workflow: true,
  key: true,
  runId: true,
  since: true,
  limit: true,
  cursor: true,
});
const LIST_KEYS_OPTION_NAMES = optionNames<ListKeysOptions>({ workflow: true, search: true, limit: true, cursor: true });

/** Reads of the activity log and of keys: `listActivity`, `listKeys`, `keyStats`. */
@Injectable()
export class KeyInsights {
  constructor(
    private readonly connection: DurableConnection,
    private readonly registry: WorkflowRegistry,
    private readonly activity: ActivityStore,
    private readonly runs: RunsStore,
    private readonly definitions: DefinitionsStore,
  ) {}

  /** What `start(workflow, input, options)` would do now and why, writing nothing (the holder is read without a lock). */
  async explainStart(ref: WorkflowRef, input: unknown, options: { key: string; onDuplicate?: OnDuplicate }): Promise<StartExplanation> {
    const def = this.registry.get(ref);
    const o = options ?? ({} as { key: string });
    assertValid(`explainStart ${def.name}`, [
      ...unknownOptionProblems(o, ['key', 'onDuplicate']),
      typeof o.key === 'string' ? keyProblem(o.key) : problem('key', o.key, 'isString', 'key must be a string: a start without a key always creates a run'),
      onDuplicateProblem(o.onDuplicate, def.reuse),
      jsonProblem(input, 'input'),
    ]);
    return this.explain(def.name, o.key, def.reuse, o.onDuplicate ?? def.onDuplicate);
  }

  /**
   * `explainStart` with the definition of `workflow` the database holds (table
   * `workflow_definitions`) instead of one registered here; undefined when it holds none. Stored
   * rules this version does not know (written by a newer one) are refused, not guessed at.
   */
  async explainStored(workflow: string, key: string, onDuplicate?: OnDuplicate): Promise<StoredExplanation | undefined> {
    const definition = await this.definitions.get(this.connection.db, workflow);
    if (!definition) return undefined;
    assertValid(`keys explain ${workflow}`, [
      reuseProblem(definition.reuse, 'definition.reuse') ?? onDuplicateProblem(definition.onDuplicate, definition.reuse, 'definition.onDuplicate'),
      keyProblem(key),
      onDuplicateProblem(onDuplicate, definition.reuse),
    ]);
    const explanation = await this.explain(workflow, key, definition.reuse, onDuplicate ?? definition.onDuplicate);
    return { workflow, key, explanation, definition };
  }

  /** The explanation of a start with these rules against the key's holder as it is now. */
  private async explain(workflow: string, key: string, reuse: ReusePolicy, onDuplicate: OnDuplicate): Promise<StartExplanation> {
    const holder = await this.runs.peekHolder(this.connection.db, workflow, key);
    return explainStart(
      reuse,
      onDuplicate,
      holder && { id: holder.id, status: holder.status, pickedUp: holder.picked_up, debouncing: holder.debouncing, waiterId: holder.waiter_id },
    );
  }

  /** Activity events, newest first. */
  async listActivity(options: ListActivityOptions | null = {}): Promise<ActivityEvent[]> {
    const o = options ?? {};
    assertValid('listActivity', [
      ...optionsProblems(o, 'options', LIST_ACTIVITY_OPTION_NAMES),
      kindsProblem(o.kinds),
      workflowRefProblem(o.workflow),
      keyProblem(o.key),
      uuidProblem(o.runId, 'runId'),
      dateProblem(o.since, 'since'),
      limitProblem(o.limit),
      o.cursor === undefined || o.cursor === null || (typeof o.cursor === 'string' && /^[0-9]{1,18}$/.test(o.cursor))
        ? undefined
        : problem('cursor', o.cursor, 'isActivityId', 'cursor must be the id of an activity event'),
    ]);
    const rows = await this.activity.list(this.connection.db, {
      kinds: o.kinds ?? undefined,
      workflow: this.registry.filterName(o.workflow),
      key: o.key ?? undefined,
      runId: o.runId ?? undefined,
      since: o.since ?? undefined,
      cursor: o.cursor ?? undefined,
      limit: clampLimit(o.limit, 100),
    });
    return rows.map((r) => ({ id: r.id, kind: r.kind, runId: r.run_id, at: r.at, details: r.details }));
  }

  /**
   * Keys of a workflow ordered by key, or of every workflow newest first; page with
   * `cursor: last.cursor`.
   */
  async listKeys(options: ListKeysOptions | null = {}): Promise<KeyInfo[]> {
    return (await this.keysPage(options)).keys;
  }

  /**
   * A page of {@link listKeys}, with `next`: the cursor to go on from, or null when no more keys
   * were found. A full page has its last key's cursor; a page across workflows that stopped short
   * (its windows filled by a few keys of many runs) has one too, even when it holds no key. `what`
   * names the call in a validation error.
   */
  async keysPage(options: ListKeysOptions | null = {}, what = 'listKeys'): Promise<KeysPage> {
    const o = options ?? {};
    assertValid(what, [
      ...optionsProblems(o, 'options', LIST_KEYS_OPTION_NAMES),
      workflowRefProblem(o.workflow),
      storableTextProblem(o.search, 'search'),
      limitProblem(o.limit),
      // with a workflow, the cursor is a key; across workflows, a run id
      o.workflow === undefined || o.workflow === null ? uuidProblem(o.cursor, 'cursor') : keyProblem(o.cursor, 'cursor'),
    ]);
    const workflow = this.registry.filterName(o.workflow) ?? null;
    const { rows, next } = await this.activity.keys(this.connection.db, workflow, o.search ?? null, o.cursor ?? null, clampLimit(o.limit, 50));
    const keys = rows.map((r) => ({
      workflow: workflow ?? r.workflow!,
      key: r.key,
      holderId: r.holder_id,
      holderStatus: r.holder_status as RunStatus | null,
      runs: r.runs,
      readdsLastDay: r.readds_last_day,
      cursor: workflow === null ? r.last_id! : r.key,
    }));
    return { keys, next };
  }

  /** The figures of `KeyStats` for one workflow. */
  async keyStats(options: { workflow: WorkflowRef } | null): Promise<KeyStats> {
    const o = options ?? ({} as { workflow: WorkflowRef });
    assertValid('keyStats', [...optionsProblems(o, 'options', ['workflow']), workflowRefProblem(o.workflow, true)]);
    const s = await this.activity.stats(this.connection.db, this.registry.nameOf(o.workflow));
    return {
      keysHeld: s.keys_held,
      readdsByOutcome: s.by_outcome,
      droppedInputs: s.dropped,
      handoffs: s.handoffs,
      readdsOverTime: s.over_time.map((b) => ({ bucket: new Date(b.bucket), count: b.count })),
      topKeys: s.top_keys,
    };
  }
}
