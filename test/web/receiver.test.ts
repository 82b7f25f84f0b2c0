/**
 * "Can I take it?", "What happened afterward?" and the revision trail, in Chromium against a
 * real server: Acceptance rows Exact preflight, Three choices, Continuity (with Result
 * coverage) and Revision history of the continuity spec. "Another client" is the HTTP API
 * called with a bearer token, as the CLI or an agent would call it.
 */
import type { Locator, Page } from 'playwright-core';
import { beforeEach, describe, expect, it } from 'vitest';
import { browserSuite, logIn, openWorkspace, type WebServer } from './harness.ts';

describe('the receiver side, the continuity footer and the revision trail', () => {
  const suite = browserSuite();
  let web: WebServer;
  let page: Page;
  let errors: string[];

  beforeEach(async () => {
    web = suite.web;
    const opened = await suite.open();
    page = opened.page;
    errors = opened.problems.errors;
  });

  const receiver = () => page.getByRole('region', { name: 'Can I take it?' });
  const choice = (name: 'Accept' | 'Needs clarification' | 'Decline') =>
    receiver().getByRole('button', { name, exact: true });
  const reason = () =>
    receiver().getByRole('textbox', { name: 'Reason (needed for clarification or decline)' });
  const checks = [
    'The live workspace matches this workstream',
    'I have the capability to do the next action',
    'I am authorized to do the next action',
  ];
  const receipts = async (scope = 'relay') => (await web.client.continuity(scope)).counts['handoff-receipt'];

  async function tickAll(): Promise<void> {
    for (const name of checks) await receiver().getByRole('checkbox', { name }).check();
  }

  async function enabled(locator: Locator): Promise<boolean> {
    return locator.isEnabled();
  }

  async function attributes(locator: Locator, name: string): Promise<(string | null)[]> {
    return Promise.all((await locator.all()).map((item) => item.getAttribute(name)));
  }

  async function open(scope = 'relay'): Promise<void> {
    await logIn(page, web);
    await openWorkspace(page, scope);
    await receiver().locator('.preflight-for').waitFor();
  }

  it('Acceptance: Exact preflight — a newer revision committed while the receiver reads the older one blocks every choice until refresh; then the choice binds the exact revision shown', async () => {
    await web.client.handoff('relay', 'b1', { objective: 'Revision one', next: 'Do step one' });
    await open();
    await receiver().getByText('It is the revision shown in this workspace.').waitFor();
    expect(await receiver().locator('.preflight-for').textContent()).toBe(
      'Preflight of the latest committed handoff: revision 1',
    );
    await tickAll(); // the receiver is mid-decision: the background refresh pauses
    await reason().fill('Looks right');
    await page.getByRole('status').filter({ hasText: 'Updates paused: unsent edits' }).waitFor();

    // Another client commits revision 2; the receiver still looks at revision 1 and accepts.
    await web.client.handoff('relay', 'b2', { objective: 'Revision two: stop and wait for rollback' });
    await choice('Accept').click();
    const mismatch = receiver().getByRole('alert').filter({ hasText: 'Revision 2 is the latest' });
    await mismatch.waitFor();
    expect(await mismatch.textContent()).toContain('this workspace shows revision 1');
    for (const name of ['Accept', 'Needs clarification', 'Decline'] as const) {
      expect(await enabled(choice(name)), name).toBe(false);
    }
    expect(await receipts()).toBe(0); // nothing was acknowledged, neither 1 nor the unseen 2

    await mismatch.getByRole('button', { name: 'Refresh' }).click();
    await receiver().getByText('It is the revision shown in this workspace.').waitFor();
    expect(await page.locator('.trail-count').textContent()).toBe('2 revisions');
    // The confirmations were for revision 1: they start unticked for revision 2.
    expect(await receiver().getByRole('checkbox', { checked: true }).count()).toBe(0);
    expect(await enabled(choice('Accept'))).toBe(false);
    await tickAll();
    await choice('Accept').click();
    await receiver().getByText('Recorded: accepted for revision 2.').waitFor();
    const continuity = await web.client.continuity('relay');
    expect(continuity.transfer_state).toBe('accepted');
    expect(continuity.current?.revision).toBe(2);
    expect(errors).toEqual([]);
  });

  it('Acceptance: Three choices — unavailable evidence disables accept; clarification without a reason is refused, with one it is recorded', async () => {
    const { boundary } = await web.client.handoff('relay', 'b1', { objective: 'Evidence will go away' });
    await web.client.retract('relay', boundary.source_id);
    await open();
    const readability = receiver().getByRole('region', { name: 'Citation readability' });
    await readability.getByText('Some citations unavailable').waitFor();
    expect(await readability.locator('.citation-unavailable').count()).toBe(2);
    expect(await readability.locator('.citation-state').first().textContent()).toBe(
      'unavailable (retracted)',
    );
    for (const name of ['Accept', 'Needs clarification', 'Decline'] as const) {
      expect(await choice(name).isVisible(), name).toBe(true);
    }
    await tickAll();
    expect(await enabled(choice('Accept'))).toBe(false);
    await receiver().getByText('Accept is unavailable while a citation is unavailable.').waitFor();

    await choice('Needs clarification').click();
    await receiver().getByRole('alert').filter({ hasText: 'Give a reason for this choice.' }).waitFor();
    expect(await page.evaluate('document.activeElement.getAttribute("aria-invalid")')).toBe('true');
    expect(await reason().getAttribute('aria-invalid')).toBe('true');
    expect(await receipts()).toBe(0);

    await reason().fill('The cited boundary was retracted; which log shows the failure?');
    await choice('Needs clarification').click();
    await receiver().getByText('Recorded: needs clarification for revision 1.').waitFor();
    await page.locator('.afterward [data-state="needs_clarification"]').waitFor();
    const continuity = await web.client.continuity('relay');
    expect(continuity.transfer_state).toBe('needs_clarification');
    // Readability is never called "verified", anywhere on the page.
    expect((await page.locator('body').textContent())!.toLowerCase()).not.toContain('verified');
    expect(errors).toEqual([]);
  });

  it('Acceptance: Three choices — decline needs a reason; accept needs all three live checks', async () => {
    const log = await web.client.capture('relay', 'ci-log');
    await web.client.handoff('relay', 'b1', { objective: 'Deploy to production', evidence: log });
    await open();
    const readability = receiver().getByRole('region', { name: 'Citation readability' });
    await readability.getByText('All citations readable').waitFor();
    expect(await readability.locator('.citation-available').count()).toBe(4);
    expect(await enabled(choice('Accept'))).toBe(false);
    await receiver().getByText('Accept needs all three live checks confirmed.').waitFor();
    await receiver().getByRole('checkbox', { name: checks[0] }).check();
    await receiver().getByRole('checkbox', { name: checks[1] }).check();
    expect(await enabled(choice('Accept'))).toBe(false);
    await choice('Decline').click();
    await receiver().getByRole('alert').filter({ hasText: 'Give a reason for this choice.' }).waitFor();
    expect(await receipts()).toBe(0);
    await reason().fill('I may not deploy to production');
    await choice('Decline').click();
    await receiver().getByText('Recorded: declined for revision 1.').waitFor();
    const continuity = await web.client.continuity('relay');
    expect(continuity.transfer_state).toBe('declined');
    expect(continuity.outcome_state).toBe('not_expected');
    // The footer re-reads the continuity after the receipt is recorded.
    await page.locator('.afterward [data-state="declined"]').waitFor();
    expect(await page.locator('.afterward [data-state]').allTextContents()).toEqual([
      'declined',
      'not expected',
    ]);
    expect(errors).toEqual([]);
  });

  it('Acceptance: Continuity — after acceptance the outcome form is linked to that exact receipt; the footer shows all four kinds in journal position order and covered', async () => {
    await web.client.contract('relay', 'contract-1', 'Add safe auto-refresh');
    await web.client.handoff('relay', 'b1', { objective: 'Add safe auto-refresh', next: 'Fix the test' });
    await open();
    const footer = page.getByRole('region', { name: 'What happened afterward?' });
    expect(await footer.locator('[data-state]').allTextContents()).toEqual([
      'awaiting receipt',
      'not expected',
    ]);
    expect(await page.getByRole('form', { name: 'Record what happened' }).count()).toBe(0);

    await tickAll();
    await receiver().getByRole('textbox', { name: 'Your name (optional)' }).fill('Agent B');
    await choice('Accept').click();
    const form = page.getByRole('form', { name: 'Record what happened' });
    await form.waitFor();
    const active = (await web.client.continuity('relay')).active_receipt_ref;
    expect(await form.textContent()).toContain(
      `Linked to the accepted receipt ${active?.source_id} of revision 1.`,
    );
    await footer.locator('[data-state="accepted"]').waitFor();
    expect(await footer.locator('[data-state]').allTextContents()).toEqual(['accepted', 'awaiting outcome']);

    await form.getByRole('combobox', { name: 'Result' }).selectOption('partial');
    await form.getByRole('textbox', { name: 'Summary' }).fill('Auto-refresh works; docs build has no result');
    await form.getByRole('textbox', { name: /^Checks/ }).fill('focused tests=passed\nnope');
    await form.getByRole('button', { name: 'Record outcome' }).click();
    await form.locator('.field-error').filter({ hasText: 'Cannot read the check "nope"' }).waitFor();
    await form.getByRole('textbox', { name: /^Checks/ }).fill('focused tests=passed\ndocs build=timed_out');
    await form.getByRole('textbox', { name: /^Remaining work/ }).fill('Run the docs build again');
    await form.getByRole('button', { name: 'Record outcome' }).click();

    await footer.locator('[data-state="covered"]').waitFor();
    expect(await footer.locator('[data-state]').allTextContents()).toEqual(['accepted', 'covered']);
    await receiver()
      .getByText('Covered: a result is recorded for the accepted receipt', { exact: false })
      .waitFor();
    expect(await form.count()).toBe(0);
    const continuity = await web.client.continuity('relay');
    expect(continuity.covering_outcome_ref).not.toBeNull();
    expect(continuity.outcome_state).toBe('covered');

    // All four kinds, in journal position order, positions shown as positions and never as times.
    const items = footer.locator('.timeline li');
    const kinds = await attributes(items, 'data-kind');
    const positions = (await attributes(items, 'data-position')).map(Number);
    expect(kinds).toEqual(['work-contract', 'handoff-boundary', 'handoff-receipt', 'task-outcome']);
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    expect(await items.locator('.kind').allTextContents()).toEqual([
      'Contract',
      'Handoff',
      'Receipt',
      'Outcome',
    ]);
    expect(await items.locator('.position').allTextContents()).toEqual(positions.map((p) => `#${p}`));
    await footer.getByText('Ordered by journal position: a stable order, not a time.').waitFor();
    const text = (await footer.textContent()) ?? '';
    expect(text).not.toMatch(/\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}/); // no date or clock time
    expect(errors).toEqual([]);
  });

  it('Acceptance: Revision history — the count through the frozen selection, the latest 20 latest first, the current one marked; a newer revision does not leak in', async () => {
    for (let n = 1; n <= 23; n += 1) {
      await web.client.handoff('relay', `b${n}`, { objective: `Objective of revision ${n}` });
    }
    await open();
    const trail = page.getByRole('region', { name: 'Revision trail' });
    expect(await trail.locator('.trail-count').textContent()).toBe('23 revisions; the latest 20 shown');
    const items = trail.locator('.revisions li');
    expect(await items.count()).toBe(20);
    const numbers = (await attributes(items, 'data-revision')).map(Number);
    expect(numbers).toEqual(Array.from({ length: 20 }, (_, i) => 23 - i));
    expect(await trail.locator('[aria-current="true"]').getAttribute('data-revision')).toBe('23');
    expect(await trail.locator('[aria-current="true"] .current-mark').textContent()).toBe('shown here');

    // The view is frozen while the receiver is mid-decision: revision 24 does not leak into it.
    await receiver().getByRole('checkbox', { name: checks[0] }).check();
    await web.client.handoff('relay', 'b24', { objective: 'Objective of revision 24' });
    await receiver().getByRole('button', { name: 'Check again' }).click();
    await receiver().getByRole('alert').filter({ hasText: 'Revision 24 is the latest' }).waitFor();
    expect(await trail.locator('.trail-count').textContent()).toBe('23 revisions; the latest 20 shown');
    expect(await trail.locator('[data-revision="24"]').count()).toBe(0);
    expect(
      await page
        .getByRole('region', { name: 'What am I handing off?' })
        .getByText('Draft based on revision 23')
        .count(),
    ).toBe(1);

    await page.getByRole('banner').getByRole('button', { name: 'Refresh' }).click();
    await trail.locator('.trail-count').filter({ hasText: '24 revisions' }).waitFor();
    expect(await trail.locator('[aria-current="true"]').getAttribute('data-revision')).toBe('24');
    expect(await items.count()).toBe(20);
    expect(errors).toEqual([]);
  });

  it('puts a refused reason’s message under the reason field, marks it invalid and moves the focus to it', async () => {
    await web.client.handoff('relay', 'b1', { objective: 'Take this once' });
    await open();
    await reason().fill('R'.repeat(5_000));
    await choice('Decline').click();
    await expect.poll(() => reason().getAttribute('aria-invalid')).toBe('true');
    expect(await page.evaluate('document.activeElement.id')).toBe(await reason().getAttribute('id'));
    expect(
      await page.evaluate(
        "(document.activeElement.getAttribute('aria-describedby') ?? '').split(' ').map((id) => document.getElementById(id)?.textContent ?? '').join(' ')",
      ),
    ).toContain('4000 characters');
    expect(await receipts()).toBe(0);
  });

  const outcome = () => page.getByRole('form', { name: 'Record what happened' });
  const outcomeField = (name: string | RegExp) => outcome().getByRole('textbox', { name });
  const focusedId = () => page.evaluate('document.activeElement.id');
  /** The text of what describes the focused element (aria-describedby), in the page. */
  const focusedDescription = () =>
    page.evaluate(
      "(document.activeElement.getAttribute('aria-describedby') ?? '').split(' ').map((id) => document.getElementById(id)?.textContent ?? '').join(' ')",
    );
  const outcomes = async () => (await web.client.continuity('relay')).counts['task-outcome'];

  /** Revision 1 accepted by another client: the workspace shows the Task Outcome form. */
  async function openOutcome(): Promise<void> {
    await web.client.handoff('relay', 'b1', { objective: 'Take this and report back' });
    await web.client.accept('relay', 'r1', 1);
    await open();
    await outcome().waitFor();
  }

  it('puts what the server refused in an outcome under its field (summary, checks, remaining work), marks it invalid and focuses the first', async () => {
    await openOutcome();
    await outcomeField('Summary').fill('S'.repeat(5_000));
    await outcomeField(/^Checks/).fill(`${'n'.repeat(300)}=passed`);
    await outcomeField(/^Remaining work/).fill('R'.repeat(5_000));
    await outcome().getByRole('button', { name: 'Record outcome' }).click();

    await expect.poll(() => outcomeField('Summary').getAttribute('aria-invalid')).toBe('true');
    expect(await focusedId()).toBe(await outcomeField('Summary').getAttribute('id'));
    expect(await focusedDescription()).toContain('4000 characters');
    expect(await outcomeField(/^Checks/).getAttribute('aria-invalid')).toBe('true');
    await outcomeField(/^Checks/).focus();
    expect(await focusedDescription()).toContain('200 characters');
    expect(await outcomeField(/^Remaining work/).getAttribute('aria-invalid')).toBe('true');
    expect(await outcomes()).toBe(0);

    // Editing a field clears its message; the others keep theirs.
    await outcomeField('Summary').fill('A short summary');
    expect(await outcomeField('Summary').getAttribute('aria-invalid')).not.toBe('true');
    expect(await outcomeField(/^Checks/).getAttribute('aria-invalid')).toBe('true');
  });

  it('marks an unreadable check line on the Checks field and focuses it; after a recorded outcome the focus goes to the covered line', async () => {
    await openOutcome();
    await outcomeField('Summary').fill('Done');
    await outcomeField(/^Checks/).fill('focused tests=passed\nnope');
    await outcome().getByRole('button', { name: 'Record outcome' }).click();
    await expect.poll(() => outcomeField(/^Checks/).getAttribute('aria-invalid')).toBe('true');
    expect(await focusedId()).toBe(await outcomeField(/^Checks/).getAttribute('id'));
    expect(await focusedDescription()).toContain('Cannot read the check "nope"');
    expect(await outcomes()).toBe(0);

    await outcomeField(/^Checks/).fill('focused tests=passed');
    expect(await outcomeField(/^Checks/).getAttribute('aria-invalid')).not.toBe('true');
    await outcome().getByRole('button', { name: 'Record outcome' }).click();
    const covered = receiver().getByText('Covered: a result is recorded', { exact: false });
    await covered.waitFor();
    // The form and its button are gone: the focus goes to what replaced them, not to the page body.
    await expect
      .poll(() =>
        page.evaluate(
          'document.activeElement === document.body ? "body" : document.activeElement.textContent',
        ),
      )
      .toMatch(/^Covered: a result is recorded/);
    expect(await outcomes()).toBe(1);
    expect(errors).toEqual([]);
  });
});
