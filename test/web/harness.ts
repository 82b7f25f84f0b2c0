/**
 * The browser tests' real parts: a `baton serve` app (startServer) on a fresh SQLite file with
 * project `acme` and a token, Debian's Chromium driven by playwright-core (never a downloaded
 * browser), and "another client": the same HTTP API called with the bearer token, as the CLI or
 * an agent would. Nothing of the API is mocked.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { createToken } from '../../src/app/auth.ts';
import type { OperationResult } from '../../src/client/types.ts';
import type { WorkContinuity } from '../../src/core/continuity/projection.ts';
import type { WorkstreamReport } from '../../src/core/handoff/report.ts';
import type { HandoffResolution } from '../../src/core/handoff/resolution.ts';
import type { SourceRef } from '../../src/core/ledger/source.ts';
import type { AppDeps } from '../../src/app/deps.ts';
import { systemClock } from '../../src/core/clock.ts';
import { startServer } from '../../src/http/server.ts';
import { callServer, type Reply } from '../helpers/http.ts';
import { tempSqliteStore } from '../helpers/sqlite.ts';

export const chromiumPath = process.env.BATON_CHROMIUM ?? '/usr/bin/chromium';
export const desktop = { width: 1280, height: 800 } as const;
export const phone = { width: 390, height: 844 } as const;
export const project_id = 'acme';

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}

export type { SourceRef };

/** Another client of the same server: the API over HTTP with the bearer token. */
export class Client {
  readonly url: string;
  readonly token: string;

  constructor(url: string, token: string) {
    this.url = url;
    this.token = token;
  }

  async call<T>(method: string, path: string, body?: unknown, query?: Record<string, string>): Promise<T> {
    const reply: Reply = await callServer(this.url, this.token, method, path, { body, query });
    if (reply.status !== 200) throw new Error(`${method} ${path} answered ${reply.status}: ${reply.text}`);
    return reply.body as T;
  }

  post<T>(path: string, body: unknown): Promise<T> {
    return this.call<T>('POST', path, body);
  }

  async capture(
    scope_id: string,
    source_id: string,
    content: unknown = `log of ${source_id}`,
  ): Promise<SourceRef> {
    const receipt = await this.post<OperationResult<'capture_source'>>('/v1/work/sources/capture', {
      scope_id,
      source_id,
      kind: 'log',
      content,
    });
    return receipt.source_ref;
  }

  /** handoff_current_work then commit_handoff on the current head, as a CLI sender would. */
  async handoff(
    scope_id: string,
    source_id: string,
    fields: { objective: string; next?: string; state?: string[]; evidence?: SourceRef },
  ): Promise<{ revision: number; digest: string; boundary: SourceRef }> {
    const prepared = await this.post<OperationResult<'handoff_current_work'>>(
      '/v1/work/handoffs/prepare-current',
      {
        scope_id,
        source_id,
        objective: fields.objective,
        current_state: [
          ...(fields.state ?? ['The work is under way']).map((text) => ({ text, basis: 'declared' })),
          ...(fields.evidence
            ? [{ text: 'The failing test log is attached', basis: 'verified', evidence: [fields.evidence] }]
            : []),
        ],
        disposition: 'continue',
        next_action: { text: fields.next ?? `Next step after ${source_id}`, basis: 'declared' },
        omissions: ['Remote CI is unavailable here'],
      },
    );
    const committed = await this.post<OperationResult<'commit_handoff'>>('/v1/work/handoffs/commit', {
      scope_id,
      prepared: prepared.digest,
      expected_head: prepared.prepared_handoff.base_revision,
    });
    return {
      revision: committed.revision,
      digest: prepared.digest,
      boundary: prepared.boundary_receipt.source_ref,
    };
  }

  contract(
    scope_id: string,
    source_id: string,
    objective: string,
  ): Promise<OperationResult<'create_work_contract'>> {
    return this.post('/v1/work/contracts/create', {
      scope_id,
      source_id,
      objective,
      completion_criteria: ['the focused tests pass'],
    });
  }

  accept(
    scope_id: string,
    source_id: string,
    revision: number,
  ): Promise<OperationResult<'acknowledge_handoff'>> {
    return this.post('/v1/work/handoffs/acknowledge', {
      scope_id,
      source_id,
      target: { exact: revision },
      status: 'accepted',
      receiver_checks: { live_workspace: 'confirmed', capability: 'confirmed', authorization: 'confirmed' },
    });
  }

