import type { MigrationInterface } from 'typeorm';
import { DurableInit1733040000000 } from './1733040000000-durable-init';
import { DurableKeys1733040001000 } from './1733040001000-durable-keys';
import { DurableWaits1733040002000 } from './1733040002000-durable-waits';
import { DurableFlows1733040003000 } from './1733040003000-durable-flows';
import { DurableSchedules1733040004000 } from './1733040004000-durable-schedules';
import { DurableKeyIndex1733040005000 } from './1733040005000-durable-key-index';
import { DurableEngine1733040006000 } from './1733040006000-durable-engine';
import { DurableHistory1733040007000 } from './1733040007000-durable-history';
import { DurableOutcomeSpelling1733040010000 } from './1733040010000-durable-outcome-spelling';
import { DurableRunHooks1733040011000 } from './1733040011000-durable-run-hooks';
import { DurableQueueControls1733040012000 } from './1733040012000-durable-queue-controls';
import { DurableKeyTombstones1733040013000 } from './1733040013000-durable-key-tombstones';
import { DurableQueueControlIndexes1733040014000 } from './1733040014000-durable-queue-control-indexes';
import { DurableWorkflowDefinitions1733040016000 } from './1733040016000-durable-workflow-definitions';
import { DurableGroupDueIndex1733040017000 } from './1733040017000-durable-group-due-index';
import { DurableKeyStats1733040018000 } from './1733040018000-durable-key-stats';
import { DurableLeanHistory1733040019000 } from './1733040019000-durable-lean-history';
import { DurableClaimSeq1733040020000 } from './1733040020000-durable-claim-seq';
import { DurableGroupBusyIndex1733040021000 } from './1733040021000-durable-group-busy-index';
import { DurableNodeProcess1733040022000 } from './1733040022000-durable-node-process';
import { DurableWaitTimeoutValue1733040023000 } from './1733040023000-durable-wait-timeout-value';
import { DurableScheduleFiresKept1733040024000 } from './1733040024000-durable-schedule-fires-kept';
import { DurableChildWaits1733040025000 } from './1733040025000-durable-child-waits';
import { DurableFlowScanIndexes1733040027000 } from './1733040027000-durable-flow-scan-indexes';
import { DurableFlowCascadeHooks1733040028000 } from './1733040028000-durable-flow-cascade-hooks';
import { DurableFlowResolveCascaded1733040029000 } from './1733040029000-durable-flow-resolve-cascaded';
import { DurableScheduleWorkflowIndex1733040030000 } from './1733040030000-durable-schedule-workflow-index';
import { DurableEventsReceiveIndex1733040031000 } from './1733040031000-durable-events-receive-index';
import { DurableTimeoutSweepIndexes1733040032000 } from './1733040032000-durable-timeout-sweep-indexes';
import { DurablePruneIndexes1733040033000 } from './1733040033000-durable-prune-indexes';
import { DurableScheduleChanges1733040034000 } from './1733040034000-durable-schedule-changes';
import { DurableChildrenIndex1733040035000 } from './1733040035000-durable-children-index';
import { DurableTimeoutRetriedIndex1733040036000 } from './1733040036000-durable-timeout-retried-index';
import { DurableActivityKindIndex1733040037000 } from './1733040037000-durable-activity-kind-index';
import { DurableKeyRunsIndex1733040038000 } from './1733040038000-durable-key-runs-index';
import { DurableKeyHoldersIndex1733040039000 } from './1733040039000-durable-key-holders-index';
import { DurableGroupBegunIndex1733040040000 } from './1733040040000-durable-group-begun-index';

