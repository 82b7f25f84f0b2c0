/**
 * The secret scrubber: text that may become evidence, a projection or a log line passes through
 * `scrubSecrets` first, which replaces known token and key formats and every exact value the
 * caller names with `[redacted]`. It errs towards redacting too much: a lost word in evidence
 * costs little, a leaked credential cannot be taken back from an append-only ledger.
 */

export const redactionMarker = '[redacted]';

export interface ScrubOptions {
  /** Exact values to hide wherever they occur, such as those of `secretValuesFromEnv`. */
  readonly values?: readonly string[];
}

export interface Scrubbed {
  readonly text: string;
  /** How many replacements were made; 0 means the text came back unchanged. */
  readonly redactions: number;
}

interface Rule {
  readonly pattern: RegExp;
  /** The replacement of one match from its captures; undefined leaves the match as it is. */
  readonly replace: (match: string, captures: readonly (string | undefined)[]) => string | undefined;
}

const whole = (): string => redactionMarker;

/** Keeps the first capture (a scheme, a header name, `user:`) and redacts the second. */
function afterPrefix(_match: string, [prefix, value]: readonly (string | undefined)[]): string | undefined {
  if (value === undefined || value === redactionMarker) return undefined;
  return `${prefix ?? ''}${redactionMarker}`;
}

/** Like afterPrefix, but keeps the quotes around a quoted value; an empty value stays. */
function assignedValue(_match: string, [prefix, value]: readonly (string | undefined)[]): string | undefined {
  if (value === undefined) return undefined;
  const quote = /^["']/.test(value) ? value.charAt(0) : '';
  const inner = quote === '' ? value : value.slice(1, -1);
  if (inner === '' || inner === redactionMarker) return undefined;
  return `${prefix ?? ''}${quote}${redactionMarker}${quote}`;
}

/**
 * Names of assignments whose value is a secret: `password=…`, `"api_key": "…"`,
 * `AWS_SECRET_ACCESS_KEY=…`. A name is a whole run of name characters that holds one of the words
 * (a look-ahead), matched from the run's start only: `.*word.*` tried at every position
 * backtracked over a long run for minutes.
 */
const secretName =
  '(?<![A-Za-z0-9_.-])(?=[A-Za-z0-9_.-]*?(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credentials?))[A-Za-z0-9_.-]+';

/** Specific formats first, so that a generic rule never splits a token a specific rule knows. */
const rules: readonly Rule[] = [
  // PEM private keys, including a block cut off by an output cap (no END line).
  {
    pattern: /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----|[\s\S]*$)/g,
    replace: whole,
  },
  // Baton API tokens (src/app/auth.ts: `baton_` and 32 random bytes in base64url).
  { pattern: /\bbaton_[A-Za-z0-9_-]{32,}/g, replace: whole },
  // JSON Web Tokens: base64url header and payload that both start with `{"`. Tried only from the
  // first `eyJ` of a run of token characters (kept as the prefix): a later one in the same run
  // ends at the same `.`, so it matches only if the first does, and trying each would re-scan
  // the run every time.
  {
    pattern:
      /(?<![A-Za-z0-9_-])((?:(?!\beyJ)[A-Za-z0-9_-])*)(\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*)/g,
    replace: afterPrefix,
  },
  // AWS access key ids.
  { pattern: /\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b/g, replace: whole },
  // GitHub tokens: classic, OAuth, app and fine-grained.
  { pattern: /\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}/g, replace: whole },
  { pattern: /\bgithub_pat_[A-Za-z0-9_]{20,}/g, replace: whole },
  // GitLab, npm, Google and Slack tokens.
  { pattern: /\bglpat-[A-Za-z0-9_-]{20,}/g, replace: whole },
  { pattern: /\bnpm_[A-Za-z0-9]{36,}/g, replace: whole },
  { pattern: /\bAIza[0-9A-Za-z_-]{35}/g, replace: whole },
  { pattern: /\bxox[abeoprs]-[A-Za-z0-9-]{10,}/g, replace: whole },
  // `sk-…` keys (OpenAI, Anthropic and their kin) and Stripe-style `sk_live_…`.
  { pattern: /\bsk-[A-Za-z0-9_-]{20,}/g, replace: whole },
  { pattern: /\b[rsp]k_(?:live|test)_[A-Za-z0-9]{16,}/g, replace: whole },
  // Passwords in URLs: scheme://user:password@host keeps the user. A scheme starts where a run
  // of scheme characters starts, not after each `.`, `+` or `-` in it (which re-scanned the run).
  { pattern: /(?<![a-z0-9+.-])([a-z][a-z0-9+.-]*:\/\/[^\s/:@]*:)([^\s/@]+)(?=@)/gi, replace: afterPrefix },
  // Bearer credentials anywhere, then any Authorization header's credential (`Basic …`, `token …`).
  { pattern: /\b(Bearer\s+)([A-Za-z0-9._~+/=-]{8,})/gi, replace: afterPrefix },
  { pattern: /\b(Authorization["']?\s*[:=]\s*["']?(?:[A-Za-z]+\s+)?)([^\s"',;]+)/gi, replace: afterPrefix },
  // Assignments: `password=…`, `secret: "…"`, `"api_key": '…'`.
  {
    pattern: new RegExp(`(${secretName}["']?\\s*[:=]\\s*)("[^"\\n]*"|'[^'\\n]*'|[^\\s"'&,;]+)`, 'gi'),
    replace: assignedValue,
  },
];

