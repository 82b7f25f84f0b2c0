/** JSON values as the ledger stores them: what canonical JSON can carry, nothing more. */
import { z } from 'zod';

export type JsonValue = null | boolean | number | string | readonly JsonValue[] | JsonObject;
export type JsonObject = { readonly [key: string]: JsonValue };

export interface JsonIssue {
  readonly path: (string | number)[];
  readonly message: string;
}

function isPlainObject(value: object): boolean {
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}

/**
 * The first place where a value is not JSON that canonical JSON can carry (undefined, NaN,
 * Infinity, a lone surrogate, a function, a class instance, a cycle), or undefined when it
 * is. One iterative walk: the hot path of every append.
 */
export function jsonIssue(root: unknown): JsonIssue | undefined {
  // Each frame points at its parent; the path is built only when there is an issue to report,
  // so a deep value costs time in proportion to its size, not its depth squared.
  interface Frame {
    readonly value: unknown;
    readonly key: string | number | undefined;
    readonly parent: Frame | undefined;
    readonly depth: number;
  }
  const pathOf = (frame: Frame): (string | number)[] => {
    const path: (string | number)[] = [];
    for (let at: Frame | undefined = frame; at?.parent; at = at.parent) path.push(at.key!);
    return path.reverse();
  };
  const stack: Frame[] = [{ value: root, key: undefined, parent: undefined, depth: 0 }];
  const open = new Set<object>();
  const exits: { node: object; depth: number }[] = [];
  while (stack.length > 0) {
    const frame = stack.pop()!;
    const { value, depth } = frame;
    while (exits.length > 0 && exits[exits.length - 1]!.depth >= depth) open.delete(exits.pop()!.node);
    switch (typeof value) {
      case 'string':
        if (!value.isWellFormed()) return { path: pathOf(frame), message: 'a string has a lone surrogate' };
        continue;
      case 'number':
        if (!Number.isFinite(value)) return { path: pathOf(frame), message: `${value} is not a JSON number` };
        continue;
      case 'boolean':
        continue;
      case 'object': {
        if (value === null) continue;
        if (open.has(value)) return { path: pathOf(frame), message: 'a value contains itself' };
        if (!Array.isArray(value) && !isPlainObject(value)) {
          return { path: pathOf(frame), message: 'only plain objects are JSON' };
        }
        open.add(value);
        exits.push({ node: value, depth });
        if (Array.isArray(value)) {
          for (let index = value.length - 1; index >= 0; index -= 1) {
            stack.push({ value: value[index] as unknown, key: index, parent: frame, depth: depth + 1 });
          }
        } else {
          const keys = Object.keys(value);
          for (let index = keys.length - 1; index >= 0; index -= 1) {
            const key = keys[index]!;
            stack.push({
              value: (value as Record<string, unknown>)[key],
              key,
              parent: frame,
              depth: depth + 1,
            });
          }
        }
        continue;
      }
      default:
        return { path: pathOf(frame), message: `${typeof value} is not JSON` };
    }
  }
  return undefined;
}

function refineJson(value: unknown, context: z.RefinementCtx): void {
  const issue = jsonIssue(value);
  if (issue) context.addIssue({ code: 'custom', path: issue.path, message: issue.message });
}

/** Any JSON value. Validates without copying, so the caller's value is what gets digested. */
export const jsonValueSchema = z.unknown().superRefine(refineJson) as unknown as z.ZodType<JsonValue>;

/** A JSON object (not an array, not null). */
export const jsonObjectSchema = z
  .unknown()
  .superRefine((value, context) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      context.addIssue({ code: 'custom', message: 'expected a JSON object' });
      return;
    }
    refineJson(value, context);
  })
  // What the refinement checks, as JSON Schema says it: the published document is made from this.
  .meta({ type: 'object' }) as unknown as z.ZodType<JsonObject>;

/** Freeze a value and everything in it: for values shared by every caller, which none may change. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
