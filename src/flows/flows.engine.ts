import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { FlowExistsError, KeyContendedError, RunNotFoundError } from '../errors';
import { MAX_HANDOFFS } from '../domain/keys.policy';
import { isFinished, type RunStatus } from '../domain/run-info';
import { uuidv7 } from '../domain/uuid';
import { callOptions } from '../domain/call-options';
import { assertValid, nameProblem, optionNames, optionsProblems, problem, Problems } from '../domain/validation';
import { WorkflowRegistry } from '../definition/workflow.registry';
import { DurableConnection } from '../core/durable.connection';
import { inSavepoint, type Queryable } from '../store/db';
import { inTurn } from '../store/tx-turns';
import { onCommit, type CallerTx } from '../store/caller-tx';
import { ActivityStore } from '../store/activity.store';
import { FlowsStore } from '../store/flows.store';
import { depOutcome, type NewFlowEdge, type NewFlowNode } from '../store/flows.types';
import { isKeyConflict, RunsStore } from '../store/runs.store';
import { emitKeyHandoffs, emitRunFinished, traceCarrier } from '../observe/telemetry';
import { copiedOptions, FlowBuilder, type FlowOptions } from './flow.builder';
import { FlowGraph } from './flow.graph';
import { FlowKeys } from './flow.keys';
import { findCycle, planFlow, type PlannedNode } from './flow.plan';
import { rerunNodes, RERUN_FLOW_OPTION_NAMES, type RerunFlowOptions } from './flow.rerun';

/** What `startFlow` resolves. */
export interface StartFlowResult {
  flowId: string;
  /** Node name → run id, for the nodes this call inserted (or ran again: `rerunFlow`). */
  runIds: Record<string, string>;
}

/** Options of `appendFlow`. */
export interface AppendFlowOptions {
  /** Deps must name nodes that exist (in the flow or this append); default true. */
  checkDeps?: boolean;
}

/** The option names of `appendFlow` and of `startFlow`. */
const APPEND_OPTION_NAMES = optionNames<AppendFlowOptions>({ checkDeps: true });
const START_FLOW_OPTION_NAMES = optionNames<{ manager?: EntityManager }>({ manager: true });

/**
 * DAG flows: validates and inserts flows (one transaction, or the caller's), with their nodes'
 * keys ({@link FlowKeys}); appends to them, runs part of them again (`rerunFlow`) and draws them.
 * Dependency resolution runs in the database (`durable_flow_resolve`, flows migration); repairs
 * and `afterCancelled` hooks are {@link FlowMaintenance}'s.
 */
@Injectable()
export class FlowsEngine {
  private readonly keys: FlowKeys;

  constructor(
    private readonly connection: DurableConnection,
    private readonly registry: WorkflowRegistry,
    private readonly store: FlowsStore,
    runs: RunsStore,
    activity: ActivityStore,
  ) {
    this.keys = new FlowKeys(registry, runs, activity);
  }

  /** A new builder (its options are checked by `startFlow`). */
  flow(options?: FlowOptions | null): FlowBuilder {
    return new FlowBuilder(copiedOptions(options));
  }

  /** A builder bound to existing flow `flowId`; `startFlow` on it appends its nodes. */
  async append(flowId: string, options?: AppendFlowOptions | null): Promise<FlowBuilder> {
    if (nameProblem(flowId)) throw new RunNotFoundError(String(flowId));
    const checkDeps = callOptions(`appendFlow ${flowId}`, options, APPEND_OPTION_NAMES).checkDeps ?? true;
    assertValid(`appendFlow ${flowId}`, [
      typeof checkDeps === 'boolean' ? undefined : problem('checkDeps', checkDeps, 'isBoolean', 'checkDeps must be a boolean'),
    ]);
    const { db } = this.connection;
    const row = await this.store.getFlow(db, flowId);
    if (!row) throw new RunNotFoundError(flowId);
    return new FlowBuilder(
      {
        id: row.id,
        name: row.name ?? undefined,
        ignoreCancelled: row.ignore_cancelled,
        ignoreFailed: row.ignore_failed,
        ignoreDeleted: row.ignore_deleted,
      },
      { flowId: row.id, flowName: row.name, checkDeps },
    );
  }

