/**
 * DNS-rebinding protection for every route, /mcp included: the Host header must name an allowed
 * host (the loopback names at the listening port, plus any configured), and an Origin header,
 * when present, must be http(s):// one of them. Anything else is 403 before any other work; a
 * request with no Host at all is 400, as HTTP/1.1 requires.
 */
import { isIP } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { BatonError } from '../core/errors.ts';
import { MalformedRequest } from './errors.ts';

/** Whether a listening address or host name stays on this machine. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost' || bare === '::1') return true;
  return isIP(bare) === 4 && bare.startsWith('127.');
}

/** A host as a Host header names it: IPv6 in brackets, with the port. */
export function hostWithPort(host: string, port: number): string {
  const bare = host.replace(/^\[|\]$/g, '');
  return `${isIP(bare) === 6 ? `[${bare}]` : bare}:${port}`.toLowerCase();
}

const wildcards = new Set(['0.0.0.0', '::', '[::]']);

/**
 * The Host values accepted at a port: the loopback names, the listening host when it is a
 * specific name, and the extra ones given (each `name:port`, or a bare name meaning this port).
 */
export function allowedHosts(listenHost: string, port: number, extra: readonly string[] = []): Set<string> {
  const names = ['127.0.0.1', 'localhost', '::1'];
  if (!wildcards.has(listenHost)) names.push(listenHost);
  const hosts = new Set(names.map((name) => hostWithPort(name, port)));
  for (const host of extra) hosts.add(/:\d+$/.test(host) ? host.toLowerCase() : hostWithPort(host, port));
  // A client leaves out the default port of its scheme.
  if (port === 80 || port === 443) {
    for (const host of [...hosts])
      if (host.endsWith(`:${port}`)) hosts.add(host.slice(0, -`:${port}`.length));
  }
  return hosts;
}

function refused(message: string): BatonError {
  return new BatonError('forbidden', `${message} (DNS-rebinding protection)`);
}

/**
 * Registers the check as the first onRequest hook. `hosts` is read on every request, so the
 * caller can replace its contents once the real port is known. A callback hook, not an async
 * one: the check is synchronous, and every request pays for it.
 */
export function guardHosts(app: FastifyInstance, hosts: () => ReadonlySet<string>): void {
  app.addHook('onRequest', (request, _reply, done) => {
    done(refusal(hosts(), request.headers.host, request.headers.origin));
  });
}

/** Why a request's Host and Origin are refused, or undefined when they are served. */
function refusal(allowed: ReadonlySet<string>, host: string | undefined, origin: string | undefined) {
  if (!host) return new MalformedRequest('the request has no Host header; name the server in it');
  if (!allowed.has(host.toLowerCase())) return refused('this Host is not served here');
  if (origin === undefined) return undefined;
  const match = /^https?:\/\/(.+)$/i.exec(origin);
  if (!match || !allowed.has(match[1]!.toLowerCase()))
    return refused('requests from this Origin are refused');
  return undefined;
}
