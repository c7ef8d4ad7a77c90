import { DynamicModule, MiddlewareConsumer, Module, NestModule } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DurableExceptionFilter, DurableModule, type Duration } from 'nestjs-durable';
import { DurableDashboardModule } from 'nestjs-durable/dashboard';
import { DataSource } from 'typeorm';
import { Article } from './articles/article.entity';
import { ArticlesModule } from './articles/articles.module';
import { EtlModule } from './etl/etl.module';
import { HealthModule } from './health/health.module';
import { MaintenanceModule } from './maintenance/maintenance.module';
import { NewslettersModule } from './newsletters/newsletters.module';
import { RunsModule } from './runs/runs.module';
import { TraceMiddleware } from './telemetry/trace.middleware';

/** Options of {@link AppModule.register}. */
export interface AppOptions {
  databaseUrl: string;
  /** Postgres schema of the durable tables (default `DURABLE_SCHEMA` or `durable`). */
  durableSchema?: string;
  /** How long `process_article` waits for a save made during processing (default `ARTICLE_CATCH_UP_TIMEOUT` or `5m`). */
  catchUpTimeout?: Duration;
}

@Module({})
export class AppModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    // a request span (continuing an incoming traceparent); a no-op without an OpenTelemetry SDK
    consumer.apply(TraceMiddleware).forRoutes('*');
  }

  static register(options: AppOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [
        TypeOrmModule.forRootAsync({
          useFactory: () => ({
            type: 'postgres',
            url: options.databaseUrl,
            entities: [Article],
            // Fine for the sample's own table; the durable schema comes from the module's migrations.
            synchronize: true,
          }),
        }),
        // The module uses the app's DataSource: starts can join the app's transactions.
        DurableModule.forRootAsync({
          inject: [DataSource],
          useFactory: (dataSource: DataSource) => ({
            dataSource,
            schema: options.durableSchema ?? process.env.DURABLE_SCHEMA ?? 'durable',
          }),
        }),
        // Nest's scheduler: the durable schedules' cron jobs show up in its SchedulerRegistry.
        ScheduleModule.forRoot(),
        // The dashboard at /durable, read-write; each action is recorded with its actor. A real app
        // passes `guards` (its auth guard) and takes the actor from its authenticated user.
        DurableDashboardModule.forRoot({
          path: 'durable',
          readOnly: false,
          actor: (req) => headerOf(req, 'x-user') ?? 'sample-app visitor',
        }),
        ArticlesModule.register({ catchUpTimeout: options.catchUpTimeout }),
        EtlModule,
        NewslettersModule,
        MaintenanceModule,
        RunsModule,
        HealthModule,
      ],
      // the module's errors as HTTP answers: 404 for an unknown run, 409 for a taken key, …
      providers: [{ provide: APP_FILTER, useClass: DurableExceptionFilter }],
    };
  }
}

/** A request header's value (the dashboard's `actor` gets the platform's request). */
function headerOf(req: unknown, name: string): string | undefined {
  const value = (req as { headers?: Record<string, string | string[] | undefined> }).headers?.[name];
  return Array.isArray(value) ? value[0] : value;
}
