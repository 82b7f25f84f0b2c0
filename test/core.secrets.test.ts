import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  isOrdinaryVariable,
  redactionMarker,
  scrubSecrets,
  secretValuesFromEnv,
} from '../src/core/secrets.ts';

const r = redactionMarker;

describe('scrubSecrets: known formats', () => {
  const cases: readonly (readonly [string, string, string])[] = [
    ['a Baton API token', `token baton_${'Ab3_-'.repeat(8)}xyz issued`, `token ${r} issued`],
    ['a bearer header', 'Authorization: Bearer abc.DEF-123_456~+/=', `Authorization: Bearer ${r}`],
    [
      'a basic header',
      'curl -H "Authorization: Basic dXNlcjpwYXNzd29yZA=="',
      `curl -H "Authorization: Basic ${r}"`,
    ],
    ['an AWS access key id', 'key AKIAIOSFODNN7EXAMPLE used', `key ${r} used`],
    ['a GitHub classic token', `ghp_${'a1B2'.repeat(9)}`, r],
    ['a GitHub OAuth token', `gho_${'Z9y8'.repeat(9)}`, r],
    ['a GitHub fine-grained token', 'github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv', r],
    ['an sk- API key', 'OPENAI=sk-proj-abcdefghijklmnopqrstuvwxyz012345', `OPENAI=${r}`],
    ['an Anthropic key', 'sk-ant-api03-abcdefghijklmnopqrstuvwxyz-ABCDEF', r],
    ['a Stripe key', 'sk_live_abcdefghijklmnop1234', r],
    ['a Slack token', 'xoxb-123456789012-abcdefghijklmnop', r],
    [
      'a JWT',
      'jwt=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U;',
      `jwt=${r};`,
    ],
    [
      'a PEM private key block',
      'before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nq83ks==\n-----END RSA PRIVATE KEY-----\nafter',
      `before\n${r}\nafter`,
    ],
    [
      'a PEM block cut off by an output cap',
      'x\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXkt',
      `x\n${r}`,
    ],
    ['a password assignment', 'login password=hunter2 ok', `login password=${r} ok`],
    ['a quoted JSON secret', '{"api_key": "abc 123", "name": "x"}', `{"api_key": "${r}", "name": "x"}`],
    ['a single-quoted YAML secret', "client_secret: 'q w e'", `client_secret: '${r}'`],
    ['an environment-style key', 'AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG', `AWS_SECRET_ACCESS_KEY=${r}`],
    ['a token query parameter', 'GET /hook?token=abc123&page=2', `GET /hook?token=${r}&page=2`],
    [
      'a URL password, keeping the user',
      'postgres://bob:s3cr3t@db:5432/app',
      `postgres://bob:${r}@db:5432/app`,
    ],
  ];

  for (const [name, input, expected] of cases) {
    it(`redacts ${name}`, () => {
      const result = scrubSecrets(input);
      expect(result.text).toBe(expected);
      expect(result.redactions).toBe(1);
    });
  }

  it('counts every redaction and redacts a token once, not again as an assignment value', () => {
    const result = scrubSecrets(`TOKEN=ghp_${'q'.repeat(36)}\npassword=x1 secret=x2`);
    expect(result).toEqual({ text: `TOKEN=${r}\npassword=${r} secret=${r}`, redactions: 3 });
  });

  it('leaves ordinary output alone', () => {
    const text = [
      'src/app/auth.ts(12,3): error TS2322: Type string is not assignable to type number.',
      ' ✓ test/core.ids.test.ts (3 tests) 12ms',
      'https://example.com/docs/page?id=7',
      'password=""',
      '',
    ].join('\n');
    expect(scrubSecrets(text)).toEqual({ text, redactions: 0 });
  });
});

describe('scrubSecrets: time', () => {
  // A shell criterion's output (64 KiB of stdout and of stderr) is scrubbed on the server's
  // event loop: a pattern that backtracks over long runs of name or token characters froze
  // every client of the server for minutes. Each text is one long run such a pattern re-scans.
  const size = 128 * 1024;
  const runs = {
    letters: 'a',
    dotted: 'a.',
    dashed: 'a-',
    'secret names': 'password',
    'JWT starts': 'eyJ-',
    'URL schemes': 'a+',
  };
  for (const [name, unit] of Object.entries(runs)) {
    it(`scrubs 128 KiB of ${name} in well under a second`, () => {
      const text = unit.repeat(size / unit.length);
      const started = performance.now();
      expect(scrubSecrets(text)).toEqual({ text, redactions: 0 });
      expect(performance.now() - started).toBeLessThan(1000);
    });
  }

  it('still redacts what follows such a run', () => {
    const text = `${'a-'.repeat(20_000)} x-eyJhbGciOi.eyJzdWIiOi.c2ln my.password=hunter22 https://u:pw@h`;
    expect(scrubSecrets(text).text).toBe(`${'a-'.repeat(20_000)} x-${r} my.password=${r} https://u:${r}@h`);
  });
});

