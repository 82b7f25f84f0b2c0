/**
 * The page across sessions and failures, in Chromium against a real server: what a logout
 * leaves behind, a session that ends under a write, a double click on a choice, and views
 * whose load failed or that name nothing.
 */
import type { Page } from 'playwright-core';
import { beforeEach, describe, expect, it } from 'vitest';
import { createToken } from '../../src/app/auth.ts';
import { browserSuite, Client, logIn, openWorkspace, type WebServer } from './harness.ts';

describe('the page across sessions and failures', () => {
  const suite = browserSuite();
  let web: WebServer;
  let page: Page;

  beforeEach(async () => {
    web = suite.web;
    page = (await suite.open()).page;
  });

  const card = () => page.getByRole('region', { name: 'What am I handing off?' });
  const objective = () => card().getByRole('textbox', { name: 'Objective', exact: true });
  const receiver = () => page.getByRole('region', { name: 'Can I take it?' });
  const loginForm = () => page.getByLabel('Project token');

  /** Log in on the login form the page shows now, without loading the page again. */
  async function logInHere(token: string): Promise<void> {
    await loginForm().fill(token);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('button', { name: 'Log out' }).waitFor();
  }

  /** A second project with its own token, and its own workstream `alpha` at revision 1. */
  async function otherProject(): Promise<{ token: string; client: Client }> {
    await web.deps.store.createProject('other');
    const { token } = await createToken(web.deps, { project_id: 'other' });
    const client = new Client(web.url, token);
    await client.handoff('alpha', 'other-b1', { objective: 'The other project’s own plan' });
    return { token, client };
  }

  it('drops unsent drafts and forms on logout: the next login, to another project or the same one, never sees or sends them', async () => {
    await web.client.handoff('alpha', 'acme-b1', { objective: 'Acme’s plan' });
    const other = await otherProject();
    await logIn(page, web);
    await openWorkspace(page, 'alpha');
    await objective().fill('SECRET: acme’s unsent plan');
    await receiver()
      .getByRole('textbox', { name: /^Reason/ })
      .fill('acme’s private reason');

    await page.getByRole('button', { name: 'Log out' }).click();
    await logInHere(other.token);
    await openWorkspace(page, 'alpha');
    expect(await objective().inputValue()).toBe('The other project’s own plan');
    expect(
      await receiver()
        .getByRole('textbox', { name: /^Reason/ })
        .inputValue(),
    ).toBe('');
    await page.getByRole('status').filter({ hasText: 'Updates every 5 seconds' }).waitFor();

    await page.getByRole('button', { name: 'Log out' }).click();
    await logInHere(web.token);
    await openWorkspace(page, 'alpha');
    expect(await objective().inputValue()).toBe('Acme’s plan');
    const report = await other.client.workstream('alpha');
    expect(report.selection.revision).toBe(1);
  });

  it('returns to the login form when a write finds the session ended, and keeps the draft for the same project', async () => {
    await web.client.handoff('relay', 'b1', { objective: 'Revision one' });
    await logIn(page, web);
    await openWorkspace(page, 'relay');
    await objective().fill('Revision two, typed before the session ended');
    // The session ends elsewhere (another tab logged out, or it expired).
    await page.evaluate(() => fetch('/v1/session', { method: 'DELETE' }).then(() => undefined));
    await card().getByRole('button', { name: 'Send Handoff' }).click();
    await loginForm().waitFor();

    await logInHere(web.token);
    await openWorkspace(page, 'relay');
    expect(await objective().inputValue()).toBe('Revision two, typed before the session ended');
    expect((await web.client.workstream('relay')).selection.revision).toBe(1);
  });

  it('says on the login form that the session ended, and puts the focus in the token field', async () => {
    await web.client.handoff('relay', 'b1', { objective: 'Revision one' });
    await logIn(page, web);
    await openWorkspace(page, 'relay');
    // The session ends while the page is open (it expired, or was ended elsewhere).
    await page.evaluate(() => fetch('/v1/session', { method: 'DELETE' }).then(() => undefined));
    await page.getByRole('button', { name: 'Refresh', exact: true }).click();
    await loginForm().waitFor();
    await page.getByRole('alert').filter({ hasText: 'Your session ended' }).waitFor();
    expect(await page.evaluate('document.activeElement.id')).toBe('token');

    await logInHere(web.token);
    expect(await page.getByRole('alert').count()).toBe(0);
  });

  it('shares the session among the tabs of one browser: a new tab is logged in, and a login in one tab keeps the other working', async () => {
    await web.client.handoff('relay', 'b1', { objective: 'Revision one' });
    await logIn(page, web);
    const second = await page.context().newPage();
    await second.goto(`${web.url}/`);
    await second.getByRole('heading', { name: 'Workstreams' }).waitFor();

    // A logout in the second tab ends the first one's session too, and a new login there
    // (whose cookie the first tab now sends) carries the first one on.
    await second.getByRole('button', { name: 'Log out' }).click();
    await loginForm().waitFor();
    await second.getByLabel('Project token').fill(web.token);
    await second.getByRole('button', { name: 'Log in' }).click();
    await second.getByRole('heading', { name: 'Workstreams' }).waitFor();
    await second.close();

    await page.getByRole('button', { name: 'Log out' }).waitFor();
    await openWorkspace(page, 'relay');
    await receiver().locator('.preflight-for').waitFor();
    await page.getByRole('button', { name: 'Refresh', exact: true }).click();
    await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 300)));
    expect(await page.getByRole('alert').count()).toBe(0);
  });

  it('says a read-only session is read-only and disables its writes, each with a hint why; the server refuses them anyway', async () => {
    await web.client.handoff('relay', 'b1', { objective: 'Revision one' });
    await web.client.accept('relay', 'r1', 1); // the outcome form shows
    const { token } = await createToken(web.deps, { project_id: 'acme', read_only: true });
    /** The text of what describes an element (aria-describedby). */
    const description = async (locator: ReturnType<typeof card>) => {
      const ids = ((await locator.getAttribute('aria-describedby')) ?? '').split(' ');
      const texts = ids.map((id) =>
        page.evaluate(`document.getElementById(${JSON.stringify(id)})?.textContent ?? ''`),
      );
      return (await Promise.all(texts)).join(' ');
    };
    const expectDisabled = async () => {
      await page.getByRole('banner').getByText('read-only', { exact: true }).waitFor();
      const controls = [
        card().getByRole('button', { name: 'Send Handoff' }),
        ...['Accept', 'Needs clarification', 'Decline'].map((name) =>
          receiver().getByRole('button', { name, exact: true }),
        ),
        page
          .getByRole('form', { name: 'Record what happened' })
          .getByRole('button', { name: 'Record outcome' }),
      ];
      for (const control of controls) {
        expect(await control.isDisabled()).toBe(true);
        expect(await description(control)).toContain('This session is read-only');
        expect(await control.isVisible()).toBe(true);
      }
    };
    await logIn(page, web, token);
    await openWorkspace(page, 'relay');
    await receiver().locator('.preflight-for').waitFor();
    await expectDisabled();
    await page.reload(); // the tab remembers it
    await receiver().locator('.preflight-for').waitFor();
    await expectDisabled();

    // The page only says so: the server itself refuses a write of this session.
    const status = await page.evaluate(async () => {
      const { csrf } = JSON.parse(sessionStorage.getItem('baton.session') ?? '{}') as { csrf: string };
      const reply = await fetch('/v1/work/sources/capture', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
        body: JSON.stringify({ scope_id: 'relay', source_id: 'by-reader', kind: 'log', content: 'x' }),
      });
      return reply.status;
    });
    expect(status).toBe(403);

    // A writing session in the same tab has its controls back.
    await page.getByRole('button', { name: 'Log out' }).click();
    await logInHere(web.token);
    await openWorkspace(page, 'relay');
    expect(await page.getByRole('banner').getByText('read-only', { exact: true }).count()).toBe(0);
    expect(await card().getByRole('button', { name: 'Send Handoff' }).isEnabled()).toBe(true);
  });

  it('stores one receipt for a double click on a choice', async () => {
    await web.client.handoff('relay', 'b1', { objective: 'Take this once' });
    await logIn(page, web);
    await openWorkspace(page, 'relay');
    await receiver().locator('.preflight-for').waitFor();
    for (const name of [
      'The live workspace matches this workstream',
      'I have the capability to do the next action',
      'I am authorized to do the next action',
    ])
      await receiver().getByRole('checkbox', { name }).check();
    await receiver().getByRole('button', { name: 'Accept', exact: true }).dblclick();
    await receiver().getByText('Recorded: accepted for revision 1.').waitFor();
    await page.getByRole('status').filter({ hasText: 'Updates every 5 seconds' }).waitFor();
    expect((await web.client.continuity('relay')).counts['handoff-receipt']).toBe(1);
  });

  it('shows a Markdown view’s own load only: an earlier failure does not stay on screen', async () => {
    await web.client.handoff('relay', 'b1', { objective: 'Only one revision' });
    await logIn(page, web);
    await page.evaluate("location.hash = '#/w/relay/markdown?through=9'");
    await page.getByRole('alert').filter({ hasText: 'through' }).waitFor();
    await page.evaluate("location.hash = '#/w/relay/markdown?through=1'");
    await expect.poll(() => page.locator('pre.markdown').textContent()).toContain('revision 1 of 1');
    expect(await page.getByRole('alert').count()).toBe(0);
  });

  it('keeps a card with a 2,000-character objective as short as its neighbours, the whole text in its title', async () => {
    const long = `${'A very long objective that goes on. '.repeat(55)}`.slice(0, 2000);
    await web.client.handoff('long', 'b1', { objective: long });
    await web.client.handoff('short', 'b1', { objective: 'Short' });
    await logIn(page, web);
    const objectiveOf = (scope: string) => page.locator(`li[data-scope="${scope}"] dd.objective`);
    expect(await objectiveOf('long').getAttribute('title')).toBe(long);
    const height = async (scope: string) => (await objectiveOf(scope).boundingBox())?.height ?? Infinity;
    expect(await height('long')).toBeLessThanOrEqual(5 * (await height('short')));
  });

  it('says a workstream has nothing recorded, not that the project has no workstreams', async () => {
    await web.client.handoff('relay', 'b1', { objective: 'Something exists' });
    await logIn(page, web);
    await page.evaluate("location.hash = '#/w/does-not-exist'");
    await page.getByRole('heading', { name: 'does-not-exist' }).waitFor();
    const main = page.locator('main');
    await expect.poll(() => main.textContent()).toContain('Nothing is recorded in workstream does-not-exist');
    expect(await main.textContent()).not.toContain('No workstreams yet');
  });

  it('stays logged in to the new session when an answer to the one before arrives late as 401', async () => {
    const other = await otherProject();
    // The first report load (the first session's) is held, then answered 401 after the next login.
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    let held = false;
    await page.route('**/v1/work/report', async (route) => {
      if (held) return route.continue();
      held = true;
      await released;
      await route.fulfill({
        status: 401,
        contentType: 'application/json',
        body: JSON.stringify({ error: { code: 'unauthorized', message: 'the session ended', details: {} } }),
      });
    });
    await page.goto(`${web.url}/`);
    await logInHere(web.token);
    await expect.poll(() => held).toBe(true);
    await page.getByRole('button', { name: 'Log out' }).click();
    await logInHere(other.token);
    await page.getByRole('heading', { name: 'Workstreams' }).waitFor();
    release();
    // The late 401 belonged to the session that was ended: the new one carries on.
    await openWorkspace(page, 'alpha');
    expect(await objective().inputValue()).toBe('The other project’s own plan');
    expect(await loginForm().count()).toBe(0);
    await page.getByRole('button', { name: 'Log out' }).waitFor();
  });

  it('never shows a report of the session before that arrives after the next login', async () => {
    await web.client.handoff('acme-only', 'acme-b1', { objective: 'Acme’s own plan' });
    const other = await otherProject();
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    let answered: Promise<void> | undefined;
    await page.route('**/v1/work/report', async (route) => {
      if (answered !== undefined) return route.continue();
      // The first session's report, fetched now and delivered after the next login.
      const response = await route.fetch();
      answered = released.then(() => route.fulfill({ response }));
      await answered;
    });
    await page.goto(`${web.url}/`);
    await logInHere(web.token);
    await expect.poll(() => answered !== undefined).toBe(true);
    await page.getByRole('button', { name: 'Log out' }).click();
    await logInHere(other.token);
    await page.getByRole('heading', { name: 'Workstreams' }).waitFor();
    await expect.poll(() => page.locator('main').textContent()).toContain('alpha');
    release();
    await answered;
    await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 200)));
    const shown = await page.locator('main').textContent();
    expect(shown).toContain('alpha');
    expect(shown).not.toContain('acme-only');
  });

  it('never lets a send of the session before land in the next one’s memory', async () => {
    await web.client.handoff('alpha', 'acme-b1', { objective: 'Acme’s plan' });
    const other = await otherProject();
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    let held = false;
    await page.route('**/v1/work/handoffs/prepare-current', async (route) => {
      held = true;
      await released;
      await route.fulfill({
        status: 503,
        contentType: 'application/json',
        body: JSON.stringify({
          error: { code: 'unavailable', message: 'acme’s send failed late', details: {} },
        }),
      });
    });
    await logIn(page, web);
    await openWorkspace(page, 'alpha');
    await objective().fill('SECRET: acme’s plan, being sent');
    await card().getByRole('button', { name: 'Send Handoff' }).click();
    await expect.poll(() => held).toBe(true);
    await page.getByRole('button', { name: 'Log out' }).click();
    await logInHere(other.token);
    await openWorkspace(page, 'alpha');
    release();
    await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 300)));
    const shown = await card().textContent();
    expect(shown).not.toContain('acme’s send failed late');
    expect(shown).not.toContain('Not sent');
    expect(await objective().inputValue()).toBe('The other project’s own plan');
  });
});
