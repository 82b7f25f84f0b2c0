/**
 * Canonical JSON (RFC 8785, JCS) and the SHA-256 digests written `sha256:<hex>` that identify
 * every record. A digest here must never change for the same value: golden fixtures guard it.
 */
import { hash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { BatonError } from './errors.ts';

export type Digest = `sha256:${string}`;

export const digestPattern = /^sha256:[0-9a-f]{64}$/;

/** The RFC 8785 form of a JSON value; throws invalid_input for values JSON cannot carry. */
export function canonicalJson(value: unknown): string {
  let text: string | undefined;
  try {
    text = canonicalize(value);
  } catch (error) {
    throw new BatonError('invalid_input', `value is not canonical JSON: ${(error as Error).message}`);
  }
  if (text === undefined) throw new BatonError('invalid_input', 'value has no JSON representation');
  return text;
}

/** SHA-256 of the UTF-8 text; the one-shot hash, since every append and seal pays for it. */
export function sha256Digest(text: string): Digest {
  return `sha256:${hash('sha256', text, 'hex')}`;
}

/** The digest of a value: SHA-256 of its canonical JSON. */
export function digestOf(value: unknown): Digest {
  return sha256Digest(canonicalJson(value));
}

export function isDigest(value: unknown): value is Digest {
  return typeof value === 'string' && digestPattern.test(value);
}
