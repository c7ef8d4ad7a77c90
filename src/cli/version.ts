import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The version in the package's own package.json, found from this file up (`src/cli` run from
 * source, `dist/src/cli` built and installed).
 */
export function packageVersion(): string {
  for (let dir = __dirname; ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'nestjs-durable' && typeof pkg.version === 'string') return pkg.version;
    }
    if (dirname(dir) === dir) throw new Error('nestjs-durable: its package.json was not found above the CLI');
  }
}
