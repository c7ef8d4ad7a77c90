import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule, type AppOptions } from '../../sample-app/src/app.module';
import { databaseUrl, freshSchema } from './db';

/** The sample app listening on a free port of 127.0.0.1, on its own durable schema (`options`: the rest of its {@link AppOptions}). */
export async function startSampleApp(
  url = databaseUrl(),
  options: Omit<AppOptions, 'databaseUrl' | 'durableSchema'> = {},
): Promise<{ app: INestApplication; base: string }> {
  const app = await NestFactory.create(AppModule.register({ ...options, databaseUrl: url, durableSchema: freshSchema() }), { logger: false });
  await app.listen(0, '127.0.0.1');
  return { app, base: (await app.getUrl()).replace('[::1]', '127.0.0.1') };
}

/** One HTTP call (with extra `headers`); the body is parsed as JSON when it is JSON. */
export async function call(base: string, method: string, route: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}${route}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: any = text; // eslint-disable-line @typescript-eslint/no-explicit-any
  try {
    parsed = JSON.parse(text);
  } catch {
    /* text/plain */
  }
  return { status: res.status, body: parsed, type: res.headers.get('content-type'), headers: res.headers };
}
