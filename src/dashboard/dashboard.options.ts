import type { CanActivate, ModuleMetadata, Type } from '@nestjs/common';
import type { Duration } from '../domain/duration';
import { assertValid, optionNames, unknownOptionProblems } from '../domain/validation';

/** What a dashboard action does; `authorize` is asked about each. */
export type DashboardAction = 'cancel' | 'retry' | 'rerun' | 'releaseKey' | 'provideInput' | 'sendEvent' | 'triggerSchedule' | 'pause' | 'resume' | 'rerunFlow';

/** Options of `DurableDashboardModule.forRoot` (see docs/dashboard.md). */
export interface DurableDashboardOptions {
  /** Where it is mounted, under the app's global prefix (default `'durable'`). */
  path?: string;
  /** Guards applied to every dashboard route (classes are resolved from the app, or made once). */
  guards?: (Type<CanActivate> | CanActivate)[];
  /** Default true: actions are not shown and every POST answers 403. */
  readOnly?: boolean;
  /** Asked before each action (when not read-only); false answers 403. */
  authorize?: (action: DashboardAction, req: unknown) => boolean | Promise<boolean>;
  /** Who acts, recorded with every action (activity kind `dashboard_action`). */
  actor?: (req: unknown) => string | null | undefined | Promise<string | null | undefined>;
  /** Bound of each dashboard read on the database (default `'5s'`). */
  statementTimeout?: Duration;
  /** How often live parts of a page refresh while the tab is visible (default `'5s'`; 0: never). */
  refreshInterval?: Duration;
}

/** Options of `DurableDashboardModule.forRootAsync`. `path` is needed to mount the routes, so it is given here, not by the factory. */
export interface DurableDashboardAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  path?: string;
  inject?: (string | symbol | Type<unknown>)[];
  useFactory: (...args: never[]) => Omit<DurableDashboardOptions, 'path'> | Promise<Omit<DurableDashboardOptions, 'path'>>;
}

/** Injection token of the dashboard's options (`DurableDashboardOptions`, path resolved). */
export const DASHBOARD_OPTIONS = Symbol('nestjs-durable:dashboard-options');

const DASHBOARD_OPTION_NAMES = optionNames<DurableDashboardOptions>({
  path: true,
  guards: true,
  readOnly: true,
  authorize: true,
  actor: true,
  statementTimeout: true,
  refreshInterval: true,
});

/** Refuses misspelt option names (`DurableValidationError` naming the nearest option); returns the options. */
export function checkDashboardOptions<T extends object>(options: T, allowPath = true): T {
  const names = allowPath ? DASHBOARD_OPTION_NAMES : DASHBOARD_OPTION_NAMES.filter((n) => n !== 'path');
  assertValid('DurableDashboardModule', unknownOptionProblems(options, names));
  return options;
}
