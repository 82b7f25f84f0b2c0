/** Cutting text for display without breaking a character. */

/**
 * The first `length` UTF-16 units of text, one fewer when the cut would fall between the two
 * halves of a surrogate pair: a lone surrogate is not text (JSON refuses it, UTF-8 cannot say it).
 */
export function prefix(text: string, length: number): string {
  const cut = text.slice(0, Math.max(0, length));
  const last = cut.charCodeAt(cut.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? cut.slice(0, -1) : cut;
}
