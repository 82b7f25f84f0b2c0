/**
 * Request bodies are JSON only, at most bodyLimit bytes and maxDepth levels deep. JSON.parse
 * keeps a "__proto__" key as an ordinary own key, as the ledger does. A body that cannot be
 * read (not UTF-8, not JSON, too deep) is a MalformedRequest (400); whether it means anything is the operation's schema's call.
 */
import type { FastifyInstance } from 'fastify';
import { bodyLimit } from '../core/api.ts';
import { MalformedRequest } from './errors.ts';

/** A body that cannot be read as JSON: a MalformedRequest (400) that /mcp answers in JSON-RPC. */
export class UnreadableBody extends MalformedRequest {}

export { bodyLimit };

/**
 * Deeper bodies are refused before they are parsed: no Baton record nests this deep, and every
 * validator after this point walks the value.
 */
export const maxDepth = 64;

/**
 * Whether text holds more than most opening brackets, inside strings or not, counted by native
 * searches: cheap for the few brackets nearly every body has.
 */
function opensMoreThan(text: string, most: number): boolean {
  let count = 0;
  for (const bracket of ['{', '[']) {
    for (let at = text.indexOf(bracket); at !== -1; at = text.indexOf(bracket, at + 1)) {
      count += 1;
      if (count > most) return true;
    }
  }
  return false;
}

/** Whether arrays and objects nest deeper than limit; one pass over the text, strings skipped. */
export function nestsDeeperThan(text: string, limit: number): boolean {
  // Each level needs its own opening bracket, so with few of them the text cannot nest deeper.
  if (!opensMoreThan(text, limit)) return false;
  let depth = 0;
  let inString = false;
  for (let index = 0; index < text.length; index += 1) {
    const char = text.charCodeAt(index);
    if (inString) {
      if (char === 0x5c) index += 1;
      else if (char === 0x22) inString = false;
    } else if (char === 0x22) {
      inString = true;
    } else if (char === 0x5b || char === 0x7b) {
      depth += 1;
      if (depth > limit) return true;
    } else if (char === 0x5d || char === 0x7d) {
      depth -= 1;
    }
  }
  return false;
}

const emptyBody = 'the body is empty; send a JSON object';

export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') throw new UnreadableBody(emptyBody);
  if (nestsDeeperThan(text, maxDepth)) {
    throw new UnreadableBody(`the body nests deeper than ${maxDepth} levels`, { max_depth: maxDepth });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    // Node's message quotes the input; only where it broke goes back.
    const at = /position (\d+)/.exec((error as Error).message)?.[1];
    throw new UnreadableBody(`the body is not valid JSON${at ? ` (at position ${at})` : ''}`);
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The body's text. Bytes that are not UTF-8 are refused rather than replaced with U+FFFD: the
 * replacement would reach the ledger as if the caller had sent it.
 */
export function bodyText(bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new UnreadableBody('the body is not valid UTF-8; send JSON in UTF-8');
  }
}

/**
 * An operation's POST body: one that was not sent at all (no content type either) is refused
 * as an empty one is, with 400, rather than validated as a missing object (422).
 */
export function requiredBody(body: unknown): unknown {
  if (body === undefined) throw new UnreadableBody(emptyBody);
  return body;
}

/** application/json is the only body type; any other is refused with 400 by Fastify's media-type check. */
export function installJsonParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit }, (request, body, done) => {
    try {
      // A DELETE or GET that says application/json but sends nothing (some clients always set
      // the header) has no body; only a POST must carry one.
      if ((body as Buffer).length === 0 && request.method !== 'POST') {
        done(null, undefined);
        return;
      }
      done(null, parseJsonBody(bodyText(body as Buffer)));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
}
