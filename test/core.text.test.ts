/** Text made safe to show: control characters and bidirectional overrides become visible escapes. */
import { describe, expect, it } from 'vitest';
import { visibleControls } from '../src/core/text.ts';

describe('visibleControls', () => {
  it('shows terminal control sequences as escapes instead of passing them to the terminal', () => {
    expect(visibleControls('fix \u001b[31mRED\u001b[0m')).toBe('fix \\u001b[31mRED\\u001b[0m');
    // OSC 52 would write the terminal's clipboard; C1 CSI (U+009B) is ESC [ on some terminals.
    expect(visibleControls('\u001b]52;c;ZWNobw==\u0007 \u009b2J')).toBe(
      '\\u001b]52;c;ZWNobw==\\u0007 \\u009b2J',
    );
    expect(visibleControls('a\u0000b\u007fc\bd')).toBe('a\\u0000b\\u007fc\\u0008d');
  });

  it('shows a carriage return that would overwrite the line, and reads CRLF as a line end', () => {
    expect(visibleControls('approved\rdeclined')).toBe('approved\\u000ddeclined');
    expect(visibleControls('one\r\ntwo\n')).toBe('one\ntwo\n');
  });

  it('shows the bidirectional overrides that reorder what a reader sees (Trojan Source)', () => {
    expect(visibleControls('ok\u202eevil\u202c \u2066x\u2069')).toBe('ok\\u202eevil\\u202c \\u2066x\\u2069');
  });

  it('leaves tabs, line ends and every other character alone', () => {
    const text = 'Tab\there\nnext line: café, 日本語, emoji 🎉, arrows → ←, non-breaking\u00a0space';
    expect(visibleControls(text)).toBe(text);
  });

  it('is lossless on JSON text: the escapes it writes are JSON escapes of the same characters', () => {
    const value = { text: 'a\u009bb\u202ec\u007fd\u2066', nested: ['\u0085'] };
    const shown = visibleControls(JSON.stringify(value, null, 2));
    expect(shown).not.toMatch(/[\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
    expect(JSON.parse(shown)).toEqual(value);
  });
});
