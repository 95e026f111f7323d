/**
 * The editor's build, the one part of the server that answers without a token: it holds no data
 * and no secret, and a browser has to load it before it can ask for the token.
 *
 * Served are exactly the regular files found in the build folder at start, each as a literal
 * route: no dotfiles, no symlinks, no directory listings, and no path parameter to traverse
 * with. `/` is index.html, and so is any other GET outside `/api` (the page's own addresses);
 * `/api/…` never gets the page, only JSON (401 without the token, 404 for what does not exist).
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';

/** The route of the page fallback. */
export const SPA_FALLBACK = '/*';

/** File paths that can be literal routes (no `:` or `*`, which the router would read as patterns). */
const SAFE_PATH = /^[A-Za-z0-9_-][A-Za-z0-9._-]*(\/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$/;

/**
 * Whether a request path is under `/api`, however it is spelled: percent-encoded, in capitals,
 * behind extra slashes. Undecodable paths count as API paths (refused, never the page).
 */
export function isApiPath(url: string): boolean {
  let path = url.split('?')[0] ?? '';
  try {
    path = decodeURIComponent(path);
  } catch {
    return true;
  }
  const p = path.replace(/^[/\\]+/, '').toLowerCase();
  return p === 'api' || p.startsWith('api/') || p.startsWith('api\\');
}

/** The build's servable files, relative, `/`-separated; dotfiles and symlinks are left out. */
export function editorFiles(dir: string, sub = ''): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(dir, sub), { withFileTypes: true })) {
    // Nothing under /api may become a public page route.
    if (e.name.startsWith('.') || (!sub && e.name.toLowerCase() === 'api')) continue;
    const rel = sub ? `${sub}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...editorFiles(dir, rel));
    else if (e.isFile() && SAFE_PATH.test(rel)) out.push(rel);
  }
  return out.sort();
}

function headers(reply: FastifyReply, page: boolean): FastifyReply {
  reply.header('x-content-type-options', 'nosniff');
  // The page's address may still carry `?token=` until the page strips it: never pass it on.
  reply.header('referrer-policy', 'no-referrer');
  if (page) reply.header('cache-control', 'no-cache');
  return reply;
}

/**
 * Serves the build in `dir` (which must hold index.html). Returns the routes it added: the
 * guard lets exactly these (and the fallback outside `/api`) through without a token.
 */
export async function registerEditor(app: FastifyInstance, dir: string): Promise<Set<string>> {
  // Only for reply.sendFile: the routes are ours.
  await app.register(fastifyStatic, { root: dir, serve: false, index: false });
  const routes = new Set<string>();
  for (const rel of editorFiles(dir)) {
    const url = `/${rel}`;
    routes.add(url);
    app.get(url, { schema: { hide: true } }, (_req, reply) =>
      headers(reply, rel === 'index.html').sendFile(rel),
    );
  }
  routes.add('/');
  app.get('/', { schema: { hide: true } }, (_req, reply) => headers(reply, true).sendFile('index.html'));
  app.get(SPA_FALLBACK, { schema: { hide: true } }, (req, reply) => {
    if (isApiPath(req.url))
      return reply
        .code(404)
        .send({ error: { code: 'not-found', message: `no route GET ${req.url.split('?')[0]}` } });
    return headers(reply, true).sendFile('index.html');
  });
  return routes;
}
