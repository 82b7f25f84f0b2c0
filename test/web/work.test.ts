/**
 * The managed-work view in Chromium against a real server: the sessions list, one session's
 * work as the ledger projects it (objective, revision, item status, owner, child session,
 * blocker, criteria with verdicts, evidence links), live updates from changes another client
 * makes, reconnection after the stream breaks (the snapshot reloaded, the change made meanwhile
 * shown), a person's cancel and retry, a read-only session, an unknown session, inert stored
 * text and the phone layout.
 */
import type { Page } from 'playwright-core';
import { beforeEach, describe, expect, it } from 'vitest';
import { createToken } from '../../src/app/auth.ts';
import { sessionStream, startSession, transitionItem, type WorkSnapshot } from '../../src/app/work.ts';
import type { WorkItemStatus } from '../../src/core/work/model.ts';
import { logIn, phone, project_id, screenshot, type WebServer, browserSuite } from './harness.ts';
import { contractBody, revisedBody } from '../helpers/work-surface.ts';

const hostile = '<img src=x onerror="window.__hacked=1">';

/** A session with contract c1: inspect (ready) then implement (after it), one criterion each. */
async function seedSession(web: WebServer, session_id = 'fix-login'): Promise<WorkSnapshot> {
  await web.client.post('/v1/sessions', { session_id, work_mode: 'managed' });
  return web.client.post<WorkSnapshot>(`/v1/sessions/${session_id}/work/contracts`, {
    contract_id: 'c1',
    objective: `Fix the login redirect ${hostile}`,
    constraints: [{ constraint_id: 'no-db', text: 'no schema change' }],
    criteria: [
      {
        criterion_id: 'notes',
        statement: 'the redirect is mapped',
        kind: { type: 'file_exists', path: 'notes.md' },
      },
      {
        criterion_id: 'tests',
        statement: 'the login tests pass',
        kind: { type: 'shell', command: 'npm test' },
      },
    ],
    items: [
      { item_id: 'inspect', title: `Inspect the redirect ${hostile}`, criterion_ids: ['notes'] },
      {
        item_id: 'implement',
        title: 'Fix the redirect',
        dependencies: ['inspect'],
        criterion_ids: ['tests'],
      },
    ],
  });
}

/** The agent working the session moves an item, as its MCP tools would (the model's moves). */
async function agentMoves(
  web: WebServer,
  item_id: string,
  to: WorkItemStatus,
  reason?: string,
): Promise<void> {
  await transitionItem(
    web.deps,
    project_id,
    { session_id: 'fix-login', revision: 1, item_id, to, ...(reason === undefined ? {} : { reason }) },
    { type: 'model', id: 'agent' },
  );
}

function item(page: Page, item_id: string) {
  return page.locator(`[data-item="${item_id}"]`);
}

