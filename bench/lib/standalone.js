'use strict';
// Shared by the standalone scripts (keys.js, statements.js): a one-step workflow class written the
// way a plain-JS user would (decorators applied by hand).

/** A workflow `name` whose one step calls `onRun` (if given) and returns null. */
function oneStepWorkflow(lib, name, options, onRun) {
  const C = class {
    async run() {
      if (onRun) onRun();
      return null;
    }
  };
  Object.defineProperty(C, 'name', { value: name });
  lib.Step()(C.prototype, 'run', Object.getOwnPropertyDescriptor(C.prototype, 'run'));
  lib.Workflow(name, options)(C);
  return C;
}

module.exports = { oneStepWorkflow };
