/** A Clock tells the time; operations receive one so tests can fix it. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that stands still until advanced: for tests and replay. */
export function fixedClock(start: Date | string): Clock & { advance(ms: number): void } {
  let at = new Date(start).getTime();
  return {
    now: () => new Date(at),
    advance(ms: number) {
      at += ms;
    },
  };
}
