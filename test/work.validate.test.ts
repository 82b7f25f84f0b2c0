/** Every rejection of the spec's contract validation list, each naming its rule and the offending id. */
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openedInside, workspaceChecker } from '../src/app/workspace-paths.ts';
import { BatonError } from '../src/core/errors.ts';
import { sessionIdSchema } from '../src/core/ledger/names.ts';
import { sessionEntrySchemas } from '../src/core/work/session.ts';
import type { WorkContract } from '../src/core/work/model.ts';
import { validateContract, validationRules, type ValidationContext } from '../src/core/work/validate.ts';
import { contract } from './helpers/work.ts';

const workspace = mkdtempSync(join(tmpdir(), 'baton-workspace-'));
mkdirSync(join(workspace, 'src'));
const outside = mkdtempSync(join(tmpdir(), 'baton-outside-'));
symlinkSync(outside, join(workspace, 'escape'));

function context(overrides: Partial<ValidationContext> = {}): ValidationContext {
  return {
    max_items: 20,
    max_revisions: 8,
    owners: new Set(['parent_agent', 'worker', 'flow', 'tool', 'human']),
    tools: new Set(['read_file', 'run_tests']),
    flows: new Set(['release']),
    capabilities: new Set(['fs.write']),
    write: true,
    insideWorkspace: workspaceChecker(workspace),
    ...overrides,
  };
}

function rejects(value: WorkContract, rule: string, id: string, ctx = context()): void {
  let caught: unknown;
  try {
    validateContract(value, ctx);
  } catch (error) {
    caught = error;
  }
  expect(caught, `expected ${rule}`).toBeInstanceOf(BatonError);
  expect((caught as BatonError).code).toBe('invalid_input');
  expect((caught as BatonError).data).toEqual({ rule, id });
}

const item = (item_id: string, more: Record<string, unknown> = {}) => ({
  item_id,
  title: item_id,
  criterion_ids: ['tests'],
  ...more,
});

