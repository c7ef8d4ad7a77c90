import { BeforeApplicationShutdown, Injectable } from '@nestjs/common';
import { ValidationError } from 'class-validator';
import type { EntityManager } from 'typeorm';
import { DurableValidationError, FlowExistsError, RunNotFoundError } from '../errors';
import { DurableCore } from '../core/durable.core';
import { jsonProblem } from '../domain/validation';
import { isFinished, type RunStatus } from '../domain/run-info';
import { uuidv7 } from '../domain/uuid';
import { managerQueryable, type Queryable } from '../store/db';
import { depOutcome, type FlowsStore, type NewFlowEdge, type NewFlowNode } from '../store/flows.store';
import { FlowBuilder, type FlowOptions } from './flow.builder';
import { flowsStoreOf } from './flow-context';
import { FlowGraph } from './flow.graph';
import type { FlowCancelReason } from './on-flow-cancelled.interface';

/** What `startFlow` resolves. */
export interface StartFlowResult {
  flowId: string;
  /** Node name → run id, for the nodes this call inserted. */
  runIds: Record<string, string>;
}

/** Options of `appendFlow`. */
export interface AppendFlowOptions {
  /** Deps must name nodes that exist (in the flow or this append); default true. */
  checkDeps?: boolean;
}

/** Hooks claimed per round trip. */
const HOOK_BATCH = 50;
/** A claimed hook is retried by another node after this long (its node died mid-call). */
const HOOK_LEASE_MS = 5 * 60_000;
/**
 * How often the deeper repairs run at most (scans of open edges and waiting nodes; they find only
 * what a disabled trigger or a hand-made change left behind), and at least every `nodeTimeout`.
 */
const DEEP_REPAIR_EVERY_MS = 60_000;

const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

/** Validation problems of one `startFlow`, reported together. */
class Problems {
  readonly list: ValidationError[] = [];
  add(property: string, value: unknown, constraint: string, message: string): void {
    const e = new ValidationError();
    e.property = property;
    e.value = value;
    e.constraints = { [constraint]: message };
    e.children = [];
    this.list.push(e);
  }
  push(e: ValidationError | undefined): void {
    if (e) this.list.push(e);
  }
  throwIfAny(what: string): void {
    if (this.list.length === 0) return;
    const lines = this.list.flatMap((e) => Object.values(e.constraints ?? {}));
    throw new DurableValidationError(`${what}: ${lines.join('; ')}`, this.list);
  }
}

/** A validated node, ready to insert. */
interface PlannedNode {
  name: string;
  workflow: string;
  input: unknown;
  timeoutMs: number | null;
  deps: string[];
  ignore: { cancelled?: boolean; failed?: boolean; deleted?: boolean };
}

/**
 * DAG flows: validates and inserts flows (one transaction, or the caller's), appends to them,
 * draws them, and — from the maintenance pass — repairs stuck flows and runs `afterCancelled`
 * hooks. Dependency resolution runs in the database (`durable_flow_resolve`, flows migration).
 */
@Injectable()
export class FlowsEngine implements BeforeApplicationShutdown {
  private hooking?: Promise<void>;
  private stopping = false;
  private lastDeepRepairAt = 0;

  constructor(private readonly core: DurableCore) {}

  private get store(): FlowsStore {
    return flowsStoreOf(this.core);
  }

  /** A transaction on the pool (repairs that must hold a flow's row). */
  private readonly tx = <T>(fn: (q: Queryable) => Promise<T>): Promise<T> => this.core.db.tx(fn);

  /** A new builder. */
  flow(options: FlowOptions = {}): FlowBuilder {
    return new FlowBuilder({ ...(options ?? {}) });
  }

  /** A builder bound to existing flow `flowId`; `startFlow` on it appends its nodes. */
  async append(flowId: string, options: AppendFlowOptions = {}): Promise<FlowBuilder> {
    if (typeof flowId !== 'string' || flowId.length === 0) throw new RunNotFoundError(String(flowId));
    const { db } = this.core;
    const row = await this.store.getFlow(db, flowId);
    if (!row) throw new RunNotFoundError(flowId);
    const checkDeps = options?.checkDeps ?? true;
    return new FlowBuilder(
      {
        id: row.id,
        name: row.name ?? undefined,
        ignoreCancelled: row.ignore_cancelled,
        ignoreFailed: row.ignore_failed,
        ignoreDeleted: row.ignore_deleted,
      },
      { flowId: row.id, flowName: row.name, checkDeps: checkDeps !== false },
    );
  }

  /** Validates the whole graph, then inserts every node and edge in one transaction. */
  async start(builder: FlowBuilder, options: { manager?: EntityManager } = {}): Promise<StartFlowResult> {
    const planned = this.plan(builder);
    const manager = options?.manager;
    const joined = manager?.queryRunner?.isTransactionActive ? managerQueryable(manager) : undefined;
    if (joined) return this.insert(joined, builder, planned);
    return this.core.db.tx((q) => this.insert(q, builder, planned));
  }

