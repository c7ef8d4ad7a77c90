import { closeAllApps } from './app';
import { killAllChildren } from './child';
import { setInTest } from './phase';
import { closeDb, dropSchemas } from './db';

// Children and apps created by a test (or its beforeEach) are cleaned up after it; those created in
// a beforeAll live until the file ends.
beforeEach(() => {
  setInTest(true);
});

afterEach(async () => {
  setInTest(false);
  await killAllChildren('test');
  await closeAllApps('test');
});

afterAll(async () => {
  await killAllChildren('all');
  await closeAllApps('all');
  await dropSchemas();
  await closeDb();
});
