#!/usr/bin/env node
'use strict';
// The `nestjs-durable` command (package.json "bin"): the compiled CLI, see docs/cli.md. A committed,
// executable file of its own, so the command's mode does not depend on how dist/ was built.
require('../dist/src/cli/main.js');