  /** The graph of a started flow, with each node's run id and status. */
  async graph(flowId: string): Promise<FlowGraph> {
    const { db } = this.core;
    const [flow, rows] = await Promise.all([this.store.getFlow(db, String(flowId)), this.store.graph(db, String(flowId))]);
    if (!flow && rows.length === 0) throw new RunNotFoundError(String(flowId));
    return new FlowGraph(
      rows.map((r) => ({ name: r.name, workflow: r.workflow, deps: r.deps ?? [], runId: r.id, status: r.status })),
      flowId,
      flow?.name ?? null,
    );
  }

  /**
   * Maintenance (the spec's DynamicLifeline), safe on many nodes at once: deps that never
   * appeared in quiet flows count as deleted; now and then, open edges whose dep is final are
   * resolved and waiting nodes with nothing left to wait for are made pending; flow rows with no
   * runs left past retention are dropped. Then due `afterCancelled` hooks run in the background.
   */
  async maintain(q: Queryable): Promise<void> {
    const { options } = this.core;
    const grace = options.nodeTimeoutMs;
    await this.store.repairMissing(q, this.tx, grace, 100, false);
    const every = Math.min(DEEP_REPAIR_EVERY_MS, options.nodeTimeoutMs);
    if (Date.now() - this.lastDeepRepairAt >= every) {
      this.lastDeepRepairAt = Date.now();
      const woke = (await this.store.repairMissedEdges(q, 100)) + (await this.store.repairStalled(q, 1000));
      if (woke > 0) this.core.logger.warn(`flow repair: woke ${woke} node(s) whose deps had finished unnoticed`);
      await this.store.repairMissing(q, this.tx, grace, 100, true);
      if (options.retention.runsMs !== false) await this.store.pruneFlows(q, options.retention.runsMs, 1000);
    }
    this.kickHooks();
  }

  /** Runs due `afterCancelled` hooks in the background (one loop per node at a time). */
  kickHooks(): void {
    if (this.hooking || this.stopping) return;
    this.hooking = this.runHooks()
      .then(() => undefined)
      .catch((err) => this.core.logger.warn(`afterCancelled hooks: ${(err as Error).message}`))
      .finally(() => {
        this.hooking = undefined;
      });
  }

