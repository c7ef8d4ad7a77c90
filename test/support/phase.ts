/**
 * Whether a test (or its beforeEach/afterEach) is running, as opposed to beforeAll/afterAll: apps and
 * children created inside a test are cleaned up after it, those created in beforeAll after the file.
 */
let inTest = false;

export function setInTest(value: boolean): void {
  inTest = value;
}

export function currentScope(): 'test' | 'file' {
  return inTest ? 'test' : 'file';
}