  retract(scope_id: string, source_id: string): Promise<unknown> {
    return this.post('/v1/work/sources/retract', { scope_id, source_id, reason: 'removed for the test' });
  }

  continuity(scope_id: string): Promise<WorkContinuity> {
    return this.call('GET', '/v1/work/continuity', undefined, { scope_id });
  }

  workstream(scope_id: string): Promise<WorkstreamReport> {
    return this.call('GET', '/v1/work/report', undefined, { scope_id });
  }

  latest(scope_id: string): Promise<HandoffResolution> {
    return this.post('/v1/work/handoffs/continue', { scope_id, selection: 'latest' });
  }
}

export interface WebServer {
  readonly url: string;
  readonly token: string;
  readonly client: Client;
  readonly deps: AppDeps;
  dispose(): Promise<void>;
}

/** A real server on a free port over a fresh SQLite file, with project acme and a writing token. */
export async function startWeb(): Promise<WebServer> {
  const opened = await tempSqliteStore();
  const deps: AppDeps = { store: opened.store, clock: systemClock };
  await deps.store.createProject(project_id);
  const { token } = await createToken(deps, { project_id, label: 'web test' });
  const server = await startServer({ deps, port: 0, logger: false });
  return {
    url: server.url,
    token,
    client: new Client(server.url, token),
    deps,
    async dispose() {
      await server.close();
      await opened.dispose();
    },
  };
}

export interface PageProblems {
  /** Console errors, uncaught page errors and CSP violations the page met. */
  readonly errors: string[];
}

/** A fresh browser context and page at a viewport, collecting every error the page meets. */
export async function newPage(
  browser: Browser,
  viewport: { width: number; height: number } = desktop,
): Promise<{ context: BrowserContext; page: Page; problems: PageProblems }> {
  const context = await browser.newContext({ viewport, locale: 'en-US' });
  const page = await context.newPage();
  const problems: PageProblems = { errors: [] };
  page.on('console', (message) => {
    if (message.type() === 'error') problems.errors.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.errors.push(`page: ${error.message}`));
  return { context, page, problems };
}

export interface BrowserSuite {
  /** This test's server. */
  readonly web: WebServer;
  /** A fresh browser context and page at a viewport (desktop by default), closed after the test. */
  readonly open: (viewport?: {
    width: number;
    height: number;
  }) => Promise<{ page: Page; problems: PageProblems }>;
}

/**
 * Registers a describe block's hooks: one browser for the block, a fresh server for each test,
 * and every page `open` made closed after its test.
 */
export function browserSuite(): BrowserSuite {
  let browser: Browser;
  let web: WebServer;
  let closers: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser.close();
  });
  beforeEach(async () => {
    web = await startWeb();
  });
  afterEach(async () => {
    for (const close of closers) await close();
    closers = [];
    await web.dispose();
  });
  return {
    get web() {
      return web;
    },
    open: async (viewport = desktop) => {
      const { context, page, problems } = await newPage(browser, viewport);
      closers.push(() => context.close());
      return { page, problems };
    },
  };
}

/** Open the page and log in with the token (by default the server's), as a person would. */
export async function logIn(page: Page, web: WebServer, token = web.token): Promise<void> {
  await page.goto(`${web.url}/`);
  await page.getByLabel('Project token').fill(token);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Workstreams' }).waitFor();
}

/** Go to a workstream's workspace (a same-page hash change) and wait for it to show. */
export async function openWorkspace(page: Page, scope_id: string): Promise<void> {
  await page.evaluate(`location.hash = ${JSON.stringify(`#/w/${encodeURIComponent(scope_id)}`)}`);
  await page.getByRole('heading', { name: 'What am I handing off?' }).waitFor();
}

/** How many reports the page has loaded so far (each load, background or asked for). */
export async function loads(page: Page): Promise<number> {
  return Number(await page.locator('main').getAttribute('data-loads'));
}

export const screenshotsDir = join(import.meta.dirname, '..', '..', 'docs', 'screenshots');

/** Screenshots for the README, written only when BATON_SCREENSHOTS=1 (they are committed files). */
export async function screenshot(
  page: Page,
  name: string,
  options: { fullPage?: boolean } = {},
): Promise<void> {
  if (process.env.BATON_SCREENSHOTS !== '1') return;
  mkdirSync(screenshotsDir, { recursive: true });
  await page.screenshot({ path: join(screenshotsDir, `${name}.png`), fullPage: options.fullPage ?? false });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