  /** Validates the whole graph, then inserts every node and edge in one transaction. */
  async start(builder: FlowBuilder, options: { manager?: EntityManager } = {}): Promise<StartFlowResult> {
    assertValid('startFlow', optionsProblems(options, 'options', START_FLOW_OPTION_NAMES));
    const planned = planFlow(builder, this.registry);
    const joined = await this.connection.join(options?.manager, 'startFlow');
    // a savepoint in the caller's transaction where a refusal can follow writes or locks: keyed
    // nodes (an insert may conflict), an append (it locks the flow and its nodes, then checks them;
    // a refused one lets them go at once). A new flow without keys is refused before it writes.
    const savepoint = builder.appendTo !== undefined || planned.some((n) => n.key !== null);
    const write = () => this.keyedTransaction(joined, (q, handedOff, cancelled) => this.insert(q, builder, planned, handedOff, cancelled), savepoint);
    // calls made at once on one caller's transaction take turns (its savepoints are its connection's)
    return joined ? inTurn(joined, write) : write();
  }

  /**
   * Runs node `from` of flow `flowId` and every node downstream of it again, as fresh runs; the
   * other nodes keep their recorded results (see docs/flows.md, "Running part of a flow again").
   * `tx` (internal): a caller's transaction to do it in (in a savepoint of it), counted once it committed.
   */
  async rerun(flowId: string, options: RerunFlowOptions, tx?: CallerTx): Promise<StartFlowResult> {
    if (nameProblem(flowId)) throw new RunNotFoundError(String(flowId));
    const { from } = callOptions(`rerunFlow ${flowId}`, options, RERUN_FLOW_OPTION_NAMES);
    assertValid(`rerunFlow ${flowId}`, [nameProblem(from, 'from')]);
    const runIds = await this.keyedTransaction(
      tx?.q,
      (q, handedOff, cancelled) => rerunNodes(q, this.store, this.keys, flowId, from, handedOff, cancelled),
      true,
      tx,
    );
    return { flowId, runIds };
  }

