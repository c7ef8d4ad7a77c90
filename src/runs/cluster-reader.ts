import { Inject, Injectable } from '@nestjs/common';
import { RESOLVED_OPTIONS } from '../core/durable.constants';
import { DurableConnection } from '../core/durable.connection';
import { WorkflowRegistry } from '../definition/workflow.registry';
import type { WorkflowControls } from '../definition/workflow-definition';
import type { OnDuplicate, ReusePolicy } from '../domain/keys.policy';
import { FINISHED_STATUSES, GOING_STATUSES, type RunStatus } from '../domain/run-info';
import type { ResolvedOptions } from '../options/resolve-options';
import { ControlsStore } from '../store/controls.store';
import { NodesStore } from '../store/nodes.store';
import { RunsStore } from '../store/runs.store';

/** A registered workflow as {@link DurableService.listWorkflows} describes it. */
export interface WorkflowInfo {
  name: string;
  /** Its key policy, debounce, run timeout and retry policy (durations in ms). */
  options: {
    reuse: ReusePolicy;
    onDuplicate: OnDuplicate;
    debounce?: { period: number; timeout?: number };
    timeout?: number;
    /** Its retry policy, defaults applied (delays in ms); a step may set its own over it. */
    retry: { attempts: number; backoff: 'exponential' | 'fixed'; initialDelay: number; maxDelay: number; jitter: boolean };
    priority: number;
    /** Its concurrency limit: a number for the whole workflow, else per group (`by: 'function'` when a function groups). */
    concurrency?: number | { limit: number; by: 'key' | 'function' };
    /** Its rate limit (`period` in ms). */
    rateLimit?: { limit: number; period: number; by?: 'key' | 'function' };
  };
  /** Its steps, in order. */
  steps: string[];
  /** Paused by `pause` (on every node): its runs are not claimed. */
  paused: boolean;
  /** Runs per status, each figure at most {@link WorkflowInfo.countsCap}. */
  counts: Record<RunStatus, number>;
  /** The most any figure of `counts` says: a figure equal to it means "at least that many". */
  countsCap: number;
}

/** How `listWorkflows` shows a workflow's limits. */
function limitsOf(c: WorkflowControls | undefined): Pick<WorkflowInfo['options'], 'concurrency' | 'rateLimit'> {
  if (!c) return {};
  const by = c.by === undefined ? undefined : c.by === 'key' ? 'key' : 'function';
  const { concurrency: conc, rateLimit: rate } = c;
  return {
    ...(conc ? { concurrency: conc.grouped ? { limit: conc.limit, by: by! } : conc.limit } : {}),
    ...(rate ? { rateLimit: { limit: rate.limit, period: rate.periodMs, ...(rate.grouped ? { by } : {}) } } : {}),
  };
}

/** A node as {@link DurableService.listNodes} describes it. */
export interface NodeInfo {
  nodeId: string;
  startedAt: Date;
  lastSeenAt: Date;
  /** Heard from within `nodeTimeout`. */
  alive: boolean;
  /** Its runs in status `running`. */
  running: number;
  /** Its worker's slots (absent on a node that only starts runs). */
  concurrency?: number;
  /** The workflows it runs. */
  workflows?: string[];
}

/** Most figures of `WorkflowInfo.counts` count, and most nodes listed. */
const COUNTS_CAP = 10_000;
const NODES_LIMIT = 1000;

/** Reads of the cluster as a whole: the registered workflows with their counts, the nodes. */
@Injectable()
export class ClusterReader {
  constructor(
    private readonly connection: DurableConnection,
    private readonly registry: WorkflowRegistry,
    private readonly runs: RunsStore,
    private readonly nodes: NodesStore,
    private readonly controls: ControlsStore,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedOptions,
  ) {}

  /** The workflows registered on this node, by name, with their runs per status (bounded counts). */
  async workflows(cap = COUNTS_CAP): Promise<WorkflowInfo[]> {
    const names = this.registry.names().sort();
    const statuses = [...GOING_STATUSES, ...FINISHED_STATUSES];
    const [rows, paused] = await Promise.all([
      names.length ? this.runs.countByStatus(this.connection.db, names, cap) : [],
      this.controls.paused(this.connection.db),
    ]);
    return names.map((name) => {
      const def = this.registry.get(name);
      const counts = Object.fromEntries(statuses.map((st) => [st, 0])) as Record<RunStatus, number>;
      for (const r of rows) if (r.workflow === name) counts[r.status] = r.n;
      const debounce = def.debounce && { period: def.debounce.periodMs, ...(def.debounce.timeoutMs === undefined ? {} : { timeout: def.debounce.timeoutMs }) };
      return {
        name,
        options: {
          reuse: def.reuse,
          onDuplicate: def.onDuplicate,
          ...(debounce ? { debounce } : {}),
          ...(def.timeoutMs === undefined ? {} : { timeout: def.timeoutMs }),
          retry: {
            attempts: def.retry.attempts,
            backoff: def.retry.backoff,
            initialDelay: def.retry.initialDelayMs,
            maxDelay: def.retry.maxDelayMs,
            jitter: def.retry.jitter,
          },
          priority: def.priority,
          ...limitsOf(def.controls),
        },
        steps: def.steps.map((s) => s.name),
        paused: paused.has(name),
        counts,
        countsCap: cap,
      };
    });
  }

  /** The nodes with a heartbeat row (the first 1000 by id); dead ones until the maintenance pass removes them. */
  async nodeList(): Promise<NodeInfo[]> {
    const rows = await this.nodes.list(this.connection.db, this.options.nodeTimeoutMs, NODES_LIMIT);
    return rows.map((r) => ({
      nodeId: r.id,
      startedAt: r.started_at,
      lastSeenAt: r.heartbeat_at,
      alive: r.alive,
      running: r.running,
      ...(r.info.concurrency === undefined ? {} : { concurrency: r.info.concurrency }),
      ...(r.info.workflows === undefined ? {} : { workflows: r.info.workflows }),
    }));
  }
}
