/** The BatonError a promise rejects with, asserted to be one. */
import { expect } from 'vitest';
import { BatonError } from '../../src/core/errors.ts';

export async function rejection(promise: Promise<unknown>): Promise<BatonError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(BatonError);
  return error as BatonError;
}
