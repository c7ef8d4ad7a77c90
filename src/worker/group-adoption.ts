import { groupOf, type WorkflowDefinition } from '../definition/workflow-definition';
import type { RunStatus } from '../domain/run-info';
import { monotonicMs } from '../domain/monotonic-clock';
import type { ControlsStore, OpenRun } from '../store/controls.store';
import type { Queryable } from '../store/db';

/** Runs read per statement of a sweep. */
const PAGE = 1_000;
/** The statuses of the runs a limit counts or claims, swept in this order. */
const OPEN_STATUSES: RunStatus[] = ['pending', 'waiting', 'compensating', 'running'];

/** Where a sweep stands: its next page is of the runs of `defs[workflow]` in `OPEN_STATUSES[status]` after (`at`, `id`). */
export interface SweepCursor {
  workflow: number;
  status: number;
  at: string;
  id: string;
}

/** Where a sweep begins. */
export const SWEEP_START: SweepCursor = { workflow: 0, status: 0, at: '-infinity', id: '00000000-0000-0000-0000-000000000000' };

/** The group `run` belongs to under `def`'s limits; `''` (the workflow's one group) when its `by(input)` throws. */
function groupFor(def: WorkflowDefinition, run: OpenRun): string {
  try {
    return groupOf(def, run.key, run.input) ?? '';
  } catch {
    return '';
  }
}

/**
 * Sweeps the open runs of the limited workflows `defs` from `from`, giving their group to those
 * that have none — runs started before their workflow had limits, or by an app whose code did not
 * have them yet — since the claim of a limited workflow reads grouped runs only. Reads {@link PAGE}
 * runs per statement until the sweep is done or `until` (on {@link monotonicMs}) has passed; a row another
 * transaction holds is left for the next sweep. Returns how many runs it grouped, and where to go
 * on (`next`) when it stopped before the end.
 */
export async function sweepUngrouped(
  controls: ControlsStore,
  q: Queryable,
  defs: WorkflowDefinition[],
  from: SweepCursor,
  until: number,
): Promise<{ grouped: number; next?: SweepCursor }> {
  let grouped = 0;
  for (let c = from; c.workflow < defs.length;) {
    if (monotonicMs() >= until) return { grouped, next: c };
    const def = defs[c.workflow];
    const page = await controls.openPage(q, def.name, OPEN_STATUSES[c.status], c, PAGE);
    const ungrouped = page.filter((r) => r.ungrouped);
    if (ungrouped.length)
      grouped += await controls.setGroups(
        q,
        ungrouped.map((r) => ({ id: r.id, g: groupFor(def, r) })),
      );
    if (page.length === PAGE) c = { ...c, at: page[PAGE - 1].at, id: page[PAGE - 1].id };
    else if (c.status + 1 < OPEN_STATUSES.length) c = { ...SWEEP_START, workflow: c.workflow, status: c.status + 1 };
    else c = { ...SWEEP_START, workflow: c.workflow + 1 };
  }
  return { grouped };
}
