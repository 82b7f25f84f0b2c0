/**
 * Test-only stand-in for `baton mcp`: `node mcp-stdio-entry.ts <sqlite file> [project]` opens the
 * store, creates the project (idempotent) and serves MCP over stdio as a local, writing principal.
 */
import process from 'node:process';
import { systemClock } from '../../src/core/clock.ts';
import { runStdioMcp } from '../../src/mcp/stdio.ts';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';

const [path, project_id = 'local'] = process.argv.slice(2);
if (!path) {
  process.stderr.write('usage: mcp-stdio-entry.ts <sqlite file> [project]\n');
  process.exit(2);
}
const store = await openSqliteStore({ path, synchronous: 'normal' });
try {
  await store.createProject(project_id);
  await runStdioMcp({
    deps: { store, clock: systemClock },
    principal: { project_id, token_id: 'local', read_only: false },
  });
} finally {
  await store.close();
}
