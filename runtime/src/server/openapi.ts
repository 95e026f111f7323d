/**
 * OpenAPI 3.1 document generated from the route schemas, so the docs cannot drift from what
 * the server validates. Served at GET /api/openapi.json.
 */

import { type Dict, dict } from '@switchboard/schemas/core';
import type { FastifyInstance, RouteOptions } from 'fastify';

interface Collected {
  method: string;
  url: string;
  schema: Record<string, unknown>;
}

export function collectRoutes(app: FastifyInstance): () => Record<string, unknown> {
  const routes: Collected[] = [];
  app.addHook('onRoute', (r: RouteOptions) => {
    const methods = Array.isArray(r.method) ? r.method : [r.method];
    for (const m of methods) {
      if (m === 'HEAD' || !r.url.startsWith('/api/')) continue;
      routes.push({
        method: m.toLowerCase(),
        url: r.url,
        schema: (r.schema ?? {}) as Record<string, unknown>,
      });
    }
  });
  return () => {
    const paths = dict<Dict<unknown>>();
    for (const r of routes) {
      const path = r.url.replace(/:([A-Za-z]+)/g, '{$1}');
      const s = r.schema;
      const op: Record<string, unknown> = {
        summary: s.summary ?? (s.hide ? 'WebSocket endpoint' : undefined),
      };
      const params: unknown[] = [];
      for (const [where, key] of [
        ['path', 'params'],
        ['query', 'querystring'],
      ] as const) {
        const props = (s[key] as { properties?: Record<string, unknown>; required?: string[] } | undefined)
          ?.properties;
        for (const [name, schema] of Object.entries(props ?? {}))
          params.push({
            name,
            in: where,
            required: where === 'path' || ((s[key] as { required?: string[] }).required ?? []).includes(name),
            schema,
          });
      }
      if (params.length) op.parameters = params;
      if (s.body) op.requestBody = { required: true, content: { 'application/json': { schema: s.body } } };
      const responses = dict<unknown>();
      for (const [code, schema] of Object.entries((s.response as Record<string, unknown>) ?? {}))
        responses[code] = { description: code, content: { 'application/json': { schema } } };
      responses.default = { description: 'Error: { error: { code, message } }' };
      op.responses = responses;
      paths[path] ??= dict();
      paths[path][r.method] = op;
    }
    return {
      openapi: '3.1.0',
      info: { title: 'Switchboard API', version: '1' },
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'SWITCHBOARD_TOKEN (non-loopback binds)' },
        },
      },
      security: [{ bearer: [] }],
      paths,
    };
  };
}

declare module 'fastify' {
  interface FastifySchema {
    /** One line for the OpenAPI document. */
    summary?: string;
    description?: string;
    /** Left out of the OpenAPI document. */
    hide?: boolean;
  }
}