  /**
   * Runs `fn` in a savepoint of the caller's transaction (in it without one when `savepoint` is
   * false: nothing `fn` writes can conflict), or in a transaction of its own, tried again
   * (at most MAX_HANDOFFS times) when a start took one of the nodes' keys between the check and the
   * insert: the failed insert is undone, and the caller's transaction stays usable. The keys `fn`
   * handed over (their workflows, in `handedOff`) and the nodes it cancelled (behind a dep that had
   * failed, been cancelled or deleted; in `cancelled`) are counted once it has succeeded: after the
   * commit of a transaction of its own, or of `tx` (`joined` is then its transaction), when the call
   * returns in another caller's.
   */
  private async keyedTransaction<T>(
    joined: Queryable | undefined,
    fn: (q: Queryable, handedOff: string[], cancelled: string[]) => Promise<T>,
    savepoint = true,
    tx?: CallerTx,
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const handedOff: string[] = [];
      const cancelled: string[] = [];
      try {
        const write = (q: Queryable) => fn(q, handedOff, cancelled);
        const out = await (joined ? (savepoint ? inSavepoint(joined, write) : write(joined)) : this.connection.db.tx(write));
        onCommit(tx, () => {
          for (const workflow of handedOff) emitKeyHandoffs(workflow);
          for (const workflow of cancelled) emitRunFinished(workflow, 'cancelled');
        });
        return out;
      } catch (err) {
        if (!isKeyConflict(err)) throw err;
        if (attempt >= MAX_HANDOFFS) throw new KeyContendedError('a start took the key of a flow node meanwhile; try again');
      }
    }
  }

  /** The graph of a started flow, with each node's run id and status. */
  async graph(flowId: string): Promise<FlowGraph> {
    // an id no flow can have (empty, too long, a NUL) is not sent to the database
    if (nameProblem(flowId)) throw new RunNotFoundError(String(flowId));
    const { db } = this.connection;
    const [flow, rows] = await Promise.all([this.store.getFlow(db, flowId), this.store.graph(db, flowId)]);
    if (!flow && rows.length === 0) throw new RunNotFoundError(flowId);
    return new FlowGraph(
      rows.map((r) => ({ name: r.name, workflow: r.workflow, deps: r.deps ?? [], runId: r.id, status: r.status })),
      flowId,
      flow?.name ?? null,
    );
  }

  private async insert(q: Queryable, builder: FlowBuilder, planned: PlannedNode[], handedOff: string[], cancelled: string[]): Promise<StartFlowResult> {
    const { store } = this;
    const append = builder.appendTo;
    let flowId: string;
    let flowName: string | null;
    let flowIgnore: { cancelled: boolean; failed: boolean; deleted: boolean };
    const inBatch = new Set(planned.map((n) => n.name));
    const existing = new Map<string, RunStatus>(); // name → status, for external deps (append)
    // UUIDv7s made in the same millisecond are not ordered: sort them so ids follow the add order
    const ids = planned.map(() => uuidv7()).sort();
    const keyed = planned.flatMap((n, i) => (n.key === null ? [] : [{ id: ids[i], workflow: n.workflow, key: n.key }]));
    if (!append) {
      // keys first: a refused flow writes nothing
      const handoffs = await this.keys.decide(q, keyed, 'startFlow');
      const o = builder.options;
      flowId = o.id ?? uuidv7();
      flowName = o.name ?? null;
      flowIgnore = { cancelled: !!o.ignoreCancelled, failed: !!o.ignoreFailed, deleted: !!o.ignoreDeleted };
      const created = await store.createFlow(q, {
        id: flowId,
        name: flowName,
        ignoreCancelled: flowIgnore.cancelled,
        ignoreFailed: flowIgnore.failed,
        ignoreDeleted: flowIgnore.deleted,
      });
      if (!created) throw new FlowExistsError(flowId);
      await this.keys.handOff(q, handoffs, 'startFlow', handedOff);
    } else {
      const flow = await store.touchFlow(q, append.flowId);
      if (!flow) throw new RunNotFoundError(append.flowId);
      flowId = flow.id;
      flowName = flow.name;
      flowIgnore = { cancelled: flow.ignore_cancelled, failed: flow.ignore_failed, deleted: flow.ignore_deleted };
      const external = [...new Set(planned.flatMap((n) => n.deps).filter((d) => !inBatch.has(d)))];
      const found = await store.lockNodes(q, flowId, [...inBatch, ...external]);
      const p = new Problems();
      for (const r of found) {
        if (inBatch.has(r.name)) p.add('name', r.name, 'uniqueName', `node "${r.name}" already exists in flow ${flowId}`);
        else existing.set(r.name, r.status);
      }
      // nor may it close a cycle through the flow's nodes: the batch with every node upstream of it.
      // A cycle through them needs a node of the flow that waits for a name of the batch (a missing
      // dep): without one there is none, and the walk upstream (the whole flow, for a dep on a
      // fan-in) is not made
      if (external.length && (await store.dependedOn(q, flowId, [...inBatch]))) {
        const graph = [...planned, ...(await store.upstream(q, flowId, external))];
        const cycle = findCycle(graph, new Set(graph.map((n) => n.name)));
        if (cycle) p.add('deps', cycle, 'noCycle', `appending would close a cycle through the flow's nodes: ${cycle.join(' → ')}`);
      }
      if (append.checkDeps) {
        for (const n of planned) {
          for (const d of n.deps) {
            if (!inBatch.has(d) && !existing.has(d)) {
              p.add('deps', d, 'knownDep', `node "${n.name}" depends on "${d}", which is not a node of flow ${flowId} (use checkDeps: false to allow it)`);
            }
          }
        }
      }
      for (const r of keyed.length ? await store.keyedNodes(q, flowId, keyed) : []) {
        p.add('key', r.key, 'uniqueKey', `key ${JSON.stringify(r.key)} of workflow "${r.workflow}" is already the key of node "${r.name}" of flow ${flowId}`);
      }
      p.throwIfAny(`appendFlow ${flowId}`);
      await this.keys.handOff(q, await this.keys.decide(q, keyed, `appendFlow ${flowId}`), 'appendFlow', handedOff);
    }
    const runIds: Record<string, string> = {};
    const rows: NewFlowNode[] = [];
    // the caller's trace, continued by each node's run spans (as a start's)
    const trace = traceCarrier();
    const edges: NewFlowEdge[] = [];
    for (const [i, n] of planned.entries()) {
      const id = ids[i];
      runIds[n.name] = id;
      rows.push({
        id,
        workflow: n.workflow,
        key: n.key,
        input: n.input,
        timeout_ms: n.timeoutMs,
        priority: n.priority,
        group_key: n.group,
        flow_id: flowId,
        flow_name: flowName,
        name: n.name,
        deps: n.deps,
        deps_left: n.deps.length,
        trace,
      });
      for (const d of n.deps) {
        edges.push({
          flow_id: flowId,
          dep_name: d,
          run_id: id,
          ignore_cancelled: n.ignore.cancelled ?? flowIgnore.cancelled,
          ignore_failed: n.ignore.failed ?? flowIgnore.failed,
          ignore_deleted: n.ignore.deleted ?? flowIgnore.deleted,
          missing: !inBatch.has(d) && !existing.has(d),
        });
      }
    }
    await store.insertNodes(q, rows);
    if (append) await store.clearMissing(q, flowId, [...inBatch]);
    await store.insertEdges(q, edges);
    if (append) {
      // deps that had already finished: resolve their new edges now (they were share-locked above)
      const finals = [...existing].filter(([, status]) => isFinished(status));
      if (finals.length) {
        await store.resolve(
          q,
          flowId,
          finals.map(([name]) => name),
          finals.map(([, status]) => depOutcome(status)!),
          cancelled,
        );
      }
    }
    return { flowId, runIds };
  }
}
