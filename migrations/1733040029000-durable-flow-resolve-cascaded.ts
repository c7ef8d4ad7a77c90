import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';
import { flowResolveCascadedFunction, flowResolveFunction, flowResolveWrapper } from './flow-resolve-function';

/**
 * A flow's dependency resolution reports the nodes it cancelled: `durable_flow_resolve_cascaded(fid,
 * names, outcomes)` resolves as `durable_flow_resolve` did and returns one row, `woke` and the id and
 * workflow of each node it cancelled (`cancelled_ids`, `cancelled_workflows`), so an append, a rerun
 * or a repair counts them from the statement that resolved. `durable_flow_resolve` keeps its
 * signature and result (the flow triggers call it) and calls the new function.
 */
export class DurableFlowResolveCascaded1733040029000 extends DurableMigration {
  name = 'DurableFlowResolveCascaded1733040029000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(flowResolveCascadedFunction(this.s, this.channel));
    await q.query(flowResolveWrapper(this.s));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(flowResolveFunction(this.s, this.channel));
    await q.query(`DROP FUNCTION IF EXISTS ${this.s}.durable_flow_resolve_cascaded(text, text[], text[])`);
  }
}