describe('contract validation', () => {
  const tested = new Set<string>();
  const rule = (name: string) => {
    tested.add(name);
    return name;
  };

  it('accepts the reference contract', () => {
    expect(() => validateContract(contract(), context())).not.toThrow();
  });

  it('rejects an empty objective', () => {
    rejects(contract({ objective: '  \n' }), rule('empty_objective'), 'work-1');
  });

  it('rejects an item whose title is only white space', () => {
    rejects(contract({ items: [item('a', { title: ' \t ' })] }), rule('empty_title'), 'a');
  });

  it('rejects an item that names one dependency or criterion twice', () => {
    rejects(contract({ items: [item('a'), item('b', { dependencies: ['a', 'a'] })] }), 'duplicate_id', 'a');
    rejects(contract({ items: [item('a', { criterion_ids: ['tests', 'tests'] })] }), 'duplicate_id', 'tests');
  });

  it('rejects duplicate ids of items, criteria, constraints and assumptions', () => {
    rejects(contract({ items: [item('a'), item('a')] }), rule('duplicate_id'), 'a');
    const base = contract();
    rejects(
      contract({ criteria: [base.criteria[1]!, base.criteria[1]!], items: [item('a')] }),
      'duplicate_id',
      'tests',
    );
    rejects(
      contract({
        constraints: [
          { constraint_id: 'k', text: 'x' },
          { constraint_id: 'k', text: 'y' },
        ],
      }),
      'duplicate_id',
      'k',
    );
  });

  it('rejects unknown dependencies and cycles', () => {
    rejects(contract({ items: [item('a', { dependencies: ['nope'] })] }), rule('unknown_dependency'), 'a');
    rejects(
      contract({ items: [item('a', { dependencies: ['b'] }), item('b', { dependencies: ['a'] })] }),
      rule('dependency_cycle'),
      'a',
    );
    rejects(contract({ items: [item('self', { dependencies: ['self'] })] }), 'dependency_cycle', 'self');
  });

  it('rejects an unknown criterion and a required item without a required criterion', () => {
    rejects(contract({ items: [item('a', { criterion_ids: ['ghost'] })] }), rule('unknown_criterion'), 'a');
    rejects(contract({ items: [item('a', { criterion_ids: [] })] }), rule('missing_required_criteria'), 'a');
    const optional = contract({
      criteria: [
        { criterion_id: 'nice', statement: 's', kind: { type: 'semantic', statement: 's' }, required: false },
      ],
      items: [item('a', { criterion_ids: ['nice'] })],
    });
    rejects(optional, 'missing_required_criteria', 'a');
  });

  it('rejects unsupported owners, tools and flows', () => {
    rejects(
      contract({ items: [item('a', { owner: { type: 'worker' } })] }),
      rule('unsupported_owner'),
      'a',
      context({ owners: new Set(['parent_agent']) }),
    );
    rejects(
      contract({ items: [item('a', { owner: { type: 'tool', name: 'deploy' } })] }),
      rule('unsupported_tool'),
      'a',
    );
    rejects(
      contract({ items: [item('a', { owner: { type: 'flow', name: 'nightly' } })] }),
      rule('unsupported_flow'),
      'a',
    );
    const toolCriterion = contract({
      criteria: [{ criterion_id: 'tests', statement: 's', kind: { type: 'tool_succeeded', tool: 'deploy' } }],
      items: [item('a')],
    });
    rejects(toolCriterion, 'unsupported_tool', 'tests');
    const flowCriterion = contract({
      criteria: [
        { criterion_id: 'tests', statement: 's', kind: { type: 'flow_completed', flow: 'nightly' } },
      ],
      items: [item('a')],
    });
    rejects(flowCriterion, 'unsupported_flow', 'tests');
  });

  it('rejects paths outside the workspace after resolving .. and symbolic links', () => {
    rejects(
      contract({ items: [item('a', { path_claims: ['../elsewhere'] })] }),
      rule('path_outside_workspace'),
      'a',
    );
    rejects(
      contract({ items: [item('a', { path_claims: ['/etc/passwd'] })] }),
      'path_outside_workspace',
      'a',
    );
    rejects(
      contract({ items: [item('a', { path_claims: ['src/../../x'] })] }),
      'path_outside_workspace',
      'a',
    );
    rejects(
      contract({ items: [item('a', { path_claims: ['escape/new-file.txt'] })] }),
      'path_outside_workspace',
      'a',
    );
    const fileCriterion = contract({
      criteria: [{ criterion_id: 'tests', statement: 's', kind: { type: 'file_exists', path: 'escape/x' } }],
      items: [item('a')],
    });
    rejects(fileCriterion, 'path_outside_workspace', 'tests');
    expect(() =>
      validateContract(
        contract({ items: [item('a', { path_claims: ['src/new/deep.ts', join(workspace, 'src')] })] }),
        context(),
      ),
    ).not.toThrow();
  });

  it('rejects more items or revisions than configured', () => {
    const many = contract({ items: Array.from({ length: 4 }, (_, index) => item(`i${index}`)) });
    rejects(many, rule('too_many_items'), 'work-1', context({ max_items: 3 }));
    rejects(contract({ items: [] }), 'too_many_items', 'work-1');
    rejects(contract({ revision: 9 }), rule('too_many_revisions'), 'work-1');
  });

  it('rejects permission or capability escalation', () => {
    rejects(
      contract({ items: [item('a', { readonly: false })] }),
      rule('capability_escalation'),
      'a',
      context({ write: false }),
    );
    rejects(
      contract({ items: [item('a', { readonly: true, capabilities: ['net.egress'] })] }),
      'capability_escalation',
      'a',
    );
    expect(() =>
      validateContract(contract({ items: [item('a', { readonly: true })] }), context({ write: false })),
    ).not.toThrow();
  });

  it('covers every rule of the validation list', () => {
    expect([...tested].sort()).toEqual([...validationRules].sort());
  });
});

describe('session ids', () => {
  it('refuses "." and ".." as new session ids but still reads a session header that holds one', () => {
    for (const id of ['.', '..']) {
      expect(sessionIdSchema.safeParse(id).success).toBe(false);
      const header = sessionEntrySchemas.session_header.safeParse({
        schema: 'baton.session-header/v1',
        session_id: id,
        parent_session_id: id,
      });
      expect(header.success, `a ledger written before the rule holds session "${id}"`).toBe(true);
    }
    expect(sessionIdSchema.safeParse('run-1').success).toBe(true);
  });
});

describe('an opened file inside the workspace', () => {
  it('is judged by what was opened, not by the name: a link out of the workspace is outside', async () => {
    writeFileSync(join(workspace, 'src', 'notes.md'), 'inside\n');
    writeFileSync(join(outside, 'secret.txt'), 'outside\n');
    const cases: [string, string, boolean][] = [
      [join(workspace, 'src', 'notes.md'), 'src/notes.md', true],
      [join(workspace, 'escape', 'secret.txt'), 'escape/secret.txt', false],
      // The name says inside, but the handle holds the file outside: a swapped link.
      [join(outside, 'secret.txt'), 'src/notes.md', false],
    ];
    for (const [opened, named, inside] of cases) {
      const handle = await open(opened, 'r');
      try {
        expect({ opened, inside: await openedInside(workspace, handle, named) }).toEqual({ opened, inside });
      } finally {
        await handle.close();
      }
    }
  });
});
