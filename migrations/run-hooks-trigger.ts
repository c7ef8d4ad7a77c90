/** A run's final statuses, and the lifecycle hook each one owes. */
const HOOK_OF_STATUS = `CASE n.status WHEN 'completed' THEN 'onRunCompleted' WHEN 'cancelled' THEN 'onRunCancelled' ELSE 'onRunFailed' END`;
const FINAL = `('completed', 'failed', 'cancelled', 'compensated', 'compensation_failed')`;

/**
 * A flow node the flow's resolution cancelled because a dependency was cancelled, failed or
 * deleted (`durable_flow_resolve`, which sets `durable.flow_resolving` around that update and
 * writes this reason): it owes its flow's `afterCancelled`, not the run's lifecycle hooks.
 */
const CANCELLED_BY_FLOW = `coalesce(n.status = 'cancelled' AND n.flow_id IS NOT NULL AND n.cancel_reason LIKE 'a dependency was %'
          AND current_setting('durable.flow_resolving', true) = 'on', false)`;

/**
 * `durable_run_hooks_on_finish()`, the statement-level trigger function of `runs_hooks_trg`: a run
 * of a workflow with lifecycle hooks that an UPDATE moved to a final status owes its hook, recorded
 * in the transaction that ended it. With `exceptFlowCascade`, a flow node cancelled by its flow's
 * resolution owes none (it owes `afterCancelled`).
 */
export function runHooksOnFinish(s: string, exceptFlowCascade: boolean): string {
  return `
      CREATE OR REPLACE FUNCTION ${s}.durable_run_hooks_on_finish() RETURNS trigger
      LANGUAGE plpgsql AS $fn$
      BEGIN
        -- no workflow has lifecycle hooks: nothing to look at
        IF NOT EXISTS (SELECT 1 FROM ${s}.hook_workflows) THEN RETURN NULL; END IF;
        INSERT INTO ${s}.flow_hooks (run_id, hook, reason)
        SELECT n.id, ${HOOK_OF_STATUS}, n.status
        FROM new_rows n
        JOIN ${s}.hook_workflows w ON w.workflow = n.workflow
        JOIN old_rows o ON o.id = n.id
        WHERE n.status IN ${FINAL} AND o.status NOT IN ${FINAL} AND ${HOOK_OF_STATUS} = ANY(w.hooks)${exceptFlowCascade ? `\n          AND NOT ${CANCELLED_BY_FLOW}` : ''}
        ON CONFLICT (run_id, hook) DO NOTHING;
        RETURN NULL;
      END
      $fn$`;
}
