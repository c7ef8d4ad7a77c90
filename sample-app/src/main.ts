import 'reflect-metadata';
import { INestApplication, Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';
import { Database, openDatabase } from './database/database.config';
import { setupTracing } from './telemetry/tracing';
import { startupFailure } from './startup-refused';

// before the app is built: OTEL_TRACES_EXPORTER=console prints every span
setupTracing();

const logger = new Logger('SampleApp');

async function bootstrap(): Promise<void> {
  let database: Database | undefined;
  let app: INestApplication | undefined;
  let stopping = false;

  // On SIGINT/SIGTERM: close the app first (the durable worker stops claiming and lets
  // running steps finish), then stop the embedded PostgreSQL. A second signal exits at once.
  const shutdown = async (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn(`${signal} again: exiting without waiting`);
      process.exit(1);
    }
    stopping = true;
    logger.log(`${signal}: shutting down`);
    let code = 0;
    try {
      await app?.close();
    } catch (error) {
      code = 1;
      logger.error(`closing the app failed: ${describe(error)}`);
    }
    try {
      await database?.stop();
    } catch (error) {
      code = 1;
      logger.error(`stopping PostgreSQL failed: ${describe(error)}`);
    }
    process.exit(code);
  };
  process.on('SIGINT', (s) => void shutdown(s));
  process.on('SIGTERM', (s) => void shutdown(s));

  try {
    database = await openDatabase();
    if (stopping) return;
    app = await NestFactory.create(AppModule.register({ databaseUrl: database.url }), { abortOnError: false });
    if (stopping) return;
    const port = Number(process.env.PORT ?? 3000);
    await app.listen(port);
    logger.log(`Listening on http://localhost:${port}`);
    logger.log(`Dashboard: http://localhost:${port}/durable`);
  } catch (error) {
    await app?.close().catch(() => undefined);
    await database?.stop().catch(() => undefined);
    throw error;
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

bootstrap().catch((error) => {
  logger.error(`startup failed: ${startupFailure(error)}`);
  process.exit(1);
});
