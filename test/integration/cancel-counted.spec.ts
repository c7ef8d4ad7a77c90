/**
 * When `cancel` counts what its statement's triggers cancelled (the children of a parent): outside
 * a caller's transaction once the statement committed, a failure to read it logged and the cancel
 * done; in a caller's transaction (the dashboard's) only once that transaction committed, never
 * when it rolled back, and a failure to read it fails the call (the transaction it aborted cannot commit).
 */
import { RunContext, Step, Workflow } from '../../src';
import { DurableConnection } from '../../src/core/durable.connection';
import { RunAdmin } from '../../src/runs/run-admin';
import { ActivityStore } from '../../src/store/activity.store';
import { inCallerTx } from '../../src/store/caller-tx';
import { createApp, RecordingLogger, waitFor, type TestApp } from '../support';
import { testMeter } from '../support/metrics';

const { counter } = testMeter();

/** A child that waits (for input that never comes). */
@Workflow('cc_hold')
class CcHold {
  @Step()
  async wait(ctx: RunContext) {
    await ctx.waitForInput('never');
  }
}

/** A parent waiting for its one child. */
@Workflow('cc_parent')
class CcParent {
  @Step()
  async call(ctx: RunContext) {
    return ctx.callWorkflow(CcHold);
  }
}

/** How many runs of the parent's and the child's workflows were counted cancelled. */
const cancelled = async () => ({
  parent: await counter('durable.run.finished', { workflow: 'cc_parent', status: 'cancelled' }),
  child: await counter('durable.run.finished', { workflow: 'cc_hold', status: 'cancelled' }),
});

/** A parent waiting for its child, which waits for input. */
async function parentWithChild(t: TestApp): Promise<{ parent: string; child: string }> {
  const parent = (await t.durable.start('cc_parent', null)).runId;
  const child = await waitFor(
    async () => {
      const kids = await t.durable.listRuns({ parentId: parent });
      return kids.length === 1 && kids[0].status === 'waiting' && (await t.durable.getRun(parent))?.status === 'waiting' ? kids[0].id : undefined;
    },
    { timeout: 20_000, message: 'the parent and its child waiting' },
  );
  return { parent, child };
}

const statuses = async (t: TestApp, ids: { parent: string; child: string }) => [
  (await t.durable.getRun(ids.parent))?.status,
  (await t.durable.getRun(ids.child))?.status,
];

describe('cancel: when what its triggers cancelled is counted', () => {
  it("outside a caller's transaction, a failure to read it is logged: the cancel is done and the run counted", async () => {
    const logger = new RecordingLogger();
    const t = await createApp({ workflows: [CcParent, CcHold], logger });
    const ids = await parentWithChild(t);
    const before = await cancelled();
    const read = jest.spyOn(t.get(ActivityStore), 'triggerOutcomes').mockRejectedValue(new Error('outcomes unreadable'));
    try {
      await t.durable.cancel(ids.parent);
    } finally {
      read.mockRestore();
    }
    expect(await statuses(t, ids)).toEqual(['cancelled', 'cancelled']);
    expect(logger.find('warn', 'counting the runs the triggers handed keys to or cancelled failed: outcomes unreadable')).toHaveLength(1);
    expect(await cancelled()).toEqual({ parent: before.parent + 1, child: before.child });
  });

  it("in a caller's transaction, once it committed: not before, not when it rolled back, not when the read failed", async () => {
    const t = await createApp({ workflows: [CcParent, CcHold] });
    const { db } = t.get(DurableConnection);
    const admin = t.get(RunAdmin);
    const ids = await parentWithChild(t);
    const before = await cancelled();

    // rolled back after the cancel: nothing done, nothing counted
    const undone = inCallerTx(db, async (tx) => {
      await admin.cancel(ids.parent, null, tx);
      expect(await cancelled()).toEqual(before);
      throw new Error('rolled back');
    });
    await expect(undone).rejects.toThrow('rolled back');
    expect(await statuses(t, ids)).toEqual(['waiting', 'waiting']);
    expect(await cancelled()).toEqual(before);

    // the read failed: the call fails with it, nothing done, nothing counted
    const read = jest.spyOn(t.get(ActivityStore), 'triggerOutcomes').mockRejectedValue(new Error('outcomes unreadable'));
    try {
      await expect(inCallerTx(db, (tx) => admin.cancel(ids.parent, null, tx))).rejects.toThrow('outcomes unreadable');
    } finally {
      read.mockRestore();
    }
    expect(await statuses(t, ids)).toEqual(['waiting', 'waiting']);
    expect(await cancelled()).toEqual(before);

    // committed: the parent and its child counted, once the commit is done
    await inCallerTx(db, async (tx) => {
      await admin.cancel(ids.parent, null, tx);
      expect(await cancelled()).toEqual(before);
    });
    expect(await statuses(t, ids)).toEqual(['cancelled', 'cancelled']);
    expect(await cancelled()).toEqual({ parent: before.parent + 1, child: before.child + 1 });
  });
});
