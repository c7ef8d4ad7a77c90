import { DynamicModule, MiddlewareConsumer, Module, NestModule, Provider } from '@nestjs/common';
import { RouterModule } from '@nestjs/core';
import { RESOLVED_OPTIONS } from '../core/durable.constants';
import { assertValid, unknownOptionProblems } from '../domain/validation';
import type { ResolvedOptions } from '../options/resolve-options';
import { DashboardStore } from '../store/dashboard.store';
import { ActionsController } from './actions.controller';
import { AssetsController } from './assets.controller';
import { DashboardContext } from './dashboard.context';
import { DashboardGuard } from './dashboard.guard';
import { DashboardHeaders } from './dashboard.headers';
import { checkDashboardOptions, DASHBOARD_OPTIONS, type DurableDashboardAsyncOptions, type DurableDashboardOptions } from './dashboard.options';
import { DashboardReads } from './dashboard-reads';
import { OverviewSlash } from './overview-slash';
import { PagesController } from './pages.controller';
import { RunsController } from './runs.controller';

const CONTROLLERS = [RunsController, PagesController, ActionsController, AssetsController];

/** The dashboard's statements, made once for the module's schema: the pages' reads and the actions' records share them. */
const dashboardStore: Provider = {
  provide: DashboardStore,
  inject: [RESOLVED_OPTIONS],
  useFactory: (o: ResolvedOptions) => new DashboardStore(o.schema),
};

/**
 * The dashboard: plain Nest controllers mounted with `RouterModule` at `path` (default
 * `'durable'`), so the app's global prefix, guards, filters and interceptors apply, plus the
 * `guards` given here. Read-only unless `readOnly: false`. Import it next to `DurableModule`.
 */
@Module({})
export class DurableDashboardModule implements NestModule {
  /** Mounts the dashboard with these options. */
  static forRoot(options: DurableDashboardOptions = {}): DynamicModule {
    checkDashboardOptions(options);
    const path = options.path ?? 'durable';
    return DurableDashboardModule.build(path, { provide: DASHBOARD_OPTIONS, useValue: { ...options, path } }, []);
  }

  /** Mounts the dashboard at `path` with options from a factory (e.g. guards from the app's config). */
  static forRootAsync(options: DurableDashboardAsyncOptions): DynamicModule {
    assertValid('DurableDashboardModule.forRootAsync', unknownOptionProblems(options, ['path', 'imports', 'inject', 'useFactory']));
    const path = options.path ?? 'durable';
    const provider: Provider = {
      provide: DASHBOARD_OPTIONS,
      inject: options.inject ?? [],
      useFactory: async (...args: never[]) => ({ ...checkDashboardOptions(await options.useFactory(...args), false), path }),
    };
    return DurableDashboardModule.build(path, provider, options.imports ?? []);
  }

  private static build(path: string, optionsProvider: Provider, imports: NonNullable<DynamicModule['imports']>): DynamicModule {
    return {
      module: DurableDashboardModule,
      imports: [...imports, RouterModule.register([{ path, module: DurableDashboardModule }])],
      controllers: CONTROLLERS,
      providers: [optionsProvider, dashboardStore, DashboardContext, DashboardReads, DashboardGuard, OverviewSlash],
    };
  }

  /** The security headers on every dashboard response, set before the app's and the dashboard's guards run. */
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(DashboardHeaders).forRoutes(...CONTROLLERS);
  }
}