function escapeRegExp(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * The exact strings to hide: each value and its JSON-escaped form, longest first so that a value
 * containing another is hidden whole. A value inside the marker itself cannot be hidden by it and
 * is left out; the empty string would match everywhere.
 */
function exactValues(values: readonly string[]): string[] {
  const all = new Set<string>();
  for (const value of values) {
    for (const form of [value, JSON.stringify(value).slice(1, -1)]) {
      if (form !== '' && !redactionMarker.includes(form)) all.add(form);
    }
  }
  return [...all].sort((a, b) => b.length - a.length || (a < b ? -1 : 1));
}

/** Passes over the text before giving up and hiding all of it. */
const maxValuePasses = 4;

/**
 * Replaces secrets with `[redacted]`. Exact values are replaced until none is left: a marker next
 * to other text can form another value again (`secret` + `d]tail`), and in the rare text where
 * that keeps happening the whole text is hidden rather than one value shown.
 */
export function scrubSecrets(text: string, options: ScrubOptions = {}): Scrubbed {
  let redactions = 0;
  let out = text;
  for (const rule of rules) {
    out = out.replace(rule.pattern, (...args: unknown[]) => {
      // (match, ...captures, offset, input): none of the patterns has named groups.
      const match = args[0] as string;
      const replaced = rule.replace(match, args.slice(1, -2) as (string | undefined)[]);
      if (replaced === undefined || replaced === match) return match;
      redactions += 1;
      return replaced;
    });
  }
  const values = exactValues(options.values ?? []);
  if (values.length === 0) return { text: out, redactions };
  const pattern = new RegExp(values.map(escapeRegExp).join('|'), 'g');
  for (let pass = 0; pass < maxValuePasses; pass += 1) {
    let found = 0;
    out = out.replace(pattern, () => {
      found += 1;
      return redactionMarker;
    });
    redactions += found;
    if (found === 0) return { text: out, redactions };
  }
  if (!values.some((value) => out.includes(value))) return { text: out, redactions };
  return { text: redactionMarker, redactions: redactions + 1 };
}

/**
 * Variables whose values are not secrets and are common in ordinary output (paths, the shell,
 * the terminal, the locale, npm's description of the running script): hiding them would turn
 * every file path in evidence into `[redacted]`. Everything else is treated as a secret,
 * whatever its name, including NODE_AUTH_TOKEN and every `npm_config_*`.
 */
const ordinaryNames = new Set([
  '_',
  'COLORTERM',
  'DISPLAY',
  'EDITOR',
  'HOME',
  'HOSTNAME',
  'INIT_CWD',
  'LANG',
  'LANGUAGE',
  'LOGNAME',
  'MAIL',
  'MANPATH',
  'NODE',
  'NODE_ENV',
  'NODE_PATH',
  'OLDPWD',
  'PAGER',
  'PATH',
  'PWD',
  'SHELL',
  'SHLVL',
  'TEMP',
  'TERM',
  'TERM_PROGRAM',
  'TERM_PROGRAM_VERSION',
  'TMP',
  'TMPDIR',
  'TZ',
  'USER',
  'VISUAL',
  'npm_command',
  'npm_execpath',
  'npm_node_execpath',
]);

const ordinaryPrefixes = ['LC_', 'XDG_', 'npm_lifecycle_', 'npm_package_'];

/** Shorter values would match ordinary words and numbers all over the text. */
export const minimumSecretLength = 8;

export function isOrdinaryVariable(name: string): boolean {
  return ordinaryNames.has(name) || ordinaryPrefixes.some((prefix) => name.startsWith(prefix));
}

/**
 * The values of an environment that must never reach the ledger: every value of at least
 * `minimumSecretLength` characters except those of ordinary variables, and each long enough line
 * of a multi-line value (a key printed line by line). Names do not decide secrecy: any variable
 * may hold a credential, so only the few known to hold none are left out.
 */
export function secretValuesFromEnv(env: Readonly<Record<string, string | undefined>>): string[] {
  const values = new Set<string>();
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || isOrdinaryVariable(name)) continue;
    for (const candidate of [value, ...value.split(/\r?\n/)]) {
      if (candidate.length >= minimumSecretLength) values.add(candidate);
    }
  }
  return [...values].sort((a, b) => b.length - a.length || (a < b ? -1 : 1));
}