async function openSession(page: Page, session_id: string): Promise<void> {
  await page.evaluate(`location.hash = ${JSON.stringify(`#/work/${encodeURIComponent(session_id)}`)}`);
  await page.locator('[data-live="live"]').waitFor();
}

describe('the managed-work view', () => {
  const suite = browserSuite();
  const { open } = suite;
  let web: WebServer;
  beforeEach(() => {
    web = suite.web;
  });

  it('lists the sessions and shows one live: each change another client makes appears without a reload', async () => {
    await seedSession(web);
    await web.client.post('/v1/sessions', { session_id: 'fix-login-tests', parent_session_id: 'fix-login' });
    const { page, problems } = await open();
    await logIn(page, web);
    await page.getByRole('link', { name: 'Managed work' }).click();
    await page.getByRole('heading', { name: 'Managed work sessions' }).waitFor();
    const card = page.locator('[data-session="fix-login"]');
    await expect(card.locator('.contract-id').textContent()).resolves.toBe('Contract c1 · revision 1');
    await expect(card.locator('.badge[data-status="active"]').count()).resolves.toBe(1);
    await expect(card.textContent()).resolves.toContain('0 of 2 criteria passed');
    await expect(page.locator('[data-session="fix-login-tests"]').textContent()).resolves.toContain(
      'child of fix-login',
    );
    await screenshot(page, 'work-sessions');

    await card.getByRole('link', { name: 'fix-login' }).click();
    await page.locator('[data-live="live"]').waitFor();
    await expect(page.locator('.objective-text').textContent()).resolves.toBe(
      `Fix the login redirect ${hostile}`,
    );
    await expect(item(page, 'inspect').getAttribute('data-status')).resolves.toBe('ready');
    await expect(item(page, 'implement').getAttribute('data-status')).resolves.toBe('proposed');
    await expect(item(page, 'inspect').locator('.item-title').textContent()).resolves.toBe(
      `Inspect the redirect ${hostile}`,
    );
    await expect(item(page, 'implement').textContent()).resolves.toContain('after inspect');
    await expect(item(page, 'inspect').locator('.owner').textContent()).resolves.toBe('parent_agent');

    // The agent and another client move the work on; the page follows from the event stream.
    const base = '/v1/sessions/fix-login/work/items';
    await agentMoves(web, 'inspect', 'running');
    await page.locator('[data-item="inspect"][data-status="running"]').waitFor();
    await web.client.post(`${base}/inspect/reassign`, {
      owner: { type: 'worker' },
      child_session_id: 'fix-login-tests',
    });
    await item(page, 'inspect').getByRole('link', { name: 'fix-login-tests' }).waitFor();
    await expect(item(page, 'inspect').locator('.owner').textContent()).resolves.toBe('worker');
    await web.client.post(`${base}/inspect/evidence`, {
      revision: 1,
      evidence: { type: 'child_session', session_id: 'fix-login-tests' },
    });
    await web.client.post(`${base}/inspect/evidence`, {
      revision: 1,
      evidence: { type: 'ledger_entry', session_id: 'nowhere', entry_id: 'e-1' },
    });
    const evidence = item(page, 'inspect').locator('.evidence-list li');
    // Waited for through a locator: a string predicate polled by waitForFunction is evaluated
    // as code, which the page's Content Security Policy refuses (no unsafe-eval).
    await evidence.nth(1).waitFor();
    expect(await evidence.count()).toBe(2);
    await expect(evidence.nth(0).getByRole('link').textContent()).resolves.toBe(
      'child_session fix-login-tests',
    );
    await expect(evidence.nth(1).textContent()).resolves.toContain('unavailable (missing_session)');
    await agentMoves(web, 'inspect', 'blocked', 'the staging login is down');
    await page.locator('[data-item="inspect"][data-status="blocked"]').waitFor();
    await expect(item(page, 'inspect').locator('.blocker').textContent()).resolves.toBe(
      'the staging login is down',
    );

    // The evidence link opens the child session's own work.
    await evidence.nth(0).getByRole('link').click();
    await page.getByRole('heading', { name: 'fix-login-tests' }).waitFor();
    await expect(page.getByText('No work contract in this session yet.').count()).resolves.toBe(1);
    await page.goBack();
    await page.locator('[data-item="inspect"][data-status="blocked"]').waitFor();
    await screenshot(page, 'work-session', { fullPage: true });

    expect(await page.evaluate('window.__hacked')).toBeUndefined();
    expect(problems.errors).toEqual([]);
  });

  it('cancels an item only after a confirmation, and retries it', async () => {
    await seedSession(web);
    const { page, problems } = await open();
    await logIn(page, web);
    await openSession(page, 'fix-login');
    const inspect = item(page, 'inspect');
    await inspect.getByRole('button', { name: 'Cancel' }).click();
    // Nothing is written until the second click.
    await inspect.getByRole('button', { name: 'Keep it' }).click();
    let work = await web.client.call<WorkSnapshot>('GET', '/v1/sessions/fix-login/work');
    expect(work.contract!.items.find((state) => state.item_id === 'inspect')!.status).toBe('ready');
    await inspect.getByRole('button', { name: 'Cancel' }).click();
    await inspect.getByRole('button', { name: 'Confirm: cancel inspect' }).click();
    await page.locator('[data-item="inspect"][data-status="cancelled"]').waitFor();
    work = await web.client.call<WorkSnapshot>('GET', '/v1/sessions/fix-login/work');
    expect(work.contract!.items.find((state) => state.item_id === 'inspect')!.status).toBe('cancelled');

    await inspect.getByRole('button', { name: 'Retry' }).click();
    await inspect.getByText('attempt 2').waitFor();
    work = await web.client.call<WorkSnapshot>('GET', '/v1/sessions/fix-login/work');
    const retried = work.contract!.items.find((state) => state.item_id === 'inspect')!;
    expect(retried.attempt).toBe(2);
    expect(retried.status).not.toBe('cancelled');
    await expect(inspect.getAttribute('data-status')).resolves.toBe(retried.status);
    expect(problems.errors).toEqual([]);
  });

  it('lets a person confirm a contract, answering its assumption at the revision they read', async () => {
    await web.client.post('/v1/sessions', { session_id: 'fix-login', work_mode: 'managed' });
    await web.client.post('/v1/sessions/fix-login/work/contracts', contractBody);
    const { page, problems } = await open();
    await logIn(page, web);
    await openSession(page, 'fix-login');
    const form = page.getByRole('form', { name: 'Confirm the contract' });
    await expect(page.locator('.contract > h2 .badge').getAttribute('data-status')).resolves.toBe(
      'awaiting_input',
    );
    const answer = form.getByRole('textbox', { name: 'Your answer to db' });
    await answer.fill('staging, seeded last night');
    // The contract is revised while the person answers: they read it before they confirm it.
    await web.client.post('/v1/sessions/fix-login/work/revise', {
      ...revisedBody,
      previous_revision: 1,
      assumptions: contractBody.assumptions,
    });
    await form.getByText('You are answering revision 1; revision 2 is current now.').waitFor();
    expect(await form.getByRole('button', { name: 'Confirm revision 1' }).isDisabled()).toBe(true);
    await form.getByRole('button', { name: 'I have read revision 2' }).click();
    await expect(answer.inputValue()).resolves.toBe('staging, seeded last night');
    await form.getByRole('button', { name: 'Confirm revision 2' }).click();
    await page.locator('.contract > h2 .badge[data-status="active"]').waitFor();
    expect(await page.getByRole('form', { name: 'Confirm the contract' }).count()).toBe(0);
    const work = await web.client.call<WorkSnapshot>('GET', '/v1/sessions/fix-login/work');
    expect(work.contract).toMatchObject({ revision: 2, status: 'active' });
    expect(work.contract!.contract.assumptions).toEqual([
      expect.objectContaining({ assumption_id: 'db', resolution: 'staging, seeded last night' }),
    ]);
    expect(problems.errors).toEqual([]);
  });

  it('shows a refusal next to the item, and the work as it now is', async () => {
    await seedSession(web);
    const { page } = await open();
    await logIn(page, web);
    // No live stream: the page shows the snapshot it loaded and nothing newer.
    await page.route('**/v1/sessions/fix-login/events*', (route) => route.abort());
    await page.evaluate(`location.hash = '#/work/fix-login'`);
    await page.locator('[data-item="implement"][data-status="proposed"]').waitFor();
    await web.client.post('/v1/sessions/fix-login/work/items/implement/cancel', {});
    const implement = item(page, 'implement');
    await implement.getByRole('button', { name: 'Cancel' }).click();
    await implement.getByRole('button', { name: 'Confirm: cancel implement' }).click();
    await expect(implement.getByRole('alert').textContent()).resolves.toMatch(/^Not done: conflict: /);
    // The refusal loads the snapshot again: the item shows as the other client left it.
    await page.locator('[data-item="implement"][data-status="cancelled"]').waitFor();
    const work = await web.client.call<WorkSnapshot>('GET', '/v1/sessions/fix-login/work');
    expect(work.contract!.items.find((state) => state.item_id === 'implement')!.status).toBe('cancelled');
  });

  it('reconnects after the stream breaks: the snapshot is loaded again and the change made meanwhile shows', async () => {
    await seedSession(web);
    const { page, problems } = await open();
    await logIn(page, web);
    let refused = 0;
    await page.route('**/v1/sessions/fix-login/events*', async (route) => {
      if (refused < 1) {
        refused += 1;
        await route.abort('connectionreset');
      } else {
        await route.continue();
      }
    });
    await page.evaluate(`location.hash = '#/work/fix-login'`);
    await page.locator('[data-live="retrying"]').waitFor();
    await expect(page.locator('[data-live="retrying"]').textContent()).resolves.toBe(
      'Live updates interrupted; reconnecting in 2 s',
    );
    await agentMoves(web, 'inspect', 'running');
    await page.locator('[data-live="live"]').waitFor();
    await page.locator('[data-item="inspect"][data-status="running"]').waitFor();
    expect(refused).toBe(1);
    // The page's failed request is the only error it met.
    expect(problems.errors.filter((error) => !error.includes('net::ERR_CONNECTION_RESET'))).toEqual([]);
  });

  it('gives a read-only session no way to change the work, and says so for an unknown session', async () => {
    await seedSession(web);
    const { token } = await createToken(web.deps, { project_id, read_only: true, label: 'reader' });
    const { page, problems } = await open();
    await logIn(page, web, token);
    await openSession(page, 'fix-login');
    const cancel = item(page, 'implement').getByRole('button', { name: 'Cancel' });
    expect(await cancel.isDisabled()).toBe(true);
    expect(await cancel.getAttribute('title')).toContain('read-only');

    // A session without work that ended says so.
    await web.client.post('/v1/sessions', { session_id: 'bare' });
    await web.client.post('/v1/sessions/bare/end', { status: 'aborted' });
    await openSession(page, 'bare');
    await page.getByText('No work contract in this session yet.').waitFor();
    await expect(page.locator('.facts').textContent()).resolves.toContain('session ended: aborted');

    await page.evaluate(`location.hash = '#/work/nobody'`);
    await page.getByText('No session nobody in this project.').waitFor();
    expect(await page.locator('[data-live]').count()).toBe(0);
    expect(problems.errors.filter((error) => !error.includes('404'))).toEqual([]);
  });

  it('shows the Handoff an interrupted bound session prepared, and publishes it only on the head it was prepared on', async () => {
    const prepared = await web.client.post<{ digest: string }>('/v1/work/handoffs/prepare-current', {
      scope_id: 'login-work',
      source_id: 'boundary-1',
      objective: 'Fix the login redirect',
      disposition: 'continue',
      next_action: { text: 'Fix it', basis: 'declared' },
    });
    await web.client.post('/v1/work/handoffs/commit', {
      scope_id: 'login-work',
      prepared: prepared.digest,
      expected_head: 0,
    });
    for (const session_id of ['first-run', 'second-run']) {
      await web.client.post('/v1/sessions', { session_id, work_mode: 'managed', scope_id: 'login-work' });
      await web.client.post(`/v1/sessions/${session_id}/work/contracts`, {
        contract_id: 'c1',
        objective: 'Fix the login redirect',
        criteria: [
          { criterion_id: 'tests', statement: 'tests pass', kind: { type: 'shell', command: 'npm test' } },
        ],
        items: [{ item_id: 'fix', title: 'Fix it', criterion_ids: ['tests'] }],
      });
      await web.client.post(`/v1/sessions/${session_id}/end`, {
        status: 'max_turns',
        reason: 'out of turns',
      });
    }
    const { page, problems } = await open();
    await logIn(page, web);
    await page.evaluate(`location.hash = '#/work'`);
    await expect(page.locator('[data-session="first-run"]').textContent()).resolves.toContain(
      'Handoff prepared for whoever continues',
    );
    await openSession(page, 'first-run');
    const panel = page.getByRole('region', { name: 'Handoff prepared for whoever continues' });
    await expect(panel.locator('dd').allTextContents()).resolves.toEqual([
      'login-work',
      '1',
      expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
    ]);
    await panel.getByRole('button', { name: 'Publish as the next revision' }).click();
    await expect(panel.getByRole('status').textContent()).resolves.toBe('Published as revision 2.');
    await screenshot(page, 'work-handoff');
    // On a phone the panel fits: the digest wraps rather than widening the page.
    await page.setViewportSize(phone);
    expect(
      await page.evaluate('document.documentElement.scrollWidth - window.innerWidth'),
    ).toBeLessThanOrEqual(0);
    await page.setViewportSize({ width: 1280, height: 800 });
    // Publishing again answers the same revision: commit_handoff is idempotent.
    await panel.getByRole('button', { name: 'Publish as the next revision' }).click();
    await expect(panel.getByRole('status').textContent()).resolves.toBe('Published as revision 2.');
    const latest = await web.client.post<{
      selection: { revision: number };
      handoff: { statements: { text: string }[] };
    }>('/v1/work/handoffs/continue', { scope_id: 'login-work', selection: 'latest' });
    expect(latest.selection.revision).toBe(2);
    expect(latest.handoff.statements[0]!.text).toContain(
      'Managed session first-run ended max_turns (out of turns)',
    );

    // The workstream's history links the boundary to the session Baton wrote it for.
    await page.evaluate(`location.hash = '#/w/login-work'`);
    const written = page
      .locator('.timeline li[data-kind="handoff-boundary"]')
      .filter({ hasText: 'first-run' });
    await written.getByRole('link', { name: 'first-run' }).click();
    await page.locator('[data-live="live"]').waitFor();
    await page.getByRole('heading', { name: 'first-run' }).waitFor();

    // The second run's handoff was prepared on revision 1, which is no longer the head.
    await openSession(page, 'second-run');
    const second = page.getByRole('region', { name: 'Handoff prepared for whoever continues' });
    await second.getByRole('button', { name: 'Publish as the next revision' }).click();
    await expect(second.getByRole('alert').textContent()).resolves.toMatch(
      /^Not done: revision_conflict: the handoff head of login-work is 2, not 1/,
    );
    expect(problems.errors.filter((error) => !error.includes('409'))).toEqual([]);
  });

  it('folds the session’s conversation under the work: messages, turns, tool calls and results, inert', async () => {
    await seedSession(web);
    const entry = (type: string, content: Record<string, unknown>) => ({
      type,
      content: { schema: `baton.${type.replace('_', '-')}/v1`, ...content },
      metadata: { kind: type },
    });
    await web.deps.store.append(sessionStream(project_id, 'fix-login'), [
      entry('user_message', { text: 'Fix the login redirect', author: 'person' }),
      {
        type: 'receipt',
        content: {
          schema: 'baton.receipt/v1',
          receipt_id: 'model-1',
          purpose: 'model_turn',
          details: {
            provider: 'openai',
            model: 'm1',
            attempts: 2,
            duration_ms: 840,
            input_tokens: 1200,
            output_tokens: 80,
          },
        },
        metadata: { kind: 'receipt' },
      },
      entry('assistant_message', { text: `Reading it ${hostile}` }),
      entry('tool_call', { tool_use_id: 'c1', tool: 'shell', input: { command: 'npm test' } }),
      entry('tool_result', {
        tool_use_id: 'c1',
        tool: 'shell',
        is_error: true,
        output: `exit 1\n${hostile}`,
      }),
      entry('user_message', { text: 'Baton: you cannot stop yet.', author: 'baton' }),
      entry('assistant_message', { text: 'Deploy to \u202enoitcudorp\u202c now\u001b[2J' }),
    ]);
    const { page, problems } = await open();
    await logIn(page, web);
    await openSession(page, 'fix-login');
    const conversation = page.locator('details.transcript');
    await conversation.locator('summary').click();
    await conversation.locator('.turns').waitFor();
    expect(await conversation.locator('summary').textContent()).toBe('Conversation (7)');
    const turns = conversation.locator('.turn');
    expect(await turns.count()).toBe(7);
    expect(await turns.nth(0).textContent()).toBe('PersonFix the login redirect');
    expect(await turns.nth(1).textContent()).toBe('openai/m1: 2 attempts, 840 ms · 1200 in / 80 out tokens');
    expect(await turns.nth(2).textContent()).toBe(`ModelReading it ${hostile}`);
    expect(await turns.nth(3).textContent()).toBe('Tool call: shell c1{"command":"npm test"}');
    expect(await turns.nth(4).getAttribute('class')).toContain('is-error');
    expect(await turns.nth(4).textContent()).toBe(`Error: shell c1exit 1\n${hostile}`);
    expect(await turns.nth(5).textContent()).toBe('BatonBaton: you cannot stop yet.');
    // Control characters and bidirectional overrides show as escapes, as all stored text does.
    expect(await turns.nth(6).textContent()).toBe('ModelDeploy to \\u202enoitcudorp\\u202c now\\u001b[2J');
    expect(await page.evaluate('window.__hacked')).toBeUndefined();
    expect(await page.locator('img').count()).toBe(0);
    await screenshot(page, 'work-conversation', { fullPage: true });

    // Goal mode: the goal above the conversation, each audit with its verdict, inert.
    await startSession(web.deps, project_id, { session_id: 'goal-run' }, { goal: `Ship it ${hostile}` });
    const audit = (verdict: string, reason: string) => ({
      type: 'receipt',
      content: {
        schema: 'baton.receipt/v1',
        receipt_id: `goal-${verdict}`,
        purpose: 'goal_audit',
        details: { verdict, reason, goal: 'Ship it' },
      },
      metadata: { kind: 'receipt' },
    });
    await web.deps.store.append(sessionStream(project_id, 'goal-run'), [
      entry('user_message', { text: 'Ship the fix', author: 'person' }),
      audit('failed', `judge: not shipped ${hostile}`),
      audit('passed', 'judge: shipped'),
    ]);
    await openSession(page, 'goal-run');
    const goalRun = page.locator('details.transcript');
    await goalRun.locator('summary').click();
    await goalRun.locator('.turns').waitFor();
    expect(await goalRun.locator('p.goal').textContent()).toBe(`Goal: Ship it ${hostile}`);
    const audits = goalRun.locator('.goal-audit');
    expect(await audits.count()).toBe(2);
    expect(await audits.nth(0).textContent()).toBe(`Goal audit: failedjudge: not shipped ${hostile}`);
    expect(await audits.nth(1).getAttribute('class')).toContain('verdict-passed');
    expect(await audits.nth(1).textContent()).toBe('Goal audit: passedjudge: shipped');
    expect(await page.evaluate('window.__hacked')).toBeUndefined();

    // A busy run: thirty entries one after another cost a viewer a few reloads, not thirty,
    // and the last one still shows.
    let reloads = 0;
    page.on('request', (request) => {
      if (request.url().includes('/transcript')) reloads += 1;
    });
    const started = performance.now();
    for (let n = 1; n <= 30; n += 1) {
      await web.deps.store.append(sessionStream(project_id, 'goal-run'), [
        entry('assistant_message', { text: `step ${n}` }),
      ]);
    }
    await goalRun.locator('summary', { hasText: 'Conversation (33)' }).waitFor();
    expect(await goalRun.locator('.turn').last().textContent()).toBe('Modelstep 30');
    // At most one load every two seconds (and one in flight when the count started).
    expect(reloads).toBeLessThanOrEqual(2 + Math.ceil((performance.now() - started) / 2000));
    expect(reloads).toBeLessThan(30);

    // The sessions list names the goal, inert.
    await page.evaluate(`location.hash = '#/work'`);
    const listed = page.locator('[data-session="goal-run"] .goal');
    await listed.waitFor();
    expect(await listed.textContent()).toBe(`Goal: Ship it ${hostile}`);
    expect(await page.evaluate('window.__hacked')).toBeUndefined();
    expect(problems.errors).toEqual([]);
  });

  it('fits a phone: one column, nothing wider than the screen', async () => {
    await seedSession(web);
    await agentMoves(web, 'inspect', 'running');
    await agentMoves(web, 'inspect', 'blocked', `waiting for ${'a-very-long-unbroken-word-'.repeat(12)}`);
    const { page, problems } = await open(phone);
    await logIn(page, web);
    await openSession(page, 'fix-login');
    await page.locator('[data-item="inspect"][data-status="blocked"]').waitFor();
    expect(
      await page.evaluate('document.documentElement.scrollWidth - window.innerWidth'),
    ).toBeLessThanOrEqual(0);
    await page.evaluate(`location.hash = '#/work'`);
    await page.locator('[data-session="fix-login"]').waitFor();
    expect(
      await page.evaluate('document.documentElement.scrollWidth - window.innerWidth'),
    ).toBeLessThanOrEqual(0);
    // In Simplified Chinese: the words change, the wire names stay beside them.
    await page.getByRole('combobox', { name: 'Language' }).selectOption('zh-CN');
    await page.getByRole('heading', { name: '托管工作会话' }).waitFor();
    await expect(
      page.locator('[data-session="fix-login"] .badge[data-status="active"]').textContent(),
    ).resolves.toBe('进行中 active');
    expect(
      await page.evaluate('document.documentElement.scrollWidth - window.innerWidth'),
    ).toBeLessThanOrEqual(0);
    expect(problems.errors).toEqual([]);
  });
});
