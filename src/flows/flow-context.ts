import type { RunInfo } from '../domain/run-info';
import { assertValid, problem } from '../domain/validation';
import type { Queryable } from '../store/db';
import type { FlowsStore } from '../store/flows.store';
import { toRunInfo, type RunRow } from '../store/run-row';

/** The flow facts of a claimed run (undefined for runs outside flows). */
export interface FlowNodeInfo {
  flowId: string;
  flowName: string | null;
  /** This node's name. */
  name: string;
  /** Names of the nodes it depends on. */
  deps: string[];
}

/** Options of the `ctx.flow` readers. */
export interface FlowReadOptions {
  /** Only this node's deps. */
  onlyDeps?: boolean;
}

/** `ctx.flow`: the flow a step's run belongs to, and readers for its other nodes. */
export interface FlowContext {
  readonly flowId: string;
  readonly flowName: string | null;
  /** This node's name. */
  readonly name: string;
  /** Names of this node's deps. */
  readonly deps: readonly string[];
  /** The recorded result of node `name` (its last step's return value); undefined until it completed. */
  getRecorded<T = unknown>(name: string): Promise<T | undefined>;
  /** Node name → recorded result, for every completed node but this one (or only its deps). */
  allRecorded<T = unknown>(options?: FlowReadOptions): Promise<Record<string, T>>;
  /** Node `name` of this flow as a run, or null. */
  getJob(name: string): Promise<RunInfo | null>;
  /** Every node of this flow (or only this node's deps), by name. */
  allJobs(options?: FlowReadOptions): Promise<RunInfo[]>;
  /**
   * The nodes of this flow by name, loaded a page at a time (keyset), for flows of any size;
   * `pageSize` (default 500) is held to 1..10,000, and one that is no number is refused with
   * `DurableValidationError`.
   */
  streamJobs(options?: FlowReadOptions & { pageSize?: number }): AsyncIterable<RunInfo>;
}

/** Default page size of `streamJobs`, and the largest. */
const PAGE = 500;
const MAX_PAGE = 10_000;

/** The {@link FlowContext} of one run. */
export class FlowContextImpl implements FlowContext {
  constructor(
    private readonly db: Queryable,
    private readonly store: FlowsStore,
    /** Step names of registered workflows (for {@link RunInfo.step}). */
    private readonly stepName: (workflow: string, index: number) => string | null,
    private readonly node: FlowNodeInfo,
  ) {}

  private info(row: RunRow): RunInfo {
    return toRunInfo(row, this.stepName);
  }

  get flowId(): string {
    return this.node.flowId;
  }
  get flowName(): string | null {
    return this.node.flowName;
  }
  get name(): string {
    return this.node.name;
  }
  get deps(): readonly string[] {
    return this.node.deps;
  }

  async getRecorded<T = unknown>(name: string): Promise<T | undefined> {
    const row = await this.store.node(this.db, this.flowId, String(name));
    return row && row.status === 'completed' ? (row.result as T) : undefined;
  }

  async allRecorded<T = unknown>(options: FlowReadOptions = {}): Promise<Record<string, T>> {
    const names = options.onlyDeps ? this.node.deps : null;
    const rows = await this.store.recorded(this.db, this.flowId, this.name, names);
    const out: Record<string, T> = {};
    for (const r of rows) out[r.name] = r.result as T;
    return out;
  }

  async getJob(name: string): Promise<RunInfo | null> {
    const row = await this.store.node(this.db, this.flowId, String(name));
    return row ? this.info(row) : null;
  }

  async allJobs(options: FlowReadOptions = {}): Promise<RunInfo[]> {
    const rows = await this.store.nodes(this.db, this.flowId, options.onlyDeps ? this.node.deps : null);
    return rows.map((r) => this.info(r));
  }

  async *streamJobs(options: FlowReadOptions & { pageSize?: number } = {}): AsyncGenerator<RunInfo> {
    const given = options.pageSize ?? PAGE;
    // a page size that is no number (NaN, a string) is refused here, not by the database's LIMIT
    assertValid('streamJobs', [
      typeof given === 'number' && !Number.isNaN(given) ? undefined : problem('pageSize', given, 'isNumber', 'pageSize must be a number (1 to 10,000)'),
    ]);
    const size = Math.min(Math.max(1, Math.floor(given)), MAX_PAGE);
    const names = options.onlyDeps ? this.node.deps : null;
    let after: string | null = null;
    for (;;) {
      const rows = await this.store.page(this.db, this.flowId, after, names, size);
      for (const r of rows) yield this.info(r);
      if (rows.length < size) return;
      after = rows[rows.length - 1].name;
    }
  }
}
