// A consumer of the packed nestjs-durable, as docs/install.md sets one up: the app's own TypeORM
// DataSource through @nestjs/typeorm, handed to DurableModule.forRootAsync. Compiled by
// test/packaging/install.spec.ts (strict, skipLibCheck: false) as an ES module app or a CommonJS
// one, then run with node: it starts a keyed run inside a transaction that commits and one inside
// a transaction that rolls back, waits for the first, asks the health indicator (terminus need not be
// installed), and prints one `RESULT <json>` line.
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { DurableHealthIndicator, DurableModule, DurableService, Step, Workflow, type RunContext, type RunInfo } from 'nestjs-durable';

const env = process.env;

@Injectable()
export class Greeter {
  greet(name: string): string {
    return `hello, ${name}`;
  }
}

@Workflow('packaging_greet')
export class GreetWorkflow {
  constructor(private readonly greeter: Greeter) {}

  @Step()
  async prepare(ctx: RunContext<{ name: string }>) {
    ctx.put('name', ctx.input.name.trim());
  }

  @Step()
  async greet(ctx: RunContext<{ name: string }>) {
    return { greeting: this.greeter.greet(ctx.get<string>('name') ?? '?') };
  }
}

@Module({
  imports: [
    TypeOrmModule.forRootAsync({ useFactory: () => ({ type: 'postgres' as const, url: env.DATABASE_URL, autoLoadEntities: true }) }),
    DurableModule.forRootAsync({
      inject: [DataSource],
      useFactory: (dataSource: DataSource) => ({ dataSource, schema: env.DURABLE_SCHEMA, worker: { pollInterval: '200ms' } }),
    }),
  ],
  providers: [Greeter, GreetWorkflow],
})
export class AppModule {}

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
  app.enableShutdownHooks();
  const durable = app.get(DurableService);
  const dataSource = app.get(DataSource);

  const started = await dataSource.transaction((manager) => durable.start(GreetWorkflow, { name: ' world ' }, { key: 'greet:world', manager }));
  let rolledBackRunId: string | undefined;
  await dataSource
    .transaction(async (manager) => {
      rolledBackRunId = (await durable.start('packaging_greet', { name: 'nobody' }, { key: 'greet:nobody', manager })).runId;
      throw new Error('roll back');
    })
    .catch((err: Error) => {
      if (err.message !== 'roll back') throw err;
    });

  const done: RunInfo = await durable.waitForRun(started.runId, { timeout: '30s' });
  const rolledBack = rolledBackRunId === undefined ? 'not started' : await durable.getRun(rolledBackRunId);
  const health = (await app.get(DurableHealthIndicator).isHealthy('durable')).durable.status;
  const nodeVersions = { node: process.version, moduleSystem: typeof require === 'function' ? 'commonjs' : 'esm' };
  process.stdout.write(
    `RESULT ${JSON.stringify({ outcome: started.outcome, status: done.status, key: done.key, result: done.result, rolledBack, health, ...nodeVersions })}\n`,
  );
  await app.close();
}

main().catch((err: unknown) => {
  process.stdout.write(`FAILED ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