export { DurableInit1733040000000, DurableKeys1733040001000, DurableWaits1733040002000 };
export { DurableFlows1733040003000 };
export { DurableSchedules1733040004000 };
export { DurableKeyIndex1733040005000 };
export { DurableEngine1733040006000 };
export { DurableHistory1733040007000 };
export { DurableOutcomeSpelling1733040010000 };
export { DurableRunHooks1733040011000 };
export { DurableQueueControls1733040012000 };
export { DurableKeyTombstones1733040013000 };
export { DurableQueueControlIndexes1733040014000 };
export { DurableWorkflowDefinitions1733040016000 };
export { DurableGroupDueIndex1733040017000 };
export { DurableKeyStats1733040018000 };
export { DurableLeanHistory1733040019000 };
export { DurableClaimSeq1733040020000 };
export { DurableGroupBusyIndex1733040021000 };
export { DurableNodeProcess1733040022000 };
export { DurableWaitTimeoutValue1733040023000 };
export { DurableScheduleFiresKept1733040024000 };
export { DurableChildWaits1733040025000 };
export { DurableFlowScanIndexes1733040027000 };
export { DurableFlowCascadeHooks1733040028000 };
export { DurableFlowResolveCascaded1733040029000 };
export { DurableScheduleWorkflowIndex1733040030000 };
export { DurableEventsReceiveIndex1733040031000 };
export { DurableTimeoutSweepIndexes1733040032000 };
export { DurablePruneIndexes1733040033000 };
export { DurableScheduleChanges1733040034000 };
export { DurableChildrenIndex1733040035000 };
export { DurableTimeoutRetriedIndex1733040036000 };
export { DurableActivityKindIndex1733040037000 };
export { DurableKeyRunsIndex1733040038000 };
export { DurableKeyHoldersIndex1733040039000 };
export { DurableGroupBegunIndex1733040040000 };

/** The module's migration classes in order, for schema `durable` (TypeORM `migrations: [...]`). */
export const DURABLE_MIGRATIONS: (new (schema?: string) => MigrationInterface)[] = [
  DurableInit1733040000000,
  DurableKeys1733040001000,
  DurableWaits1733040002000,
  DurableFlows1733040003000,
  DurableSchedules1733040004000,
  DurableKeyIndex1733040005000,
  DurableEngine1733040006000,
  DurableHistory1733040007000,
  DurableOutcomeSpelling1733040010000,
  DurableRunHooks1733040011000,
  DurableQueueControls1733040012000,
  DurableKeyTombstones1733040013000,
  DurableQueueControlIndexes1733040014000,
  DurableWorkflowDefinitions1733040016000,
  DurableGroupDueIndex1733040017000,
  DurableKeyStats1733040018000,
  DurableLeanHistory1733040019000,
  DurableClaimSeq1733040020000,
  DurableGroupBusyIndex1733040021000,
  DurableNodeProcess1733040022000,
  DurableWaitTimeoutValue1733040023000,
  DurableScheduleFiresKept1733040024000,
  DurableChildWaits1733040025000,
  DurableFlowScanIndexes1733040027000,
  DurableFlowCascadeHooks1733040028000,
  DurableFlowResolveCascaded1733040029000,
  DurableScheduleWorkflowIndex1733040030000,
  DurableEventsReceiveIndex1733040031000,
  DurableTimeoutSweepIndexes1733040032000,
  DurablePruneIndexes1733040033000,
  DurableScheduleChanges1733040034000,
  DurableChildrenIndex1733040035000,
  DurableTimeoutRetriedIndex1733040036000,
  DurableActivityKindIndex1733040037000,
  DurableKeyRunsIndex1733040038000,
  DurableKeyHoldersIndex1733040039000,
  DurableGroupBegunIndex1733040040000,
];

/**
 * The module's migration classes bound to another schema, for users who run migrations with their
 * own TypeORM runner (`migrations: durableMigrations('jobs')`, `migrationsRun: false` in forRoot).
 */
export function durableMigrations(schema = 'durable'): (new () => MigrationInterface)[] {
  return DURABLE_MIGRATIONS.map((Base) => {
    const Bound = class extends Base {
      constructor() {
        super(schema);
      }
    };
    Object.defineProperty(Bound, 'name', { value: `${Base.name}_${schema}` });
    return Bound;
  });
}
