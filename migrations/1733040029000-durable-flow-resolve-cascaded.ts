import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';
import { flowResolveCascadedFunction, flowResolveFunction, flowResolveWrapper, flowTriggerFunctions } from './flow-resolution';

/**
 * A flow's dependency resolution reports the nodes it cancelled: `durable_flow_resolve_cascaded(fid,
 * names, outcomes)` resolves as `durable_flow_resolve` did and returns one row, `woke` and the id and
 * workflow of each node it cancelled (`cancelled_ids`, `cancelled_workflows`), so an append, a rerun
 * or a repair counts them from the statement that resolved. The flow triggers call it;
 * `durable_flow_resolve` keeps its signature and result (nodes of the previous version call it
 * during a rolling deploy) and calls it too.
 */
export class DurableFlowResolveCascaded1733040029000 extends DurableMigration {
  name = 'DurableFlowResolveCascaded1733040029000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(flowResolveCascadedFunction(this.s, this.channel));
    await q.query(flowResolveWrapper(this.s));
    for (const fn of flowTriggerFunctions(this.s, 'durable_flow_resolve_cascaded')) await q.query(fn);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(flowResolveFunction(this.s, this.channel));
    for (const fn of flowTriggerFunctions(this.s, 'durable_flow_resolve')) await q.query(fn);
    await q.query(`DROP FUNCTION IF EXISTS ${this.s}.durable_flow_resolve_cascaded(text, text[], text[])`);
  }
}