describe('scrubSecrets: exact values', () => {
  it('replaces every occurrence, the longest value first', () => {
    const result = scrubSecrets('a=abcdefgh b=abcdefgh-long c=abcdefgh', {
      values: ['abcdefgh', 'abcdefgh-long'],
    });
    expect(result).toEqual({ text: `a=${r} b=${r} c=${r}`, redactions: 3 });
  });

  it('treats values literally, not as patterns', () => {
    expect(scrubSecrets('x.*y and xaay', { values: ['x.*y'] }).text).toBe(`${r} and xaay`);
  });

  it('also hides the JSON-escaped form of a value', () => {
    const value = 'pa"ss\\word\n1';
    const text = JSON.stringify({ out: value });
    expect(scrubSecrets(text, { values: [value] }).text).toBe(`{"out":"${r}"}`);
  });

  it('does not let a marker and its neighbour form another value', () => {
    const result = scrubSecrets('secretAAAabcdefg', { values: ['secretAAA', 'd]abcdefg'] });
    expect(result.text).not.toContain('secretAAA');
    expect(result.text).not.toContain('d]abcdefg');
  });

  it('ignores the empty value', () => {
    expect(scrubSecrets('plain', { values: [''] })).toEqual({ text: 'plain', redactions: 0 });
  });
});

describe('scrubSecrets: property', () => {
  const hideable = (value: string): boolean => value !== '' && !r.includes(value);
  // A small alphabet that shares characters with the marker makes overlaps likely.
  const tricky = fc.string({
    unit: fc.constantFrom('[', ']', 'r', 'e', 'd', 'a', 'c', 't', 'x', '\n', '"'),
    maxLength: 12,
  });
  const anyText = fc.oneof(fc.string({ unit: 'binary', maxLength: 40 }), tricky);
  const planted = fc.array(
    fc.oneof(fc.string({ unit: 'binary', minLength: 1, maxLength: 16 }), tricky).filter(hideable),
    {
      minLength: 1,
      maxLength: 5,
    },
  );

  it('leaves no planted value in the output, whatever surrounds it', () => {
    fc.assert(
      fc.property(planted, fc.array(anyText, { minLength: 1, maxLength: 6 }), (values, around) => {
        const text =
          values.map((value, index) => `${around[index % around.length]}${value}`).join('') + around[0];
        const result = scrubSecrets(text, { values });
        for (const value of values) expect(result.text).not.toContain(value);
        expect(result.redactions).toBeGreaterThan(0);
      }),
      { numRuns: 2000 },
    );
  });

  it('hides every value secretValuesFromEnv takes from an environment', () => {
    const name = fc.stringMatching(/^[A-Z][A-Z0-9_]{0,12}$/).filter((n) => !isOrdinaryVariable(n));
    const value = fc.string({ unit: 'binary', minLength: 8, maxLength: 24 }).filter(hideable);
    fc.assert(
      fc.property(fc.dictionary(name, value, { minKeys: 1, maxKeys: 6 }), anyText, (env, around) => {
        const secrets = Object.values(env);
        const text = secrets.map((secret) => `${around}${secret}`).join(around);
        const result = scrubSecrets(text, { values: secretValuesFromEnv(env) });
        for (const secret of secrets) expect(result.text).not.toContain(secret);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('secretValuesFromEnv', () => {
  it('takes long values of any name, including unknown canaries and token variables', () => {
    const env = {
      BATON_CANARY_7f3a: 'zz-canary-0123456789',
      NODE_AUTH_TOKEN: 'npm-auth-abcdefgh',
      npm_config__authToken: 'registry-token-1',
      lowercase_name: 'secretvalue',
      SHORT: 'abc1234',
      EMPTY: '',
      UNSET: undefined,
    };
    expect(secretValuesFromEnv(env)).toEqual([
      'zz-canary-0123456789',
      'npm-auth-abcdefgh',
      'registry-token-1',
      'secretvalue',
    ]);
  });

  it('leaves out the values of ordinary variables, which fill every path in the output', () => {
    const env = {
      PATH: '/usr/local/bin:/usr/bin:/bin',
      HOME: '/home/someone',
      PWD: '/work/project',
      OLDPWD: '/work/previous',
      SHELL: '/usr/bin/bash',
      LANG: 'en_US.UTF-8',
      LC_ALL: 'en_US.UTF-8',
      TERM: 'xterm-256color',
      TMPDIR: '/var/tmp/someone',
      HOSTNAME: 'build-host-7',
      XDG_RUNTIME_DIR: '/run/user/1000',
      NODE_ENV: 'production',
      INIT_CWD: '/work/project',
      npm_lifecycle_script: 'vitest run',
      npm_package_json: '/work/project/package.json',
      _: '/usr/bin/env-program',
    };
    expect(secretValuesFromEnv(env)).toEqual([]);
  });

  it('adds each long line of a multi-line value, longest first', () => {
    const key = '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0\nabc\n-----END PRIVATE KEY-----';
    expect(secretValuesFromEnv({ DEPLOY_KEY: key })).toEqual([
      key,
      '-----BEGIN PRIVATE KEY-----',
      '-----END PRIVATE KEY-----',
      'MIIEvQIBADANBgkqhkiG9w0',
    ]);
  });

  it('finds a canary planted in process.env', () => {
    const name = `BATON_CANARY_${Date.now().toString(36)}`;
    process.env[name] = `zz-canary-${name}`;
    try {
      const values = secretValuesFromEnv(process.env);
      expect(values).toContain(`zz-canary-${name}`);
      const output = `leaked: zz-canary-${name}!`;
      expect(scrubSecrets(output, { values }).text).toBe(`leaked: ${r}!`);
    } finally {
      delete process.env[name];
    }
  });
});
