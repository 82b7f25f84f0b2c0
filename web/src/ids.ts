/** Stable ids for one attempt of a write (a send, a choice, an outcome), so a retry repeats it exactly. */
export function newAttemptId(prefix: string): string {
  // getRandomValues works on plain http too, where randomUUID does not.
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return `${prefix}-${Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('')}`;
}
