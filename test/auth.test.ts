import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  authenticateSession,
  authenticateToken,
  authorize,
  createToken,
  createWebSession,
  endWebSession,
  hashSecret,
} from '../src/app/auth.ts';
import type { AppDeps } from '../src/app/deps.ts';
import { fixedClock } from '../src/core/clock.ts';
import { expectBatonError } from '../src/store/conformance/store.conformance.ts';
import { tempSqliteStore } from './helpers/sqlite.ts';

describe('tokens and web sessions', () => {
  let harness: Awaited<ReturnType<typeof tempSqliteStore>>;
  const clock = fixedClock('2026-12-02T16:00:00.000Z');
  let deps: AppDeps;

  beforeEach(async () => {
    harness = await tempSqliteStore();
    deps = { store: harness.store, clock };
    await deps.store.createProject('acme');
    await deps.store.createProject('other');
  });
  afterEach(() => harness.dispose());

  it('shows a token once and stores only its hash', async () => {
    const created = await createToken(deps, { project_id: 'acme', label: 'ci' });
    expect(created.token).toMatch(/^baton_[A-Za-z0-9_-]{43}$/);
    const [stored] = await deps.store.listTokens('acme');
    expect(stored!.token_hash).toBe(hashSecret(created.token));
    expect(JSON.stringify(stored)).not.toContain(created.token);
    expect(await authenticateToken(deps, created.token)).toEqual({
      project_id: 'acme',
      token_id: created.token_id,
      read_only: false,
    });
  });

  it('refuses missing, malformed, unknown and revoked tokens', async () => {
    const created = await createToken(deps, { project_id: 'acme' });
    await expectBatonError(authenticateToken(deps, undefined), 'unauthorized');
    await expectBatonError(authenticateToken(deps, 'Bearer nonsense'), 'unauthorized');
    await expectBatonError(authenticateToken(deps, `${created.token}x`), 'unauthorized');
    await deps.store.revokeToken('acme', created.token_id);
    await expectBatonError(authenticateToken(deps, created.token), 'unauthorized');
    await expectBatonError(createToken(deps, { project_id: 'nobody' }), 'not_found');
  });

  it('forbids writes to a read-only token', async () => {
    const reader = await authenticateToken(
      deps,
      (await createToken(deps, { project_id: 'acme', read_only: true })).token,
    );
    expect(() => authorize(reader, 'read')).not.toThrow();
    await expectBatonError(() => authorize(reader, 'write'), 'forbidden');
  });

  it('binds a session cookie to its token, needs the CSRF secret for every request, and expires', async () => {
    const created = await createToken(deps, { project_id: 'acme' });
    const session = await createWebSession(deps, created.token);
    expect(session.principal.project_id).toBe('acme');
    await expectBatonError(authenticateSession(deps, session.session, undefined), 'forbidden');
    await expectBatonError(authenticateSession(deps, session.session, 'wrong'), 'forbidden');
    expect((await authenticateSession(deps, session.session, session.csrf)).token_id).toBe(created.token_id);
    clock.advance(13 * 60 * 60 * 1000);
    await expectBatonError(authenticateSession(deps, session.session, session.csrf), 'unauthorized');
    clock.advance(-13 * 60 * 60 * 1000);
    await endWebSession(deps, session.session);
    await expectBatonError(authenticateSession(deps, session.session, session.csrf), 'unauthorized');
    await expectBatonError(createWebSession(deps, 'baton_unknown'), 'unauthorized');
  });
});
