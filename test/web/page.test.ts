/**
 * The page as a whole in Chromium against a real server: login, the project view, the Markdown
 * view, inert text, CSP and CSRF, both layouts, labels, keyboard operation and visible focus.
 */
import type { Page } from 'playwright-core';
import { beforeEach, describe, expect, it } from 'vitest';
import { contentSecurityPolicy } from '../../src/http/static.ts';
import {
  browserSuite,
  desktop,
  logIn,
  openWorkspace,
  phone,
  screenshot,
  type PageProblems,
  type WebServer,
} from './harness.ts';

describe('the Handoff Report page', () => {
  const suite = browserSuite();
  const { open } = suite;
  let web: WebServer;
  beforeEach(() => {
    web = suite.web;
  });

  /** Log in, open a workstream and follow its "Read as Markdown" link: the Markdown shown. */
  async function readMarkdown(
    scope_id: string,
  ): Promise<{ page: Page; problems: PageProblems; text: string }> {
    const { page, problems } = await open();
    await logIn(page, web);
    await openWorkspace(page, scope_id);
    await page.getByRole('link', { name: 'Read as Markdown' }).click();
    const markdown = page.locator('pre.markdown');
    await markdown.waitFor();
    return { page, problems, text: (await markdown.textContent()) ?? '' };
  }

  /** Three workstreams in three states: nothing committed, awaiting a receipt, covered. */
  async function seedProject(): Promise<void> {
    const c = web.client;
    await c.capture('notes', 'idea-1');
    await c.handoff('parser', 'parser-b1', { objective: 'Write the parser', next: 'Add the lexer' });
    await c.handoff('parser', 'parser-b2', { objective: 'Test the parser', next: 'Run the fuzz suite' });
    const log = await c.capture('release', 'ci-log');
    await c.contract('release', 'release-contract', 'Ship release 1.2');
    const { revision } = await c.handoff('release', 'release-b1', {
      objective: 'Ship release 1.2',
      next: 'Tag the release',
      evidence: log,
    });
    const receipt = (await c.accept('release', 'release-r1', revision)).receipt.source_ref;
    await c.post<unknown>('/v1/work/outcomes/record', {
      scope_id: 'release',
      source_id: 'release-o1',
      objective: 'Ship release 1.2',
      status: 'succeeded',
      summary: 'Tagged and published',
      handoff_receipt_ref: receipt,
    });
  }

  it('logs in with a token (a wrong one is refused) and lists every workstream with its revision, transfer and outcome state', async () => {
    await seedProject();
    const { page, problems } = await open();
    await page.goto(`${web.url}/`);
    await page.getByLabel('Project token').fill('baton_not-a-real-token');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('alert').filter({ hasText: 'Login failed' }).waitFor();
    problems.errors.length = 0; // the refused login's 401 is logged by Chromium
    await logIn(page, web);

    const card = (scope: string) => page.locator(`li[data-scope="${scope}"]`);
    expect(await page.locator('li.workstream-card').count()).toBe(3);
    expect(await card('notes').locator('dd.revision').textContent()).toBe('none');
    expect(await card('notes').locator('[data-state]').allTextContents()).toEqual([
      'not applicable',
      'not expected',
    ]);
    expect(await card('parser').locator('dd.revision').textContent()).toBe('revision 2 of 2');
    expect(await card('parser').locator('dd.objective').textContent()).toBe('Test the parser');
    expect(await card('parser').locator('[data-state]').allTextContents()).toEqual([
      'awaiting receipt',
      'not expected',
    ]);
    expect(await card('release').locator('[data-state]').allTextContents()).toEqual(['accepted', 'covered']);

    await card('parser').getByRole('link', { name: 'parser' }).click();
    await page.getByRole('heading', { name: 'What am I handing off?' }).waitFor();
    expect(problems.errors).toEqual([]);
  });

  it('shows the human Markdown view of a handoff as plain text, and an older revision without anything newer', async () => {
    await web.client.handoff('parser', 'b1', { objective: 'Write the parser', next: 'Add the lexer' });
    await web.client.handoff('parser', 'b2', { objective: 'Test the parser', next: 'Run the fuzz suite' });
    const { page, problems, text } = await readMarkdown('parser');
    expect(text).toContain('# Handoff: Test the parser');
    expect(text).toContain('## Next action');
    expect(text).toContain('> Run the fuzz suite');
    expect(text).toContain('revision 2 of 2');
    expect(text).not.toMatch(/^\s*[{[]/); // not JSON

    await page.getByRole('link', { name: 'Back to the workspace' }).click();
    await page.getByRole('link', { name: 'Read revision 1' }).click();
    await expect.poll(() => page.locator('pre.markdown').textContent()).toContain('revision 1 of 1');
    const older = (await page.locator('pre.markdown').textContent()) ?? '';
    expect(older).toContain('# Handoff: Write the parser');
    // Its trail ends at revision 1: revision 2 does not leak into the older view.
    expect(older).toContain('| 1 (this one) | continue | Write the parser | Add the lexer |');
    expect(older).not.toMatch(/^\| 2 .*\| continue \|/m);
    expect(problems.errors).toEqual([]);
  });

  it('offers the Markdown view of a workstream with no committed handoff: its contract so far', async () => {
    await web.client.contract('release', 'release-contract', 'Ship release 1.2');
    const { problems, text } = await readMarkdown('release');
    expect(text).toContain('Work recorded so far');
    // The view shows the Markdown source, where stored punctuation is escaped to read literally.
    expect(text).toContain('Ship release 1\\.2');
    expect(problems.errors).toEqual([]);
  });

  it('renders stored text as inert text: a <script> objective is shown, never run', async () => {
    const hostile =
      '<script>window.__batonPwned = 1</script><img src="/x" onerror="window.__batonPwned = 2"> Fix <b>it</b>';
    await web.client.handoff('hostile', 'b1', { objective: hostile, next: '<script>alert(1)</script>' });
    const { page, problems } = await open();
    await logIn(page, web);
    const card = page.locator('li[data-scope="hostile"]');
    expect(await card.locator('dd.objective').textContent()).toBe(hostile);
    await openWorkspace(page, 'hostile');
    expect(await page.getByRole('textbox', { name: 'Objective' }).inputValue()).toBe(hostile);
    expect(await page.locator('.revisions .summary').first().textContent()).toBe(hostile);
    expect(await page.locator('.timeline .summary').first().textContent()).toBe(hostile);
    expect(await page.evaluate('window.__batonPwned')).toBeUndefined();
    // Only the bundle's own script exists; no element came from stored text.
    expect(await page.locator('script').count()).toBe(1);
    expect(await page.locator('main img, main b').count()).toBe(0);
    expect(problems.errors).toEqual([]);
  });

  it('shows the bidirectional overrides and control characters of stored text as escapes, and edits them as they are', async () => {
    // Shown as is, the override would make "noitcudorp" read "production".
    const hostile = 'Deploy to \u202enoitcudorp\u202c now\u001b[2J';
    const shown = 'Deploy to \\u202enoitcudorp\\u202c now\\u001b[2J';
    await web.client.handoff('bidi', 'b1', { objective: hostile, next: 'Check it' });
    const { page, problems } = await open();
    await logIn(page, web);
    const card = page.locator('li[data-scope="bidi"]');
    expect(await card.locator('dd.objective').textContent()).toBe(shown);
    expect(await card.locator('dd.objective').getAttribute('title')).toBe(shown);
    await openWorkspace(page, 'bidi');
    expect(await page.locator('.revisions .summary').first().textContent()).toBe(shown);
    expect(await page.locator('.timeline .summary').first().textContent()).toBe(shown);
    // The form edits the text itself: what is sent again is what was stored. Under the field, a
    // note says the text holds such characters and shows it as stored.
    const objective = page.getByRole('textbox', { name: 'Objective' });
    expect(await objective.inputValue()).toBe(hostile);
    const note = page.locator(`#${await objective.getAttribute('aria-describedby')}`);
    expect(await note.textContent()).toContain('characters that change how it shows');
    expect(await note.locator('code').textContent()).toBe(shown);
    // A field without them has no such note.
    expect(
      await page.getByRole('textbox', { name: 'Next action (exactly one)' }).getAttribute('aria-describedby'),
    ).not.toMatch(/hidden/);
    expect(problems.errors).toEqual([]);
  });

  it('serves the page with a strict Content-Security-Policy; a cookie request without the CSRF header is refused; logging out ends the session', async () => {
    const { page, problems } = await open();
    const response = await page.goto(`${web.url}/`);
    const headers = response!.headers();
    expect(headers['content-security-policy']).toBe(contentSecurityPolicy);
    expect(contentSecurityPolicy).toContain("default-src 'self'");
    expect(contentSecurityPolicy).toContain("script-src 'self'");
    expect(contentSecurityPolicy).toContain("frame-ancestors 'none'");
    expect(contentSecurityPolicy).not.toContain('unsafe-inline');
    expect(contentSecurityPolicy).not.toContain('unsafe-eval');
    expect(headers['x-content-type-options']).toBe('nosniff');
    const asset = await page.locator('script[src]').getAttribute('src');
    const script = await page.request.get(`${web.url}${asset}`);
    expect(script.headers()['content-type']).toMatch(/^text\/javascript/);
    expect(script.headers()['content-security-policy']).toBe(contentSecurityPolicy);
    expect((await page.request.get(`${web.url}/assets/..%2Fpackage.json`)).status()).toBe(404);

    await logIn(page, web);
    const write = (withCsrf: boolean) =>
      page.evaluate(`(async () => {
        const session = JSON.parse(sessionStorage.getItem('baton.session'));
        const headers = { 'content-type': 'application/json' };
        if (${withCsrf}) headers['x-csrf-token'] = session.csrf;
        const response = await fetch('/v1/work/sources/capture', {
          method: 'POST', headers,
          body: JSON.stringify({ scope_id: 'csrf', source_id: 's1', content: 'x' }),
        });
        return [response.status, (await response.json()).error?.code ?? null];
      })()`);
    expect(await write(false)).toEqual([403, 'forbidden']);
    expect(await write(true)).toEqual([200, null]);
    // The cookie alone reads nothing either: another service on this host receives it too.
    expect(await page.evaluate(`fetch('/v1/work/report').then((r) => r.status)`)).toBe(403);

    // Logging out ends the session: the cookie no longer reads anything.
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByLabel('Project token').waitFor();
    expect(await page.evaluate(`fetch('/v1/work/report').then((r) => r.status)`)).toBe(401);
    problems.errors.length = 0; // the refused requests are logged by Chromium
  });

  for (const [name, viewport] of [
    ['desktop', desktop],
    ['phone', phone],
  ] as const) {
    it(`is usable at ${viewport.width}×${viewport.height} (${name}): nothing overflows sideways, the columns ${name === 'phone' ? 'stack' : 'sit side by side'}`, async () => {
      await seedProject();
      const log = await web.client.capture('parser', 'ci-log');
      await web.client.contract('parser', 'contract-1', 'Ship the parser');
      await web.client.handoff('parser', 'b3', {
        objective: 'Ship the parser with a fuzz-tested lexer',
        next: 'Run the fuzz suite for an hour and attach the corpus',
        state: ['The lexer is written', 'Unicode identifiers are not handled yet'],
        evidence: log,
      });
      const { page, problems } = await open(viewport);
      await logIn(page, web);
      const overflow = () => page.evaluate('document.documentElement.scrollWidth - window.innerWidth');
      expect(await overflow()).toBeLessThanOrEqual(0);
      await screenshot(page, `project-${name}`);
      await openWorkspace(page, 'parser');
      await page.locator('.preflight .ok').waitFor();
      expect(await overflow()).toBeLessThanOrEqual(0);
      const sender = (await page.getByRole('region', { name: 'What am I handing off?' }).boundingBox())!;
      const receiver = (await page.getByRole('region', { name: 'Can I take it?' }).boundingBox())!;
      if (name === 'phone') {
        expect(receiver.y).toBeGreaterThanOrEqual(sender.y + sender.height);
        expect(sender.width).toBeLessThanOrEqual(viewport.width);
      } else {
        expect(receiver.x).toBeGreaterThanOrEqual(sender.x + sender.width);
        expect(Math.abs(receiver.y - sender.y)).toBeLessThan(2);
      }
      await screenshot(page, `workspace-${name}`, { fullPage: true });
      expect(problems.errors).toEqual([]);
    });
  }

  it('labels every control, operates from the keyboard alone and shows where focus is', async () => {
    await web.client.handoff('parser', 'b1', { objective: 'Write the parser', next: 'Add the lexer' });
    const { page, problems } = await open();
    await logIn(page, web);
    await openWorkspace(page, 'parser');
    await page.locator('.preflight .ok').waitFor();

    // Every control has an accessible name.
    const snapshot = await page.locator('body').ariaSnapshot();
    const controls = snapshot
      .split('\n')
      .filter((line) => /^\s*- (button|textbox|checkbox|combobox|link)\b/.test(line));
    expect(controls.length).toBeGreaterThan(15);
    expect(controls.filter((line) => !/^\s*- \w+ "[^"]+"/.test(line))).toEqual([]);

    // Keyboard only: tick the three checks and accept.
    const receiver = page.getByRole('region', { name: 'Can I take it?' });
    await receiver.getByRole('button', { name: 'Check again' }).focus();
    for (const name of [
      'The live workspace matches this workstream',
      'I have the capability to do the next action',
      'I am authorized to do the next action',
    ]) {
      await page.keyboard.press('Tab');
      expect(await page.evaluate('document.activeElement.closest("label").textContent')).toBe(name);
      await page.keyboard.press('Space');
    }
    expect(await receiver.getByRole('checkbox', { checked: true }).count()).toBe(3);
    // Past the name and the reason to Accept; the focused control shows an outline.
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement.textContent')).toBe('Accept');
    expect(await page.evaluate('getComputedStyle(document.activeElement).outlineStyle')).toBe('solid');
    await page.keyboard.press('Enter');
    await page.locator('.afterward [data-state="accepted"]').waitFor();
    expect(problems.errors).toEqual([]);
  });
});
