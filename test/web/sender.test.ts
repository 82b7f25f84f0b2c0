/**
 * "What am I handing off?" and the five-second refresh, in Chromium against a real server:
 * Acceptance rows Editable card, Automatic refresh and Retryable send of the continuity spec.
 * The failed commit is made real with Playwright's request routing: the browser's commit
 * request is aborted once (before, or after, the server handled it), as a dropped connection.
 */
import type { Page, Request } from 'playwright-core';
import { beforeEach, describe, expect, it } from 'vitest';
import { browserSuite, loads, logIn, openWorkspace, sleep, type WebServer } from './harness.ts';

describe('the sender card and the automatic refresh', () => {
  const suite = browserSuite();
  let web: WebServer;
  let page: Page;
  let errors: string[];
  /** Every write the page sent: method, path and JSON body. */
  let writes: { path: string; body: Record<string, unknown> }[];

  beforeEach(async () => {
    web = suite.web;
    const opened = await suite.open();
    page = opened.page;
    errors = opened.problems.errors;
    writes = [];
    page.on('request', (request: Request) => {
      const path = new URL(request.url()).pathname;
      if (request.method() === 'POST' && path !== '/v1/session' && path !== '/v1/work/handoffs/continue') {
        writes.push({ path, body: request.postDataJSON() as Record<string, unknown> });
      }
    });
    await web.client.handoff('relay', 'b1', {
      objective: 'Add safe auto-refresh to the Handoff Report',
      state: ['Polling is implemented'],
      next: 'Fix the frozen selection comparison',
    });
    await logIn(page, web);
    await openWorkspace(page, 'relay');
  });

  const card = () => page.getByRole('region', { name: 'What am I handing off?' });
  const field = (name: string) => card().getByRole('textbox', { name, exact: true });
  const status = () => page.getByRole('status');
  const boundaries = async () => (await web.client.continuity('relay')).counts['handoff-boundary'];

  async function edit(): Promise<void> {
    await field('Objective').fill('Add safe auto-refresh, drafts protected');
    await field('Next action (exactly one)').fill('Write the draft-protection test');
    await card().getByRole('button', { name: 'Add a state item' }).click();
    await field('State item 2').fill('Refresh pauses while a draft is unsent');
    await field('Omissions: what is not included, one per line').fill('No remote CI\nNo load test');
  }

  async function expectEdits(): Promise<void> {
    expect(await field('Objective').inputValue()).toBe('Add safe auto-refresh, drafts protected');
    expect(await field('Next action (exactly one)').inputValue()).toBe('Write the draft-protection test');
    expect(await field('State item 1').inputValue()).toBe('Polling is implemented');
    expect(await field('State item 2').inputValue()).toBe('Refresh pauses while a draft is unsent');
    expect(await field('Omissions: what is not included, one per line').inputValue()).toBe(
      'No remote CI\nNo load test',
    );
  }

  it('Acceptance: Editable card — is prefilled from the committed handoff; edits write nothing and survive more than five seconds while a newer revision lands', async () => {
    expect(await field('Objective').inputValue()).toBe('Add safe auto-refresh to the Handoff Report');
    expect(await field('State item 1').inputValue()).toBe('Polling is implemented');
    expect(await field('Next action (exactly one)').inputValue()).toBe('Fix the frozen selection comparison');
    expect(await card().getByRole('combobox', { name: 'Disposition' }).inputValue()).toBe('continue');
    expect(await field('Omissions: what is not included, one per line').inputValue()).toBe(
      'Remote CI is unavailable here',
    );
    await edit();
    await card().getByRole('combobox', { name: 'Disposition' }).selectOption('blocked');
    await field('Decision needed (question)').fill('Poll or push?');
    await card().getByRole('combobox', { name: 'Disposition' }).selectOption('continue');
    await card().getByText('Edited, not sent').waitFor();
    expect(await status().textContent()).toBe('Updates paused: unsent edits');

    // Another client publishes revision 2 while the draft is open; more than five seconds pass.
    const before = await loads(page);
    await web.client.handoff('relay', 'b2', { objective: 'Someone else moved on' });
    await sleep(6_500);
    await expectEdits();
    expect(await loads(page)).toBe(before); // paused: no background load replaced anything
    expect(await page.locator('.trail-count').textContent()).toBe('1 revision');
    expect(writes).toEqual([]); // editing in the browser wrote nothing
    expect(await boundaries()).toBe(2);

    // An explicit refresh shows revision 2 and still keeps the draft, saying what it was based on.
    await page.getByRole('banner').getByRole('button', { name: 'Refresh' }).click();
    await page.locator('.trail-count').filter({ hasText: '2 revisions' }).waitFor();
    await expectEdits();
    await card()
      .getByText('This draft started from revision 1; revision 2 is current now.', { exact: false })
      .waitFor();
    expect(errors).toEqual([]);
  });

  it('Acceptance: Editable card — switching the locale to Simplified Chinese and back keeps unsent edits', async () => {
    await edit();
    await page.getByRole('combobox', { name: 'Language' }).selectOption('zh-CN');
    await page.getByRole('heading', { name: '我要交接什么？' }).waitFor();
    expect(await page.evaluate('document.documentElement.lang')).toBe('zh-CN');
    const zhCard = page.getByRole('region', { name: '我要交接什么？' });
    expect(await zhCard.getByRole('textbox', { name: '目标' }).inputValue()).toBe(
      'Add safe auto-refresh, drafts protected',
    );
    expect(await zhCard.getByRole('textbox', { name: '下一步（仅一个）' }).inputValue()).toBe(
      'Write the draft-protection test',
    );
    expect(await zhCard.getByRole('textbox', { name: '现状 2' }).inputValue()).toBe(
      'Refresh pauses while a draft is unsent',
    );
    await page.getByRole('heading', { name: '我能接手吗？' }).waitFor();
    await page.getByRole('combobox', { name: '语言' }).selectOption('en');
    await page.getByRole('heading', { name: 'What am I handing off?' }).waitFor();
    await expectEdits();
    expect(writes).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('Acceptance: Automatic refresh — reloads the project every five seconds without locking a control, and never overwrites a draft in another workstream', async () => {
    await web.client.handoff('other', 'o1', { objective: 'Other work' });
    await edit(); // a draft in relay
    await page.getByRole('link', { name: 'All workstreams' }).click();
    await page.getByRole('heading', { name: 'Workstreams' }).waitFor();
    expect(await status().textContent()).toBe('Updates every 5 seconds');
    await page.locator('li[data-scope="relay"]').getByText('unsent draft').waitFor();

    // Record every control a refresh disables or marks busy, and any mismatch alert it flashes.
    await page.evaluate(`(() => {
      window.__locked = [];
      new MutationObserver((records) => {
        for (const r of records) {
          if (r.type === 'attributes' && r.attributeName === 'disabled' && r.target.disabled)
            window.__locked.push(r.target.outerHTML);
          if (r.type === 'attributes' && r.attributeName === 'aria-busy' && r.target.getAttribute('aria-busy') === 'true')
            window.__locked.push(r.target.outerHTML);
          for (const node of r.addedNodes)
            if (node.nodeType === 1 && (node.matches('.mismatch') || node.querySelector('.mismatch')))
              window.__locked.push('mismatch shown');
        }
      }).observe(document.body, { subtree: true, attributes: true, childList: true });
    })()`);
    await page.getByRole('combobox', { name: 'Language' }).focus();

    const before = await loads(page);
    await web.client.handoff('relay', 'b2', { objective: 'Revision two from another client' });
    await web.client.handoff('other', 'o2', { objective: 'Other work, revision two' });
    // Nobody touches the page: within two refresh periods it shows both new revisions.
    await expect
      .poll(() => page.locator('li[data-scope="relay"] dd.revision').textContent(), { timeout: 15_000 })
      .toBe('revision 2 of 2');
    await expect
      .poll(() => page.locator('li[data-scope="other"] dd.revision').textContent(), { timeout: 15_000 })
      .toBe('revision 2 of 2');
    expect(await loads(page)).toBeGreaterThan(before);
    expect(await page.evaluate('window.__locked')).toEqual([]);
    expect(await page.evaluate('document.activeElement.tagName')).toBe('SELECT'); // focus stayed

    // The draft in relay is intact, based on revision 1, with revision 2 now shown beside it.
    await openWorkspace(page, 'relay');
    await expectEdits();
    await card()
      .getByText('This draft started from revision 1; revision 2 is current now.', { exact: false })
      .waitFor();

    // A workspace without edits refreshes too: a new revision appears with its preflight, and
    // nothing is disabled or flagged as a mismatch on the way.
    await openWorkspace(page, 'other');
    await page.getByText('It is the revision shown in this workspace.').waitFor();
    await page.getByRole('button', { name: 'Check again' }).focus();
    expect(await page.getByRole('status').textContent()).toBe('Updates every 5 seconds');
    await web.client.handoff('other', 'o3', { objective: 'Other work, revision three' });
    await expect
      .poll(() => page.locator('.preflight-for').textContent(), { timeout: 15_000 })
      .toBe('Preflight of the latest committed handoff: revision 3');
    expect(await page.locator('.trail-count').textContent()).toBe('3 revisions');
    expect(await page.getByRole('textbox', { name: 'Objective', exact: true }).inputValue()).toBe(
      'Other work, revision three',
    );
    expect(await page.evaluate('window.__locked')).toEqual([]);
    expect(await page.evaluate('document.activeElement.textContent')).toBe('Check again');
    expect(errors).toEqual([]);
  });

  it('Acceptance: Automatic refresh — pauses while a handoff action is running', async () => {
    await field('Objective').fill('A send that takes a while');
    // The commit request is held for seven seconds before it goes to the server.
    await page.route('**/v1/work/handoffs/commit', async (route) => {
      await sleep(7_000);
      await route.continue();
    });
    let reportReads = 0;
    page.on('request', (request) => {
      if (new URL(request.url()).pathname === '/v1/work/report') reportReads += 1;
    });
    await card().getByRole('button', { name: 'Send Handoff' }).click();
    await status().filter({ hasText: 'Updates paused: an action is running' }).waitFor();
    await sleep(6_000);
    expect(reportReads).toBe(0);
    await card().getByText('Sent: revision 2 is published.').waitFor({ timeout: 15_000 });
    await status().filter({ hasText: 'Updates every 5 seconds' }).waitFor();
    expect(errors).toEqual([]);
  });

  it('Acceptance: Retryable send — a commit that fails shows the partial success; the retry publishes the same Prepared Handoff and stores one boundary', async () => {
    await edit();
    let aborted = 0;
    await page.route('**/v1/work/handoffs/commit', async (route) => {
      if (aborted++ === 0) await route.abort('connectionreset');
      else await route.continue();
    });
    await card().getByRole('button', { name: 'Send Handoff' }).click();
    const partial = card().getByRole('alert').filter({ hasText: 'Prepared, not confirmed as published' });
    await partial.waitFor();
    const shownDigest = /sha256:[0-9a-f]{64}/.exec((await partial.textContent()) ?? '')![0];
    expect(await boundaries()).toBe(2); // revision 1's and this send's
    expect((await web.client.workstream('relay')).revision_count).toBe(1); // nothing published
    expect(await status().textContent()).toBe('Updates paused: unsent edits');
    await expectEdits();

    await partial.getByRole('button', { name: 'Retry publishing the same Prepared Handoff' }).click();
    await card().getByText('Sent: revision 2 is published.').waitFor();
    const latest = await web.client.latest('relay');
    expect(latest.selection).toEqual({ kind: 'exact', revision: 2, digest: shownDigest });
    expect(latest.handoff.objective).toBe('Add safe auto-refresh, drafts protected');
    expect(latest.handoff.statements.map((statement) => statement.text)).toEqual([
      'Polling is implemented',
      'Refresh pauses while a draft is unsent',
    ]);
    expect(await boundaries()).toBe(2); // still one boundary for the one send attempt
    const prepares = writes.filter((w) => w.path === '/v1/work/handoffs/prepare-current');
    const commits = writes.filter((w) => w.path === '/v1/work/handoffs/commit');
    expect(prepares).toHaveLength(1);
    expect(commits.map((w) => w.body)).toEqual([
      { scope_id: 'relay', prepared: shownDigest, expected_head: 1 },
      { scope_id: 'relay', prepared: shownDigest, expected_head: 1 },
    ]);
    // Sent: the card is prefilled from revision 2 and the refresh runs again.
    await page.getByText('Draft based on revision 2').waitFor();
    await status().filter({ hasText: 'Updates every 5 seconds' }).waitFor();
    expect(errors.filter((e) => !e.includes('ERR_CONNECTION_RESET'))).toEqual([]);
  });

  it('Acceptance: Retryable send — a commit whose answer is lost is retried as the same request and returns the revision it produced', async () => {
    await field('Objective').fill('Publish once even if the answer is lost');
    let lost = 0;
    await page.route('**/v1/work/handoffs/commit', async (route) => {
      if (lost++ === 0) {
        await route.fetch(); // the server commits revision 2 ...
        await route.abort('connectionreset'); // ... and the answer never reaches the page
      } else await route.continue();
    });
    await card().getByRole('button', { name: 'Send Handoff' }).click();
    const partial = card().getByRole('alert').filter({ hasText: 'Prepared, not confirmed as published' });
    await partial.waitFor();
    expect((await web.client.workstream('relay')).revision_count).toBe(2);
    await partial.getByRole('button', { name: 'Retry publishing the same Prepared Handoff' }).click();
    await card().getByText('Sent: revision 2 is published.').waitFor();
    expect((await web.client.workstream('relay')).revision_count).toBe(2); // not 3
    expect(await boundaries()).toBe(2);
  });

  it('a send never publishes over a revision the sender has not seen: it stops, and after a refresh publishes with the same boundary', async () => {
    await edit();
    await web.client.handoff('relay', 'b2', { objective: 'Published by someone else first' });
    await card().getByRole('button', { name: 'Send Handoff' }).click();
    const moved = card()
      .getByRole('alert')
      .filter({ hasText: 'Revision 2 was published by someone else first' });
    await moved.waitFor();
    expect((await web.client.workstream('relay')).revision_count).toBe(2);
    await moved.getByRole('button', { name: 'Refresh' }).click();
    await page.locator('.trail-count').filter({ hasText: '2 revisions' }).waitFor();
    await expectEdits();
    await card().getByRole('button', { name: 'Send Handoff' }).click();
    await card().getByText('Sent: revision 3 is published.').waitFor();
    expect((await web.client.latest('relay')).handoff.objective).toBe(
      'Add safe auto-refresh, drafts protected',
    );
    expect(await boundaries()).toBe(3); // b1, b2 and this send's one boundary
    const prepares = writes.filter((w) => w.path === '/v1/work/handoffs/prepare-current');
    expect(new Set(prepares.map((w) => w.body.source_id)).size).toBe(1);
    expect(errors).toEqual([]);
  });

  /** The text of what describes the focused element (aria-describedby), in the page. */
  const focusedDescription = () =>
    page.evaluate(
      "(document.activeElement.getAttribute('aria-describedby') ?? '').split(' ').map((id) => document.getElementById(id)?.textContent ?? '').join(' ')",
    );
  const focusedId = () => page.evaluate('document.activeElement.id');

  it('puts what the server refused under the field it concerns, marks that field invalid and moves the focus to it', async () => {
    await field('Objective').fill('O'.repeat(10_000));
    await card().getByRole('button', { name: 'Add a state item' }).click();
    await field('State item 2').fill('   ');
    await card().getByRole('button', { name: 'Add a state item' }).click();
    await field('State item 3').fill('S'.repeat(5_000));
    await card().getByRole('button', { name: 'Send Handoff' }).click();

    await expect.poll(() => field('Objective').getAttribute('aria-invalid')).toBe('true');
    expect(await focusedId()).toBe(await field('Objective').getAttribute('id'));
    expect(await focusedDescription()).toContain('at most 2000 characters');
    // The blank item 2 is not sent, so the server's current_state.1 is the card's item 3.
    expect(await field('State item 3').getAttribute('aria-invalid')).toBe('true');
    expect(await field('State item 2').getAttribute('aria-invalid')).not.toBe('true');
    await field('State item 3').focus();
    expect(await focusedDescription()).toContain('at most 4000 characters');
    expect(await boundaries()).toBe(1);

    await field('Objective').fill('A fixed objective');
    expect(await field('Objective').getAttribute('aria-invalid')).not.toBe('true');
  });
  const notSent = () => card().getByRole('alert').filter({ hasText: 'Not sent' });

  it('clears an old "Not sent" line when the draft is edited, so none stays while the browser blocks the next send', async () => {
    await field('Objective').fill('O'.repeat(10_000));
    await card().getByRole('button', { name: 'Send Handoff' }).click();
    await notSent().waitFor();
    // The sender empties a required field and sends: the browser's own check stops the send.
    await field('Next action (exactly one)').fill('');
    await card().getByRole('button', { name: 'Send Handoff' }).click();
    // The browser's check blocked it and put the focus on the empty field.
    expect(await page.evaluate('document.activeElement.validity.valueMissing')).toBe(true);
    expect(await focusedId()).toBe(await field('Next action (exactly one)').getAttribute('id'));
    expect(await notSent().count()).toBe(0);
    // What the server refused in the objective, which was not edited, stays under it.
    expect(await field('Objective').getAttribute('aria-invalid')).toBe('true');
    expect(await boundaries()).toBe(1);
  });

  it('says "no connection to the server; nothing was sent" when the browser is offline, in each locale', async () => {
    await edit();
    await page.context().setOffline(true);
    await card().getByRole('button', { name: 'Send Handoff' }).click();
    await notSent().filter({ hasText: 'no connection to the server; nothing was sent' }).waitFor();
    expect(await notSent().textContent()).not.toContain('Failed to fetch');
    await page.getByRole('combobox', { name: 'Language' }).selectOption('zh-CN');
    await page
      .getByRole('region', { name: '我要交接什么？' })
      .getByRole('alert')
      .filter({ hasText: '未发送' })
      .filter({ hasText: '没有连接到服务器；什么也没有发送' })
      .waitFor();
    await page.getByRole('combobox', { name: '语言' }).selectOption('en');
    await page.context().setOffline(false);
    await card().getByRole('button', { name: 'Send Handoff' }).click();
    await card().getByText('Sent: revision 2 is published.').waitFor();
    expect(await boundaries()).toBe(2);
  });
});
