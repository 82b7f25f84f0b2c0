/**
 * The Handoff Report's Markdown shows stored text literally: read by a CommonMark + GFM parser,
 * no stored value makes a heading, link, image, HTML, emphasis, code, list, quote or table cell.
 */
import fc from 'fast-check';
import MarkdownIt, { type Token } from 'markdown-it';
import { describe, expect, it } from 'vitest';
import type { Digest } from '../src/core/canonical.ts';
import type { WorkKind } from '../src/core/continuity/records.ts';
import { reportMarkdown, workstreamMarkdown, type WorkstreamReport } from '../src/core/handoff/report.ts';
import type { Disposition } from '../src/core/handoff/prepared.ts';
import { literal } from '../src/core/markdown.ts';
import { visibleControls } from '../src/core/text.ts';

const md = new MarkdownIt('commonmark', { html: true, linkify: false }).enable(['table', 'strikethrough']);
const gfmLinks = new MarkdownIt({ html: true, linkify: true });

/** What a reader sees of a stored value: trimmed, controls as escapes, each line break as ⏎. */
function shown(value: string): string {
  return visibleControls(value.trim()).replace(/\n/g, '⏎');
}

const hostile = [
  '# Pwned',
  'Heading\n# Pwned',
  '*em* **strong** _u_ __uu__ ***both***',
  '[click](javascript:alert(1))',
  '![img](https://evil.example/x.png)',
  '<javascript:alert(1)>',
  '<https://evil.example/>',
  '<img src=x onerror=alert(1)>',
  '<script>alert(1)</script>',
  '```\ncode\n```',
  '~~~js\ncode',
  '`code` ``double `` span',
  'a | b | c',
  'cell\n| x | y |\n| --- | --- |',
  '- item\n- item',
  '* star\n+ plus',
  '1. one\n2) two',
  '> quote\n>> deeper',
  '---',
  '***',
  'text\n===',
  'text\n---',
  '[ref]: https://evil.example "title"\n[ref]',
  '    indented code',
  'tail\n\n    indented code',
  '~~strike~~',
  'https://evil.example www.evil.example a@evil.example',
  '&amp; &lt;script&gt; &#60;',
  '\\* backslash \\',
  'trailing hashes ##',
  'hard  \nbreak',
  '[^note] footnote\n\n[^note]: text',
  'Deploy \u001b[31mnow\u001b[0m safe\rdone \u202eevil',
  '  padded\t',
];

const digest: Digest = `sha256:${'0'.repeat(64)}`;

/** Every stored value of a blocked handoff's report holds `payload`, tagged with its field. */
function hostileReport(payload: string): { report: WorkstreamReport; values: string[] } {
  const values: string[] = [];
  const value = (field: string) => {
    const text = `${payload} ⟨${field}⟩ ${payload}`;
    values.push(text);
    return text;
  };
  const ref = (field: string) => ({ scope_id: value(`ref-scope-${field}`), source_id: value(field), digest });
  const scope_id = value('scope');
  const report: WorkstreamReport = {
    scope_id,
    selection: { revision: 2, position: 9 },
    revision_count: 2,
    current: {
      revision: 2,
      digest,
      committed_at: '2026-01-01T00:00:00Z',
      handoff: {
        schema: 'baton.prepared-handoff/v1',
        scope_id,
        base_revision: 1,
        objective: value('objective'),
        disposition: value('disposition') as Disposition,
        statements: [
          { text: value('verified'), basis: 'verified', citations: [ref('cite-1'), ref('cite-2')] },
          { text: value('declared'), basis: 'declared', citations: [] },
        ],
        next_action: { text: value('next'), citations: [ref('next-cite')] },
        omissions: [value('omission-1'), value('omission-2')],
        blocked: {
          question: value('question'),
          options: [value('option-1'), value('option-2')],
          impact: value('impact'),
        },
      },
    },
    revisions: [2, 1].map((revision) => ({
      revision,
      digest,
      committed_at: '2026-01-01T00:00:00Z',
      objective: value(`summary-objective-${revision}`),
      disposition: value(`summary-disposition-${revision}`) as Disposition,
      next_action: value(`summary-next-${revision}`),
      current: revision === 2,
    })),
    continuity: {
      scope_id,
      current: { revision: 2, digest },
      counts: { 'work-contract': 1, 'handoff-boundary': 0, 'handoff-receipt': 1, 'task-outcome': 1 },
      invalid_record_count: 0,
      timeline: [3, 5, 7].map((position) => ({
        position,
        kind: value(`kind-${position}`) as WorkKind,
        source_ref: ref(`timeline-${position}`),
        summary: value(`timeline-summary-${position}`),
        ...(position === 3 ? {} : { status: value(`status-${position}`) }),
      })),
      truncated: false,
      transfer_state: 'accepted',
      outcome_state: 'covered',
      active_receipt_ref: null,
      covering_outcome_ref: null,
    },
    trust: 'untrusted_history',
  };
  // Source refs of the timeline are not shown; only their summaries are.
  return { report, values: values.filter((text) => !/⟨(ref-scope-|timeline-\d)/.test(text)) };
}

