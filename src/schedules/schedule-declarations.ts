import type { DiscoveryService } from '@nestjs/core';
import { SCHEDULE_OPTION_NAMES, type ScheduleMetadata, type ScheduleOptions } from '../definition/schedule.decorator';
import { schedulesMetadataOf, workflowNameOf } from '../definition/workflow-metadata';
import type { WorkflowRegistry } from '../definition/workflow.registry';
import { assertValid, jsonProblem, keyProblem, nameProblem, optionsObjectProblem, problem, unknownOptionProblems } from '../domain/validation';
import type { NewSchedule } from '../store/schedules.store';
import { canonicalTimeZone, nextOf, parseCron } from './cron';

/** Longest schedule name. */
const MAX_NAME = 200;

/** A declared schedule, validated: the row to store but for its `source`. */
export type DeclaredSchedule = Omit<NewSchedule, 'source'>;

/**
 * Validates a schedule as declared (`@Schedule` or `DurableService.schedule`): its options, cron,
 * time zone, key, input and name (`DurableValidationError` naming `what`), and makes the row to
 * store, its next tick computed from now.
 */
export function declaredSchedule(what: string, workflow: string, cron: unknown, options: ScheduleOptions, name = options.name ?? workflow): DeclaredSchedule {
  // a value where the options go (a name) would otherwise be ignored: the workflow's own schedule replaced
  assertValid(what, [optionsObjectProblem(options, 'options', SCHEDULE_OPTION_NAMES)]);
  const time = parseCron(what, cron, options.timezone);
  const problems = [...unknownOptionProblems(options, SCHEDULE_OPTION_NAMES), keyProblem(options.key, 'key'), jsonProblem(options.input, 'input')];
  const badName = nameProblem(name);
  if (badName) problems.push(badName);
  else if (name.length > MAX_NAME) problems.push(problem('name', name, 'isName', `name must be a string of 1 to ${MAX_NAME} characters`));
  assertValid(what, problems);
  return {
    name,
    workflow,
    cron: (cron as string).trim(),
    timezone: canonicalTimeZone(options.timezone),
    key: options.key ?? null,
    input: options.input ?? null,
    next_fire_at: nextOf(time)?.toISOString() ?? null,
  };
}

/** {@link declaredSchedule} of one `@Schedule` on `workflow`. */
function decorated(workflow: string, meta: ScheduleMetadata): DeclaredSchedule {
  return declaredSchedule(`@Schedule('${meta.cron}') on workflow "${workflow}"`, workflow, meta.cron, meta.options ?? {}, meta.options?.name ?? workflow);
}

/**
 * Validates every `@Schedule` of the app's providers while the app is being built, before any
 * lifecycle hook runs (so a bad cron fails the startup with nothing started yet).
 */
export function checkDeclaredSchedules(discovery: DiscoveryService): void {
  for (const wrapper of discovery.getProviders()) {
    const type = wrapper.metatype;
    if (!type || typeof type !== 'function') continue;
    const metas = schedulesMetadataOf(type);
    if (!metas.length) continue;
    const workflow = workflowNameOf(type);
    for (const m of metas) decorated(workflow, m);
  }
}

/**
 * The `@Schedule`s of the registered workflows, validated, in the registry's order; two of the
 * same name are refused (`DurableValidationError`) before any is validated.
 */
export function decoratedSchedules(registry: WorkflowRegistry): DeclaredSchedule[] {
  const found = registry
    .names()
    .flatMap((workflow) => schedulesMetadataOf(registry.find(workflow)!.type).map((meta) => ({ workflow, meta, name: meta.options?.name ?? workflow })));
  const names = new Set<string>();
  for (const f of found) {
    if (names.has(f.name)) {
      assertValid(`@Schedule on workflow "${f.workflow}"`, [
        problem('name', f.name, 'unique', `two schedules are named "${f.name}"; give each @Schedule a distinct name`),
      ]);
    }
    names.add(f.name);
  }
  return found.map((f) => decorated(f.workflow, f.meta));
}
