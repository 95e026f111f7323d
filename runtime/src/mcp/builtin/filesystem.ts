/**
 * The `filesystem` built-in: list, read, write and search files within one root. The root is
 * `options.root`, a path relative to the run's data directory (default `workspace`); the host
 * may allow absolute roots it chose itself (`allowedRoots`), a flow never can.
 * Every operation resolves its path with `resolveInside` (no `..`, no absolute paths, no
 * symlink that leaves the root — checked on the real path of every existing ancestor).
 */
import { constants } from 'node:fs';
import { mkdir, open, readdir, realpath, stat } from 'node:fs/promises';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { McpHostError } from '../errors.js';
import { ensureParent, isWithin, resolveInside } from '../safe-path.js';
import { type BuiltinContext, json, optNumber, SERVER_VERSION, text } from './context.js';
import { confineRoot } from './roots.js';

const MAX_READ = 1024 * 1024;

/** The real root directory of a filesystem-like built-in, created when missing. */
export async function builtinRoot(
  ctx: BuiltinContext,
  dflt: string,
  allowedRoots: string[] = [],
): Promise<string> {
  const opt = typeof ctx.options.root === 'string' ? ctx.options.root : dflt;
  if (opt.startsWith('/')) {
    // Only roots the operator configured on the host; the flow may name them but not invent them.
    if (!allowedRoots.some((r) => isWithin(r, opt)))
      throw new McpHostError(
        'mcp.path-refused',
        `root ${JSON.stringify(opt)} is not among the roots the host allows`,
      );
    await confineRoot(ctx, await realpath(opt).catch(() => opt), opt);
    await mkdir(opt, { recursive: true });
    return opt;
  }
  await mkdir(ctx.dataDir, { recursive: true });
  const r = await resolveInside(ctx.dataDir, opt);
  await confineRoot(ctx, r.path, opt);
  await mkdir(r.path, { recursive: true });
  return r.path;
}

export function createFilesystemServer(ctx: BuiltinContext & { allowedRoots?: string[] }): McpServer {
  const server = new McpServer({ name: 'switchboard-filesystem', version: SERVER_VERSION });
  const maxRead = optNumber(ctx.options, 'maxReadBytes', MAX_READ);
  const readOnly = ctx.options.readOnly === true;
  let rootP: Promise<string> | undefined;
  const root = () => {
    rootP ??= builtinRoot(ctx, 'workspace', ctx.allowedRoots);
    return rootP;
  };
  const rel = z.string().describe('A path relative to the root; "." is the root.');

  server.registerTool(
    'list_directory',
    { description: 'List the entries of a directory under the root.', inputSchema: { path: rel } },
    async ({ path }) => {
      const r = await resolveInside(await root(), path);
      if (!r.exists) throw new Error(`${path}: no such directory`);
      const entries = await readdir(r.path, { withFileTypes: true });
      return json(
        entries
          .map((e) => ({
            name: e.name,
            type: e.isDirectory() ? 'dir' : e.isSymbolicLink() ? 'symlink' : 'file',
          }))
          .sort((a, b) => a.name.localeCompare(b.name)),
      );
    },
  );

  server.registerTool(
    'read_file',
    {
      description: `Read a text file under the root (at most ${maxRead} bytes from offset).`,
      inputSchema: { path: rel, offset: z.number().int().min(0).optional() },
    },
    async ({ path, offset }) => {
      const r = await resolveInside(await root(), path);
      if (!r.exists) throw new Error(`${path}: no such file`);
      const fh = await open(r.path, constants.O_RDONLY | constants.O_NOFOLLOW);
      try {
        const st = await fh.stat();
        if (!st.isFile()) throw new Error(`${path}: not a regular file`);
        const start = offset ?? 0;
        const len = Math.max(0, Math.min(maxRead, st.size - start));
        const buf = Buffer.alloc(len);
        await fh.read(buf, 0, len, start);
        const more = start + len < st.size;
        return text(
          buf.toString('utf8') +
            (more ? `\n[… ${st.size - start - len} more bytes; read again with offset ${start + len}]` : ''),
        );
      } finally {
        await fh.close();
      }
    },
  );

  server.registerTool(
    'write_file',
    {
      description: 'Write (or append to) a text file under the root; parent folders are created.',
      inputSchema: { path: rel, content: z.string().max(8 * 1024 * 1024), append: z.boolean().optional() },
    },
    async ({ path, content, append }) => {
      if (readOnly) throw new Error('this filesystem server is read-only');
      const r = await resolveInside(await root(), path);
      await ensureParent(r);
      const flags =
        constants.O_WRONLY |
        constants.O_CREAT |
        constants.O_NOFOLLOW |
        (append ? constants.O_APPEND : constants.O_TRUNC);
      const fh = await open(r.path, flags, 0o644);
      try {
        await fh.writeFile(content, 'utf8');
      } finally {
        await fh.close();
      }
      return text(`${append ? 'appended' : 'wrote'} ${Buffer.byteLength(content)} bytes to ${path}`);
    },
  );

  server.registerTool(
    'search_files',
    {
      description:
        'Find files under a directory whose name contains `name` and/or whose text contains `text`.',
      inputSchema: {
        path: rel,
        name: z.string().max(200).optional(),
        text: z.string().max(500).optional(),
        max_results: z.number().int().min(1).max(500).optional(),
      },
    },
    async ({ path, name, text: needle, max_results }) => {
      const base = await resolveInside(await root(), path);
      if (!base.exists) throw new Error(`${path}: no such directory`);
      const limit = max_results ?? 50;
      const hits: string[] = [];
      const prefix = path === '.' || path === '' ? '' : `${path.replace(/\/+$/, '')}/`;
      // Breadth-first, never following symlinks, bounded by a visit budget.
      const queue: string[] = [''];
      let visited = 0;
      while (queue.length && hits.length < limit && visited < 10_000) {
        const dirRel = queue.shift()!;
        const dir = await resolveInside(base.path, dirRel || '.');
        for (const e of await readdir(dir.path, { withFileTypes: true })) {
          visited++;
          const relPath = dirRel ? `${dirRel}/${e.name}` : e.name;
          if (e.isDirectory()) queue.push(relPath);
          if (!e.isFile()) continue;
          if (name && !e.name.toLowerCase().includes(name.toLowerCase())) continue;
          if (needle) {
            const f = await resolveInside(base.path, relPath);
            const st = await stat(f.path);
            if (st.size > maxRead) continue;
            const fh = await open(f.path, constants.O_RDONLY | constants.O_NOFOLLOW);
            try {
              if (!(await fh.readFile('utf8')).toLowerCase().includes(needle.toLowerCase())) continue;
            } finally {
              await fh.close();
            }
          }
          hits.push(prefix + relPath);
          if (hits.length >= limit) break;
        }
      }
      return json(hits);
    },
  );

  return server;
}
