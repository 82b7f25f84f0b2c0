/** JSON values as the ledger stores them: what canonical JSON can carry, nothing more. */
import { z } from 'zod';

export type JsonValue = null | boolean | number | string | readonly JsonValue[] | JsonObject;
export type JsonObject = { readonly [key: string]: JsonValue };

export const jsonValueSchema: z.ZodType<JsonValue> = z.json();
export const jsonObjectSchema: z.ZodType<JsonObject> = z.record(z.string(), z.json());
