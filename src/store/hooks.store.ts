import type { LifecycleHook } from '../definition/run-lifecycle.interface';
import type { Queryable } from './db';

/** A hook owed to a run: a flow node's `afterCancelled`, or a lifecycle hook. */
export type HookName = 'afterCancelled' | LifecycleHook;

/** A claimed hook. */
export interface HookRow {
  run_id: string;
  hook: HookName;
  /** `afterCancelled`: what happened to the dep (`cancelled`, `failed`, `deleted`); else the run's final status. */
  reason: string;
  /** Calls begun, this one included. */
  attempts: number;
}

/**
 * The queue of hooks owed to runs (`flow_hooks`): rows are written in the transaction that ends a
 * run (the flows' cascade for `afterCancelled`, `runs_hooks_trg` for the lifecycle hooks of the
 * workflows listed in `hook_workflows`), claimed by the worker nodes, deleted once called.
 */
export class HooksStore {
  private readonly sql: Record<string, string>;

  constructor(schema: string) {
    const S = `"${schema}"`;
    this.sql = {
      // due hooks, and hooks claimed by a node that stopped heartbeating ($5: nodeTimeout), of runs of $1
      claim: `
        WITH c AS (
          SELECT h.run_id, h.hook FROM ${S}.flow_hooks h JOIN ${S}.runs r ON r.id = h.run_id
          WHERE r.workflow = ANY($1::text[])
            AND (h.due_at <= now() OR (h.node_id IS NOT NULL AND NOT EXISTS (
              SELECT 1 FROM ${S}.nodes n WHERE n.id = h.node_id AND n.heartbeat_at > now() - $5 * interval '1 millisecond')))
          ORDER BY h.due_at LIMIT $2 FOR UPDATE OF h SKIP LOCKED
        )
        UPDATE ${S}.flow_hooks h SET due_at = now() + $3 * interval '1 millisecond', node_id = $4, attempts = h.attempts + 1
        FROM c WHERE h.run_id = c.run_id AND h.hook = c.hook
        RETURNING h.run_id, h.hook, h.reason, h.attempts`,
      done: `DELETE FROM ${S}.flow_hooks WHERE run_id = $1 AND hook = $2`,
      later: `UPDATE ${S}.flow_hooks SET due_at = now() + $3 * interval '1 millisecond', node_id = NULL WHERE run_id = $1 AND hook = $2`,
      // this node's definitions: the workflows with hooks ($1: { workflow: hook names }), and those without ($2)
      register: `
        WITH up AS (
          INSERT INTO ${S}.hook_workflows AS hw (workflow, hooks)
          SELECT key, ARRAY(SELECT jsonb_array_elements_text(value)) FROM jsonb_each($1::jsonb)
          ON CONFLICT (workflow) DO UPDATE SET hooks = EXCLUDED.hooks WHERE hw.hooks IS DISTINCT FROM EXCLUDED.hooks
        )
        DELETE FROM ${S}.hook_workflows WHERE workflow = ANY($2::text[])`,
    };
  }

  /**
   * Claims up to `limit` hooks of runs of `workflows` for node `nodeId`, leasing them for `leaseMs`:
   * due ones, and those of a node silent for `nodeTimeoutMs`.
   */
  claim(q: Queryable, workflows: string[], limit: number, leaseMs: number, nodeId: string, nodeTimeoutMs: number): Promise<HookRow[]> {
    return q.query<HookRow>(this.sql.claim, [workflows, limit, leaseMs, nodeId, nodeTimeoutMs]);
  }

  /** The hook was called (or there is nothing to call). */
  async done(q: Queryable, runId: string, hook: HookName): Promise<void> {
    await q.query(this.sql.done, [runId, hook]);
  }

  /** The hook threw: called again in `delayMs`, by any node. */
  async later(q: Queryable, runId: string, hook: HookName, delayMs: number): Promise<void> {
    await q.query(this.sql.later, [runId, hook, delayMs]);
  }

  /** Records which lifecycle hooks each of this node's workflows has (`hooks` empty: none). */
  async register(q: Queryable, hooks: Map<string, LifecycleHook[]>): Promise<void> {
    const withHooks = Object.fromEntries([...hooks].filter(([, h]) => h.length > 0));
    const without = [...hooks].filter(([, h]) => h.length === 0).map(([w]) => w);
    await q.query(this.sql.register, [JSON.stringify(withHooks), without]);
  }
}
