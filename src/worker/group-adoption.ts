import { groupOf, type WorkflowDefinition } from '../definition/workflow-definition';
import type { RunStatus } from '../domain/run-info';
import type { ControlsStore, UngroupedRun } from '../store/controls.store';
import type { Queryable } from '../store/db';

/** Runs read and grouped per statement. */
const ADOPT_BATCH = 1_000;
/** The statuses of the runs a limit counts or claims. */
const OPEN_STATUSES: RunStatus[] = ['pending', 'waiting', 'compensating', 'running'];
/** Where the first page of a status begins. */
const FIRST = { at: '-infinity', id: '00000000-0000-0000-0000-000000000000' };

/** The group `run` belongs to under `def`'s limits; `''` (the workflow's one group) when its `by(input)` throws. */
function groupFor(def: WorkflowDefinition, run: UngroupedRun): string {
  try {
    return groupOf(def, run.key, run.input) ?? '';
  } catch {
    return '';
  }
}

/**
 * Gives their group to the open runs of the limited workflows `defs` that have none — runs started
 * before their workflow had limits, or by a node whose code did not have them yet — since the
 * claim of a limited workflow reads grouped runs only. Status by status, in order of due time,
 * {@link ADOPT_BATCH} runs at a time, until none is left or `until` (a time) has passed; a row
 * another transaction holds is left for a later call. Returns how many runs it grouped.
 */
export async function adoptUngrouped(controls: ControlsStore, q: Queryable, defs: WorkflowDefinition[], until = Infinity): Promise<number> {
  let grouped = 0;
  for (const def of defs) {
    for (const status of OPEN_STATUSES) {
      for (let after = FIRST; Date.now() < until;) {
        const runs = await controls.ungrouped(q, def.name, status, after, ADOPT_BATCH);
        if (runs.length)
          grouped += await controls.setGroups(
            q,
            runs.map((r) => ({ id: r.id, g: groupFor(def, r) })),
          );
        if (runs.length < ADOPT_BATCH) break;
        after = runs[runs.length - 1];
      }
    }
  }
  return grouped;
}
