/**
 * The web workspace as static files: `/` (the page), `/favicon.svg` and the hashed `/assets/*`
 * Vite built, from dist/web in the package or web/dist in a checkout. Every answer carries a
 * strict Content-Security-Policy: scripts, styles and requests from this origin only, nothing
 * inline, no framing. The page holds no data; the API behind it authenticates every read.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { BatonError } from '../core/errors.ts';

const here = dirname(fileURLToPath(import.meta.url));

/** Where a build may be: beside the compiled server (dist/web), then a checkout's web/dist. */
export const webRoots: readonly string[] = [join(here, '..', 'web'), join(here, '..', '..', 'web', 'dist')];

export const contentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const types: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

/** A built asset's name: one path segment of safe characters with a known type; nothing else is read. */
const assetName = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

function webRoot(): string | undefined {
  return webRoots.find((root) => existsSync(join(root, 'index.html')));
}

async function sendFile(reply: FastifyReply, path: string, cache: string): Promise<FastifyReply> {
  let body: Buffer;
  try {
    body = await readFile(path);
  } catch {
    throw new BatonError('not_found', 'no such file of the web workspace');
  }
  return reply
    .header('content-type', types[extname(path)] ?? 'application/octet-stream')
    .header('content-security-policy', contentSecurityPolicy)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY')
    .header('cross-origin-opener-policy', 'same-origin')
    .header('cache-control', cache)
    .send(body);
}

function requireRoot(): string {
  const root = webRoot();
  if (!root) {
    throw new BatonError(
      'unavailable',
      'the web workspace is not built: run `npm run build:web` in the checkout (npm start does it for you)',
    );
  }
  return root;
}

export function registerWebRoutes(app: FastifyInstance): void {
  app.get('/', async (_request, reply) => sendFile(reply, join(requireRoot(), 'index.html'), 'no-cache'));
  app.get('/favicon.svg', async (_request, reply) =>
    sendFile(reply, join(requireRoot(), 'favicon.svg'), 'public, max-age=86400'),
  );
  app.get('/assets/:name', async (request, reply) => {
    const { name } = request.params as { name: string };
    if (!assetName.test(name) || !Object.hasOwn(types, extname(name))) {
      throw new BatonError('not_found', 'no such file of the web workspace');
    }
    // Names carry a content hash, so a file never changes under its name.
    return sendFile(reply, join(requireRoot(), 'assets', name), 'public, max-age=31536000, immutable');
  });
}
