/** An http:// or https:// URL, parsed; undefined for anything else ("127.0.0.1:4680" has no scheme). */
export function httpUrl(value: string): URL | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
}
