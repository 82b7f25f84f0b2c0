/**
 * The header every answer of a Baton server carries: the typed client refuses a successful
 * answer without it (another server on that address), rather than read it as a Baton result.
 * In a module of its own, with no schema, so the web page's event reader takes no zod with it.
 */
export const batonApiHeader = 'baton-api';
export const batonApiVersion = 'v1';
