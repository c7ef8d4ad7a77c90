#!/usr/bin/env bash
# The test suite on the previous majors: NestJS 11, @nestjs/schedule 6, @nestjs/terminus 11,
# TypeORM 0.3 and class-validator 0.14 (`npm test` runs it on the current ones).
#
#   scripts/compat-test.sh [jest args…]          e.g. scripts/compat-test.sh test/integration/start.spec.ts
#   scripts/compat-test.sh --update-lock         re-resolve compat/<set>/package.json and save its lock
#
# It installs compat/nest11-typeorm03/package.json (with its lock, `npm ci`) into
# .compat/nest11-typeorm03/ (git-ignored; COMPAT_DIR overrides), copies src/, migrations/, test/,
# jest/ (the shipped Jest transform the suite uses), sample-app/src and the jest/TypeScript configs
# beside it, builds the library there against those
# majors' types (tsc, as `npm test` does) and runs jest there. Every module — the library's sources,
# the tests, the child-process fixtures and the sample app — then resolves Nest, TypeORM and
# class-validator from that folder's node_modules. test/packaging is left out: it checks the packed
# package, which `npm test` does for both pairs; so is test/docs: it compiles and runs the README and
# docs/ as a new app gets them, on the current majors. Needs only npm and the registry. The database is
# chosen as for `npm test` (DATABASE_URL, else an embedded PostgreSQL).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SET="nest11-typeorm03"
SPEC="$ROOT/compat/$SET"
DIR="${COMPAT_DIR:-$ROOT/.compat/$SET}"

update_lock=0
if [[ "${1:-}" == "--update-lock" ]]; then
  update_lock=1
  shift
fi

mkdir -p "$DIR"
cp "$SPEC/package.json" "$DIR/package.json"

# Install: npm ci from the committed lock, skipped when node_modules was installed from that same lock.
stamp="$DIR/node_modules/.compat-lock.sha256"
if ((update_lock)) || [[ ! -f "$SPEC/package-lock.json" ]]; then
  echo "==> compat ($SET): npm install (resolving the lock)"
  rm -f "$DIR/package-lock.json"
  (cd "$DIR" && npm install --no-audit --no-fund)
  cp "$DIR/package-lock.json" "$SPEC/package-lock.json"
  echo "==> compat ($SET): saved $SPEC/package-lock.json"
else
  cp "$SPEC/package-lock.json" "$DIR/package-lock.json"
  want="$(cat "$SPEC/package.json" "$SPEC/package-lock.json" | sha256sum | cut -d' ' -f1)"
  if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
    echo "==> compat ($SET): npm ci"
    (cd "$DIR" && npm ci --no-audit --no-fund)
    echo "$want" >"$stamp"
  else
    echo "==> compat ($SET): node_modules already installed from this lock"
  fi
fi
if ((update_lock)); then
  want="$(cat "$SPEC/package.json" "$SPEC/package-lock.json" | sha256sum | cut -d' ' -f1)"
  echo "$want" >"$stamp"
fi

# The sample app imports the library by name: here that is this folder (package.json main/types).
ln -sfn .. "$DIR/node_modules/nestjs-durable"

# Fresh copies of what the suite needs (files deleted or moved in the repo must not linger).
rm -rf "$DIR/bin" "$DIR/src" "$DIR/migrations" "$DIR/test" "$DIR/jest" "$DIR/sample-app" "$DIR/dist" "$DIR/scripts"
cp -R "$ROOT/bin" "$ROOT/src" "$ROOT/migrations" "$ROOT/test" "$ROOT/jest" "$DIR/"
# the suite's global setup makes sure the browser tests have their Chromium
mkdir -p "$DIR/scripts"
cp "$ROOT/scripts/ensure-chromium.sh" "$DIR/scripts/"
mkdir -p "$DIR/sample-app"
cp -R "$ROOT/sample-app/src" "$ROOT/sample-app/tsconfig.json" "$DIR/sample-app/"
cp "$ROOT/jest.config.js" "$ROOT/tsconfig.json" "$ROOT/tsconfig.build.json" "$DIR/"

(
  cd "$DIR"
  echo "==> compat ($SET): $(node -p '["@nestjs/core", "@nestjs/schedule", "@nestjs/terminus", "typeorm", "class-validator"].map((p) => p + "@" + JSON.parse(require("fs").readFileSync("node_modules/" + p + "/package.json", "utf8")).version).join(", ")')"
  echo "==> compat ($SET): tsc -p tsconfig.build.json"
  node node_modules/typescript/bin/tsc -p tsconfig.build.json
  echo "==> compat ($SET): jest"
  # (the option last: it takes a list, and would swallow the test paths that followed it)
  node node_modules/jest/bin/jest.js "$@" --testPathIgnorePatterns /test/packaging/ /test/docs/
)
