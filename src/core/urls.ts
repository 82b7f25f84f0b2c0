/** An http:// or https:// URL, parsed; undefined for anything else ("127.0.0.1:4680" has no scheme). */
function httpUrl(value: string): URL | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
}

/** `value` as it may be shown: whatever came before its last `@` (a user name, a password) is gone. */
export function shownAddress(value: string): string {
  const at = value.lastIndexOf('@');
  return at === -1 ? value : `…@${value.slice(at + 1)}`;
}

/**
 * Why `value` is not the address of a Baton server, or undefined when it is one: an http:// or
 * https:// URL with no user name or password (the token authenticates, and fetch refuses such
 * a URL). The reason never repeats the credentials.
 */
export function serverAddressProblem(value: string): string | undefined {
  const url = httpUrl(value);
  const shown = JSON.stringify(shownAddress(value));
  if (!url) return `takes an http:// or https:// URL such as http://127.0.0.1:4680, not ${shown}`;
  if (url.username !== '' || url.password !== '') {
    return `takes no user name or password (the token authenticates): drop what comes before @ in ${shown}`;
  }
  return undefined;
}
