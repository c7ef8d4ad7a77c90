export { DurableTestEnv, type DurableTestEnvOptions, type RunUntilIdleOptions } from './durable-test-env';
export { sharedTestDatabase, stopSharedTestDatabase, testDatabaseUrl } from './test-database';
