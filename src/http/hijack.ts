/**
 * Taking a reply over from Fastify (an event stream, the MCP SDK's transport) without losing
 * the headers that hooks set on it, `baton-api` among them: they are copied onto the raw
 * response first, where the raw writer's own writeHead merges with them.
 */
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';

export function hijackWithHeaders(reply: FastifyReply): ServerResponse {
  void reply.hijack();
  const raw = reply.raw;
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (value !== undefined) raw.setHeader(name, value);
  }
  return raw;
}
