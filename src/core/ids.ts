/**
 * Time-ordered ids: UUIDv7 (RFC 9562) whose timestamp comes from an injectable clock. Ids from
 * one generator strictly increase, even within one millisecond or when the clock steps back
 * (a 42-bit counter seeded at random each millisecond carries the order, as RFC 9562 §6.2).
 */
import { randomBytes } from 'node:crypto';
import { systemClock, type Clock } from './clock.ts';

export type IdGenerator = () => string;

export const uuidv7Pattern = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const counterBits = 42n;
const counterMax = (1n << counterBits) - 1n;

export function uuidv7Generator(clock: Clock = systemClock): IdGenerator {
  let lastMs = -1n;
  let counter = 0n;
  return () => {
    const random = randomBytes(10);
    let ms = BigInt(clock.now().getTime());
    if (ms > lastMs) {
      // Seed with the top bit clear so many ids fit in one millisecond before it overflows.
      counter = random.readBigUInt64BE(0) >> (64n - counterBits + 1n);
      lastMs = ms;
    } else {
      counter += 1n;
      if (counter > counterMax) {
        lastMs += 1n;
        counter = 0n;
      }
      ms = lastMs;
    }
    // 48 bits time | 4 bits version | 12 bits counter high | 2 bits variant | 30 bits counter low | 32 bits random
    const high = (ms << 16n) | 0x7000n | (counter >> 30n);
    const low = (0b10n << 62n) | ((counter & 0x3fffffffn) << 32n) | BigInt(random.readUInt32BE(6));
    const hex = high.toString(16).padStart(16, '0') + low.toString(16).padStart(16, '0');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  };
}
