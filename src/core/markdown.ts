/**
 * Stored text as CommonMark/GFM that shows it literally: whatever it holds, it renders as its own
 * characters and never as structure (a heading, link, image, HTML, emphasis, code, list, quote or
 * table cell), wherever on a line of Markdown it is placed.
 */
import { visibleControls } from './text.ts';

/**
 * The ASCII punctuation characters CommonMark lets a backslash escape, but for those that mean
 * nothing in CommonMark or GFM once `&`, `<`, `[` and `]` are escaped: `" ' , ; ? % / $ { }`
 * (quotes only delimit link titles, `;` only ends an entity, `/` only closes a tag). Prose is
 * full of them, and a reader of the Markdown as text would see a backslash before each. `^`
 * stays escaped, with its neighbours in the character range; harmless either way.
 */
const punctuation = /[!#&(-+\-.:<=>@[-`|~]/g;

/** What a line break in a value is shown as: one line of Markdown cannot hold two lines of text. */
export const lineBreakMark = '⏎';

/**
 * `text` as inline Markdown. Leading and trailing whitespace goes (Markdown would drop it, and it
 * would undo the emphasis around a value); control characters and bidirectional overrides become
 * escapes (visibleControls); each line break becomes ⏎ so no value starts a block or leaves its
 * table cell; and every ASCII punctuation character that can mean something is backslash-escaped,
 * which CommonMark defines as that character, literally. With `:`, `.` and `@` escaped, GFM's bare-URL, www. and
 * e-mail autolinks find nothing to link either.
 */
export function literal(text: string): string {
  return visibleControls(text.trim())
    .replace(/\n/g, lineBreakMark)
    .replace(punctuation, (char) => `\\${char}`);
}
