/**
 * Text for display: cut without breaking a character, shown without acting on a terminal; and
 * the schema of text that must say something.
 */
import { z } from 'zod';

/**
 * Text that is not blank: at least one character that is not white space (`\S` is exactly what
 * String#trim removes), at most `max` characters. A JSON Schema states all of it (minLength,
 * maxLength, pattern), so the published document refuses what the server refuses.
 */
export function nonBlankText(max: number, message = 'must not be empty') {
  return z
    .string()
    .min(1, { abort: true, message })
    .max(max, `at most ${max} characters`)
    .regex(/\S/, message);
}

/**
 * The first `length` UTF-16 units of text, one fewer when the cut would fall between the two
 * halves of a surrogate pair: a lone surrogate is not text (JSON refuses it, UTF-8 cannot say it).
 */
export function prefix(text: string, length: number): string {
  const cut = text.slice(0, Math.max(0, length));
  const last = cut.charCodeAt(cut.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? cut.slice(0, -1) : cut;
}

/** Text cut to at most `chars` characters, the last an ellipsis when it was cut. */
export function clipText(text: string, chars: number): string {
  return text.length <= chars ? text : `${prefix(text, chars - 1)}…`;
}

/** Text cut to at most `chars` characters from its end, the first an ellipsis when it was cut. */
export function clipTextStart(text: string, chars: number): string {
  if (text.length <= chars) return text;
  const kept = text.slice(text.length - Math.max(0, chars - 1));
  const first = kept.charCodeAt(0);
  return `…${first >= 0xdc00 && first <= 0xdfff ? kept.slice(1) : kept}`;
}

/** How much of a key or value a refusal repeats: enough to recognise it. */
export const maxEchoed = 100;

/** Text a refusal repeats from its input, cut to maxEchoed characters with an ellipsis. */
export function echoed(text: string): string {
  return text.length > maxEchoed ? `${prefix(text, maxEchoed)}…` : text;
}

/**
 * Control characters (C0 but tab and line feed, DEL, C1) and the bidirectional embeddings,
 * overrides and isolates: what a terminal would act on (colour, cursor moves, a clipboard write,
 * a carriage return over the line) or what reorders what a reader sees (Trojan Source).
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const hidden = /\r\n|[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/**
 * Text as a terminal may show it: each character above written as its JSON escape (`\u001b`),
 * a CRLF as a line feed. On JSON text it is lossless: those characters only occur inside
 * strings there, and the escape is the JSON escape of the same character.
 */
export function visibleControls(text: string): string {
  return text.replace(hidden, (found) =>
    found === '\r\n' ? '\n' : `\\u${found.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
