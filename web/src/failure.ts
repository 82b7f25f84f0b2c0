/**
 * How a failed request reads on the page, in the page's language: no connection (the browser is
 * offline: nothing left it), no answer (it may or may not have arrived), or the server's own
 * refusal as `code: message`. Never the browser's bare "Failed to fetch".
 */
import { BatonError } from '../../src/core/errors.ts';
import { ApiError } from './api.ts';
import type { Messages } from './i18n.ts';

export function failureText(t: Messages, failure: unknown): string {
  if (failure instanceof ApiError) {
    if (failure.code === 'offline') return t.offline;
    if (failure.code === 'no_answer') return t.noAnswer;
    return `${failure.code}: ${failure.message}`;
  }
  // The live event stream's reader (the typed client's) reports a refusal or a break as a BatonError.
  if (failure instanceof BatonError) return `${failure.code}: ${failure.message}`;
  return failure instanceof Error ? failure.message : String(failure);
}
