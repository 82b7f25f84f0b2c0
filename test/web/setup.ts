/**
 * Vitest global setup: the browser tests serve web/dist, so build it once before any test when
 * a page source changed since the last build (a few seconds; nothing when up to date).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

export default function setup(): void {
  const root = join(import.meta.dirname, '..', '..');
  execFileSync(
    process.execPath,
    ['--experimental-strip-types', join(root, 'web', 'build.ts'), '--if-stale'],
    {
      cwd: root,
      stdio: 'inherit',
    },
  );
}