  /** On shutdown: claim no more hooks and let the ones running finish (within `shutdownTimeout`). */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    const running = this.hooking;
    if (!running) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([running, new Promise((r) => (timer = setTimeout(r, this.core.options.shutdownTimeoutMs)))]);
    if (timer) clearTimeout(timer);
  }

  /** Claims and runs due hooks until none is left; each is called once (leased, deleted after). */
  async runHooks(): Promise<number> {
    const { db, registry, runs, logger } = this.core;
    const workflows = registry.names();
    if (workflows.length === 0) return 0;
    let ran = 0;
    while (!this.stopping) {
      const hooks = await this.store.claimHooks(db, workflows, HOOK_BATCH, HOOK_LEASE_MS);
      if (hooks.length === 0) return ran;
      await Promise.all(
        hooks.map(async (h) => {
          const row = await runs.get(db, h.run_id);
          const def = row && registry.find(row.workflow);
          const fn = def && (def.instance as { afterCancelled?: unknown }).afterCancelled;
          if (row && typeof fn === 'function') {
            try {
              await (fn as (r: FlowCancelReason, run: unknown) => unknown).call(def!.instance, h.reason, this.core.info(row));
              ran++;
            } catch (err) {
              logger.error(`afterCancelled of run ${h.run_id} (${row.workflow}) threw: ${(err as Error).stack ?? err}`);
            }
          }
          await this.store.doneHook(db, h.run_id);
        }),
      );
    }
    return ran;
  }

  /** Every check that needs no database, with all problems in one error. */
  private plan(builder: FlowBuilder): PlannedNode[] {
    if (!(builder instanceof FlowBuilder)) {
      throw new DurableValidationError('startFlow: expects a FlowBuilder from durable.flow() or durable.appendFlow()');
    }
    const p = new Problems();
    const o = builder.options ?? {};
    if (!builder.appendTo) {
      if (o.id !== undefined && (typeof o.id !== 'string' || bytes(o.id) < 1 || bytes(o.id) > 255)) {
        p.add('id', o.id, 'flowId', 'flow id must be a string of 1 to 255 bytes');
      }
      if (o.name !== undefined && o.name !== null && (typeof o.name !== 'string' || bytes(o.name) > 255)) {
        p.add('name', o.name, 'flowName', 'flow name must be a string of at most 255 bytes');
      }
      for (const k of ['ignoreCancelled', 'ignoreFailed', 'ignoreDeleted'] as const) {
        if (o[k] !== undefined && typeof o[k] !== 'boolean') p.add(k, o[k], 'isBoolean', `${k} must be a boolean`);
      }
    }
    const nodes = builder.nodes;
    if (nodes.length === 0) p.add('nodes', [], 'notEmpty', 'a flow needs at least one node (call add())');
    const names = new Set<string>();
    const planned: PlannedNode[] = [];
    for (const [i, n] of nodes.entries()) {
      const at = typeof n.name === 'string' ? `node "${n.name}"` : `node #${i}`;
      if (typeof n.name !== 'string' || bytes(n.name) < 1 || bytes(n.name) > 255) {
        p.add(`nodes[${i}].name`, n.name, 'nodeName', `${at}: a node name must be a string of 1 to 255 bytes`);
      } else if (names.has(n.name)) {
        p.add(`nodes[${i}].name`, n.name, 'uniqueName', `duplicate node name "${n.name}"`);
      } else names.add(n.name);
      const def = typeof n.workflow === 'string' ? this.core.registry.find(n.workflow) : undefined;
      if (!def) p.add(`nodes[${i}].workflow`, n.workflow, 'knownWorkflow', `${at}: unknown workflow "${String(n.workflow)}"`);
      p.push(jsonProblem(n.input, `${at} input`));
      const deps: string[] = [];
      if (!Array.isArray(n.deps) || n.deps.some((d) => typeof d !== 'string')) {
        p.add(`nodes[${i}].deps`, n.deps, 'deps', `${at}: deps must be an array of node names`);
      } else {
        for (const d of n.deps) if (!deps.includes(d)) deps.push(d);
      }
      for (const k of ['ignoreCancelled', 'ignoreFailed', 'ignoreDeleted'] as const) {
        const v = n.options?.[k];
        if (v !== undefined && typeof v !== 'boolean') p.add(`nodes[${i}].${k}`, v, 'isBoolean', `${at}: ${k} must be a boolean`);
      }
      planned.push({
        name: n.name,
        workflow: n.workflow,
        input: n.input ?? null,
        timeoutMs: def?.timeoutMs ?? null,
        deps,
        ignore: { cancelled: n.options?.ignoreCancelled, failed: n.options?.ignoreFailed, deleted: n.options?.ignoreDeleted },
      });
    }
    for (const n of planned) {
      for (const d of n.deps) {
        if (d === n.name) p.add('deps', d, 'noCycle', `node "${n.name}" depends on itself`);
        else if (!names.has(d) && !builder.appendTo) {
          p.add('deps', d, 'knownDep', `node "${n.name}" depends on "${d}", which is not a node of this flow`);
        }
      }
    }
    const cycle = findCycle(planned, names);
    if (cycle) p.add('deps', cycle, 'noCycle', `the deps form a cycle: ${cycle.join(' → ')}`);
    p.throwIfAny(builder.appendTo ? `appendFlow ${builder.appendTo.flowId}` : 'startFlow');
    return planned;
  }

  private async insert(q: Queryable, builder: FlowBuilder, planned: PlannedNode[]): Promise<StartFlowResult> {
    const store = this.store;
    const append = builder.appendTo;
    let flowId: string;
    let flowName: string | null;
    let flowIgnore: { cancelled: boolean; failed: boolean; deleted: boolean };
    const inBatch = new Set(planned.map((n) => n.name));
    const existing = new Map<string, RunStatus>(); // name → status, for external deps (append)
    if (!append) {
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
      // nor may it close a cycle through the flow's nodes: the batch with every node upstream of it
      if (external.length) {
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
      p.throwIfAny(`appendFlow ${flowId}`);
    }
    const runIds: Record<string, string> = {};
    const rows: NewFlowNode[] = [];
    const edges: NewFlowEdge[] = [];
    // UUIDv7s made in the same millisecond are not ordered: sort them so ids follow the add order
    const ids = planned.map(() => uuidv7()).sort();
    for (const [i, n] of planned.entries()) {
      const id = ids[i];
      runIds[n.name] = id;
      rows.push({
        id,
        workflow: n.workflow,
        input: n.input,
        timeout_ms: n.timeoutMs,
        flow_id: flowId,
        flow_name: flowName,
        name: n.name,
        deps: n.deps,
        deps_left: n.deps.length,
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
        );
      }
    }
    return { flowId, runIds };
  }
}

/** A cycle among the nodes' deps (names in dependency order), or undefined (Kahn's algorithm, no recursion). */
function findCycle(nodes: { name: string; deps: string[] }[], names: Set<string>): string[] | undefined {
  const deps = new Map(nodes.map((n) => [n.name, n.deps.filter((d) => names.has(d) && d !== n.name)]));
  const left = new Map<string, number>();
  const dependants = new Map<string, string[]>();
  for (const [name, ds] of deps) {
    left.set(name, ds.length);
    for (const d of ds) {
      if (!dependants.has(d)) dependants.set(d, []);
      dependants.get(d)!.push(name);
    }
  }
  const ready = [...left].filter(([, n]) => n === 0).map(([name]) => name);
  let done = 0;
  while (ready.length) {
    const name = ready.pop()!;
    done++;
    for (const c of dependants.get(name) ?? []) {
      const n = left.get(c)! - 1;
      left.set(c, n);
      if (n === 0) ready.push(c);
    }
  }
  if (done === deps.size) return undefined;
  // walk deps among the nodes left until one repeats
  let at = [...left].find(([, n]) => n > 0)![0];
  const seen: string[] = [];
  while (!seen.includes(at)) {
    seen.push(at);
    at = deps.get(at)!.find((d) => left.get(d)! > 0)!;
  }
  return [...seen.slice(seen.indexOf(at)), at].reverse();
}
