/**
 * The header every answer of a Baton server carries: the typed client refuses a successful
 * answer without it (another server on that address), rather than read it as a Baton result.
 */
export const batonApiHeader = 'baton-api';
export const batonApiVersion = 'v1';

/**
 * The most bytes a request body may have (2 MiB): the server answers a larger one 413
 * payload_too_large, and the typed client refuses to send one.
 */
export const bodyLimit = 2 * 1024 * 1024;
