import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DurableModule } from 'nestjs-durable';
import { DataSource } from 'typeorm';
import { Article } from './articles/article.entity';
import { ArticlesModule } from './articles/articles.module';
import { DurableErrorFilter } from './common/durable-error.filter';
import { HealthModule } from './health/health.module';
import { RunsModule } from './runs/runs.module';

export interface AppOptions {
  databaseUrl: string;
}

@Module({})
export class AppModule {
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
          useFactory: (dataSource: DataSource) => ({ dataSource }),
        }),
        ArticlesModule,
        RunsModule,
        HealthModule,
      ],
      providers: [{ provide: APP_FILTER, useClass: DurableErrorFilter }],
    };
  }
}