function flatten(tokens: readonly Token[]): Token[] {
  return tokens.flatMap((token) => [token, ...flatten(token.children ?? [])]);
}

/** The text a reader sees in one inline run: its text tokens, a soft or hard break as a line feed. */
function inlineText(token: Token): string {
  return (token.children ?? [])
    .map((child) => (child.type === 'text' ? child.content : /break$/.test(child.type) ? '\n' : ''))
    .join('');
}

function count(tokens: readonly Token[], type: string, tag?: string): number {
  return tokens.filter((token) => token.type === type && (tag === undefined || token.tag === tag)).length;
}

/** The parsed document, after checking that it holds only the structure a report may make. */
function parse(markdown: string, parser = md) {
  const tokens = flatten(parser.parse(markdown, {}));
  const allowed = new Set([
    'heading_open',
    'heading_close',
    'paragraph_open',
    'paragraph_close',
    'inline',
    'text',
    'strong_open',
    'strong_close',
    'em_open',
    'em_close',
    'bullet_list_open',
    'bullet_list_close',
    'ordered_list_open',
    'ordered_list_close',
    'list_item_open',
    'list_item_close',
    'blockquote_open',
    'blockquote_close',
    'hr',
    ...['table', 'thead', 'tbody', 'tr', 'th', 'td'].flatMap((tag) => [`${tag}_open`, `${tag}_close`]),
  ]);
  expect(tokens.filter((token) => !allowed.has(token.type)).map((token) => token.type)).toEqual([]);
  const html = parser.render(markdown);
  for (const tag of ['<a', '<img', '<script', '<code', '<pre', '<s>', '<del', '<br', '<h4', '<h5', '<h6']) {
    expect(html).not.toContain(tag);
  }
  const texts = tokens.filter((token) => token.type === 'inline').map(inlineText);
  const headings = tokens.flatMap((token, index) =>
    token.type === 'heading_open' ? [`${token.tag} ${inlineText(tokens[index + 1]!)}`] : [],
  );
  return { tokens, texts, headings };
}

function expectWorkstream(markdown: string, payload: string, values: readonly string[], level: 1 | 2) {
  const { tokens, texts, headings } = parse(markdown);
  const h = (depth: number) => `h${depth + level - 1}`;
  expect(headings).toEqual([
    `${h(1)} Handoff: ${shown(`${payload} ⟨objective⟩ ${payload}`)}`,
    ...[
      'Next action',
      'Decision needed: this work is blocked',
      'Not included (omissions)',
      'Where the work stands',
      'Revision trail',
      'What happened afterward',
    ].map((title) => `${h(2)} ${title}`),
  ]);
  for (const value of values) {
    expect(
      texts.some((text) => text.includes(shown(value))),
      value,
    ).toBe(true);
  }
  // The report's own emphasis only: the disposition, three labels, two omissions, the two states; two "cites".
  expect(count(tokens, 'strong_open')).toBe(8);
  expect(count(tokens, 'em_open')).toBe(2);
  expect(count(tokens, 'blockquote_open')).toBe(1);
  expect(count(tokens, 'hr')).toBe(1);
  expect(count(tokens, 'bullet_list_open')).toBe(2);
  expect(count(tokens, 'ordered_list_open')).toBe(1);
  expect(count(tokens, 'list_item_open')).toBe(6);
  expect(count(tokens, 'table_open')).toBe(2);
  expect(count(tokens, 'tr_open')).toBe(1 + 2 + 1 + 3);
  expect(count(tokens, 'td_open')).toBe(2 * 4 + 3 * 3);
  expect(texts).toContain('Transfer: accepted · outcome: covered');
}

