import type { EntityManager } from 'typeorm';
import type { OnDuplicate } from '../domain/keys.policy';
import { uuidv7 } from '../domain/uuid';
import {
  assertValid,
  jsonProblem,
  keyProblem,
  onDuplicateProblem,
  optionNames,
  optionsObjectProblem,
  priorityProblem,
  unknownOptionProblems,
} from '../domain/validation';
import { groupOf, type WorkflowDefinition } from '../definition/workflow-definition';
import type { NewRun } from '../store/runs.types';
import { traceCarrier } from '../observe/telemetry';
import { dueAt } from './start-due';
import type { StartManyItem, StartOptions } from './start-options';

/** The option names of `start` (anything else is refused as misspelt). */
export const START_OPTION_NAMES = optionNames<StartOptions>({ key: true, onDuplicate: true, manager: true, runAt: true, delay: true, priority: true });
/** The option names of a `startMany` item. */
const START_MANY_ITEM_NAMES = optionNames<StartManyItem>({ input: true, key: true, runAt: true, priority: true });
/** The option names of `startMany`. */
export const START_MANY_OPTION_NAMES = optionNames<{ manager?: EntityManager }>({ manager: true });

/** One validated start: the row to insert, and how a held key is answered. */
export interface PlannedStart {
  run: NewRun;
  onDuplicate: OnDuplicate;
  /** A rerun: never answered with the holder, not even one in its debounce wait. */
  rerun?: boolean;
}

/**
 * Validates one start (a `startMany` item, its problems named after `prefix`, or `start`'s input
 * and options) before anything is written (`DurableValidationError`), and plans its row: a new
 * id, its due time (a debounced run's from its period and limit), limits group, priority, timeout
 * and trace context.
 */
export function planStart(def: WorkflowDefinition, raw: StartManyItem, delay: unknown, onDuplicate: OnDuplicate | undefined, prefix = ''): PlannedStart {
  const notObject = optionsObjectProblem(raw, prefix ? prefix.slice(0, -1) : 'item', START_MANY_ITEM_NAMES, false);
  const item: StartManyItem = notObject ? {} : raw;
  const problems = [
    notObject,
    ...unknownOptionProblems(item, START_MANY_ITEM_NAMES, prefix),
    keyProblem(item.key, `${prefix}key`),
    jsonProblem(item.input, `${prefix}input`),
    onDuplicateProblem(onDuplicate, def.reuse),
    priorityProblem(item.priority, `${prefix}priority`),
  ];
  const key = item.key ?? null;
  const debounce = key !== null ? def.debounce : undefined;
  const due = dueAt(item.runAt, delay, debounce !== undefined, problems, prefix);
  assertValid(`start ${def.name}`, problems);
  // a debounced run waits its period, and is due no later than its limit (both from the database's clock)
  const times = debounce
    ? {
        run_at: null,
        delay_ms: debounce.periodMs,
        debounce_ms: debounce.timeoutMs ?? null,
        debounce_until: debounce.timeoutMs === undefined ? 'infinity' : null,
      }
    : due;
  return {
    run: {
      id: uuidv7(),
      workflow: def.name,
      key,
      holds_key: key !== null,
      input: item.input ?? null,
      ...times,
      timeout_ms: def.timeoutMs ?? null,
      priority: item.priority ?? def.priority,
      group_key: groupOf(def, key, item.input ?? null),
      trace: traceCarrier(),
    },
    onDuplicate: onDuplicate ?? def.onDuplicate,
  };
}
