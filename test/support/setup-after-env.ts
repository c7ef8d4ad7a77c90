import { closeAllApps } from './app';
import { killAllChildren } from './child';
import { closeDb, dropSchemas } from './db';

afterEach(async () => {
  await killAllChildren();
  await closeAllApps();
});

afterAll(async () => {
  await dropSchemas();
  await closeDb();
});