describe('the Handoff Report Markdown shows stored text literally', () => {
  it.each(hostile.map((payload) => [JSON.stringify(payload), payload]))(
    'a workstream whose every stored value is %s',
    (_, payload) => {
      const { report, values } = hostileReport(payload);
      expectWorkstream(workstreamMarkdown(report), payload, values, 1);
    },
  );

  it.each(hostile.map((payload) => [JSON.stringify(payload), payload]))(
    'a project report whose ids and stored values are %s',
    (_, payload) => {
      const { report, values } = hostileReport(payload);
      const empty: WorkstreamReport = {
        ...report,
        scope_id: `${payload} ⟨empty⟩`,
        current: null,
        revisions: [],
        revision_count: 0,
        continuity: { ...report.continuity, timeline: [] },
      };
      const markdown = reportMarkdown({
        schema: 'baton.handoff-report/v1',
        project_id: `${payload} ⟨project⟩`,
        workstreams: [report, empty],
      });
      const [first, second] = markdown.split(/\n(?=## Workstream )/);
      expectWorkstream(first!.split('\n').slice(2).join('\n'), payload, values, 2);
      const { headings } = parse(markdown);
      expect(headings[0]).toBe(`h1 Handoff Report: project ${shown(`${payload} ⟨project⟩`)}`);
      expect(parse(second!).headings).toEqual([
        `h2 Workstream ${shown(`${payload} ⟨empty⟩`)}`,
        'h3 Work recorded so far',
      ]);
    },
  );

  it('makes no link even where a renderer links bare URLs and addresses (GFM autolinks)', () => {
    const { report } = hostileReport(
      'https://evil.example www.evil.example a@evil.example mailto:a@b.example',
    );
    const html = gfmLinks.render(workstreamMarkdown(report));
    expect(html).not.toContain('<a');
  });
});

describe('literal', () => {
  const markdownish = fc.constantFrom(
    ...'!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~ \t\n\r\u000b\u000c\u00a0\u0000\u001b\u202e⏎aZ09wé'.split(''),
    'javascript:',
    'https://',
    'www.',
    '&amp;',
    '&#60;',
    '<img ',
    '    ',
    '---',
    '===',
    '```',
  );
  const values = fc.oneof(
    fc.string({ unit: markdownish, maxLength: 40 }),
    fc.string({ unit: 'grapheme', maxLength: 40 }),
    fc.string({ unit: 'binary', maxLength: 40 }),
  );

  it('shows any value as exactly its text when parsed as an inline', () => {
    fc.assert(
      fc.property(values, (value) => {
        const [inline, ...rest] = md.parseInline(literal(value), {});
        expect(rest).toEqual([]);
        expect(inline!.children!.map((child) => child.type).filter((type) => type !== 'text')).toEqual([]);
        expect(inlineText(inline!)).toBe(shown(value));
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps any value inside one table cell, one list item, one strong run and one heading', () => {
    fc.assert(
      fc.property(
        values.filter((value) => shown(value) !== ''),
        (value) => {
          const text = literal(value);
          const table = parse(`| a | b |\n| --- | --- |\n| ${text} | ${text} |\n`);
          expect(count(table.tokens, 'tr_open')).toBe(2);
          expect(count(table.tokens, 'td_open')).toBe(2);
          expect(table.texts).toEqual(['a', 'b', shown(value), shown(value)]);
          const list = parse(`- **${text}**\n- Cited: ${text} _(cites ${text})_\n`);
          expect(count(list.tokens, 'list_item_open')).toBe(2);
          expect(count(list.tokens, 'strong_open')).toBe(1);
          expect(count(list.tokens, 'em_open')).toBe(1);
          expect(list.texts).toEqual([shown(value), `Cited: ${shown(value)} (cites ${shown(value)})`]);
          const quote = parse(`> ${text}\n\n# Handoff: ${text}\n`);
          expect(count(quote.tokens, 'blockquote_open')).toBe(1);
          expect(quote.headings).toEqual([`h1 Handoff: ${shown(value)}`]);
          expect(quote.texts).toEqual([shown(value), `Handoff: ${shown(value)}`]);
        },
      ),
      { numRuns: 1000 },
    );
  });
});
