/**
 * The `documents` built-in: RoboCo's file-based document context. Each context is a directory
 * `<root>/<document_id>/` holding `metadata.json`, `outline.json`, `sections/NN_slug.md` and
 * `_document_summary.json`. Agents plan an outline, write sections, read them back in chunks
 * that fit a context window, keep a running summary and search by keyword.
 * Every path goes through `resolveInside`, so no argument can reach outside the root.
 */
import { constants } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { dict } from '@switchboard/schemas/core';
import { z } from 'zod';
import { McpHostError } from '../errors.js';
import { checkPathSyntax, ensureParent, resolveInside } from '../safe-path.js';
import { type BuiltinContext, json, SERVER_VERSION, text } from './context.js';
import { confineRoot } from './roots.js';

/** Rough token count: about four characters per token, as OpenAI tokenizers average on English. */
export function estimateTokens(s: string): number {
  return Math.ceil(s.length / 4);
}

/** Splits text into chunks of at most `maxTokens` (estimated), cutting at whitespace when possible. */
export function chunkByTokens(s: string, maxTokens: number): string[] {
  const maxChars = Math.max(1, maxTokens * 4);
  const chunks: string[] = [];
  let i = 0;
  while (i < s.length) {
    let end = Math.min(s.length, i + maxChars);
    if (end < s.length) {
      const ws = s.lastIndexOf(' ', end);
      const nl = s.lastIndexOf('\n', end);
      const cut = Math.max(ws, nl);
      if (cut > i + maxChars / 2) end = cut + 1;
    }
    chunks.push(s.slice(i, end));
    i = end;
  }
  return chunks.length ? chunks : [''];
}

export function slugOf(id: string): string {
  const s = id
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40);
  return s || 'section';
}

interface OutlineSection {
  id: string;
  title: string;
  goal?: string;
  keywords?: string[];
  level?: number;
}
interface Outline {
  title?: string;
  sections: OutlineSection[];
}

const SectionSchema = z.object({
  id: z.string().min(1).max(80),
  title: z.string().max(300),
  goal: z.string().max(4000).optional(),
  keywords: z.array(z.string().max(100)).max(50).optional(),
  level: z.number().int().min(1).max(6).optional(),
});
const OutlineSchema = z.object({
  title: z.string().max(300).optional(),
  sections: z.array(SectionSchema).max(500),
});

const docId = z.string().describe('The document context id (one path segment).');
const MAX_FILE = 4 * 1024 * 1024;

async function readJson<T>(path: string, dflt: T): Promise<T> {
  try {
    const t = await readFile(path, 'utf8');
    return JSON.parse(t) as T;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return dflt;
    throw e;
  }
}

/** Writes without following a symlink at the final component (the ancestors were checked). */
async function writeConfined(path: string, data: string, append = false): Promise<void> {
  const flags =
    constants.O_WRONLY |
    constants.O_CREAT |
    constants.O_NOFOLLOW |
    (append ? constants.O_APPEND : constants.O_TRUNC);
  const fh = await open(path, flags, 0o644);
  try {
    await fh.writeFile(data, 'utf8');
  } finally {
    await fh.close();
  }
}

async function readConfined(path: string): Promise<string> {
  const fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const st = await fh.stat();
    if (st.size > MAX_FILE) throw new McpHostError('mcp.path-refused', `file larger than ${MAX_FILE} bytes`);
    return await fh.readFile('utf8');
  } finally {
    await fh.close();
  }
}

export function createDocumentsServer(ctx: BuiltinContext): McpServer {
  const rootRel = typeof ctx.options.root === 'string' ? ctx.options.root : 'documents';
  const server = new McpServer({ name: 'switchboard-documents', version: SERVER_VERSION });

  async function root(): Promise<string> {
    await mkdir(ctx.dataDir, { recursive: true });
    const r = await resolveInside(ctx.dataDir, rootRel);
    await confineRoot(ctx, r.path, rootRel);
    await mkdir(r.path, { recursive: true });
    return r.path;
  }
  /** The context directory; `mustExist` refuses ids that were never initialised. */
  async function docDir(id: string, mustExist = true): Promise<string> {
    const segs = checkPathSyntax(id);
    if (segs.length !== 1)
      throw new McpHostError(
        'mcp.path-refused',
        `document_id ${JSON.stringify(id)} must be one path segment`,
      );
    const r = await resolveInside(await root(), segs[0]!);
    if (mustExist && !r.exists)
      throw new Error(
        `document context ${JSON.stringify(id)} does not exist; call initialize_document_context first`,
      );
    return r.path;
  }
  async function file(dir: string, name: string, forWrite = false): Promise<string> {
    const r = await resolveInside(dir, name);
    if (forWrite) await ensureParent(r);
    return r.path;
  }
  async function outline(dir: string): Promise<Outline> {
    return readJson<Outline>(await file(dir, 'outline.json'), { sections: [] });
  }
  const sectionFile = (index: number, id: string) => `${String(index + 1).padStart(2, '0')}_${slugOf(id)}.md`;
  async function sectionPath(dir: string, sectionId: string, forWrite = false) {
    const o = await outline(dir);
    const idx = o.sections.findIndex((s) => s.id === sectionId);
    if (idx < 0)
      throw new Error(`section ${JSON.stringify(sectionId)} is not in the outline; update the outline first`);
    return {
      path: await file(dir, `sections/${sectionFile(idx, sectionId)}`, forWrite),
      index: idx,
      outline: o,
    };
  }

  server.registerTool(
    'initialize_document_context',
    {
      description: 'Create a new document context (metadata, outline, sections folder, running summary).',
      inputSchema: {
        document_id: docId,
        title: z.string().max(300).optional(),
        metadata: z.record(z.string(), z.unknown()).optional(),
      },
    },
    async ({ document_id, title, metadata }) => {
      const dir = await docDir(document_id, false);
      await mkdir(dir, { recursive: true });
      await mkdir(await file(dir, 'sections'), { recursive: true });
      const now = new Date().toISOString();
      const metaPath = await file(dir, 'metadata.json');
      const existing = await readJson<Record<string, unknown> | null>(metaPath, null);
      if (!existing)
        await writeConfined(
          metaPath,
          JSON.stringify(
            { ...metadata, title: title ?? document_id, createdAt: now, status: 'draft' },
            null,
            2,
          ),
        );
      const oPath = await file(dir, 'outline.json');
      if (!(await readJson<Outline | null>(oPath, null)))
        await writeConfined(oPath, JSON.stringify({ title: title ?? document_id, sections: [] }, null, 2));
      const sPath = await file(dir, '_document_summary.json');
      if (!(await readJson<unknown>(sPath, null)))
        await writeConfined(sPath, JSON.stringify({ summary: '', keyPoints: [], updatedAt: now }, null, 2));
      return text(
        existing
          ? `document context ${document_id} already exists`
          : `created document context ${document_id}`,
      );
    },
  );

  server.registerTool(
    'delete_document_context',
    { description: 'Remove a document context and all its files.', inputSchema: { document_id: docId } },
    async ({ document_id }) => {
      const dir = await docDir(document_id);
      await rm(dir, { recursive: true, force: true });
      return text(`deleted document context ${document_id}`);
    },
  );

  server.registerTool(
    'get_document_outline',
    {
      description: 'Read outline.json: the ordered sections with goals and keywords.',
      inputSchema: { document_id: docId },
    },
    async ({ document_id }) => json(await outline(await docDir(document_id))),
  );

  server.registerTool(
    'update_document_outline',
    {
      description:
        'Replace outline.json. Section files are renamed to follow a new order; ids must be unique.',
      inputSchema: { document_id: docId, outline: OutlineSchema },
    },
    async ({ document_id, outline: next }) => {
      const dir = await docDir(document_id);
      const ids = new Set<string>();
      for (const s of next.sections) {
        if (ids.has(s.id)) throw new Error(`duplicate section id ${JSON.stringify(s.id)}`);
        ids.add(s.id);
      }
      const prev = await outline(dir);
      // Move existing section files to their new number, via temporary names to avoid clashes.
      const moves: Array<{ from: string; to: string }> = [];
      prev.sections.forEach((s, i) => {
        const j = next.sections.findIndex((n) => n.id === s.id);
        if (j >= 0 && j !== i) moves.push({ from: sectionFile(i, s.id), to: sectionFile(j, s.id) });
      });
      const staged: Array<{ tmp: string; to: string }> = [];
      for (const m of moves) {
        const from = await resolveInside(dir, `sections/${m.from}`);
        if (!from.exists) continue;
        const tmp = await file(dir, `sections/.move-${m.to}`);
        await rename(from.path, tmp);
        staged.push({ tmp, to: await file(dir, `sections/${m.to}`) });
      }
      for (const s of staged) await rename(s.tmp, s.to);
      await writeConfined(await file(dir, 'outline.json', true), JSON.stringify(next, null, 2));
      return text(`outline of ${document_id} updated: ${next.sections.length} sections`);
    },
  );

  server.registerTool(
    'list_document_sections',
    {
      description: 'List the sections of the outline with their files and sizes.',
      inputSchema: { document_id: docId },
    },
    async ({ document_id }) => {
      const dir = await docDir(document_id);
      const o = await outline(dir);
      const out = [];
      for (let i = 0; i < o.sections.length; i++) {
        const s = o.sections[i]!;
        const r = await resolveInside(dir, `sections/${sectionFile(i, s.id)}`);
        const content = r.exists ? await readConfined(r.path) : '';
        out.push({
          id: s.id,
          title: s.title,
          file: `sections/${sectionFile(i, s.id)}`,
          written: r.exists,
          tokens: estimateTokens(content),
        });
      }
      return json(out);
    },
  );

  server.registerTool(
    'read_section_content',
    {
      description: 'Read a section in chunks of at most max_tokens tokens; chunk counts from 0.',
      inputSchema: {
        document_id: docId,
        section_id: z.string(),
        chunk: z.number().int().min(0).optional(),
        max_tokens: z.number().int().min(50).max(100_000).optional(),
      },
    },
    async ({ document_id, section_id, chunk, max_tokens }) => {
      const dir = await docDir(document_id);
      const { path } = await sectionPath(dir, section_id);
      const r = await resolveInside(dir, path.slice(dir.length + 1));
      const content = r.exists ? await readConfined(r.path) : '';
      const chunks = chunkByTokens(content, max_tokens ?? 2000);
      const i = chunk ?? 0;
      if (i >= chunks.length)
        throw new Error(`chunk ${i} out of range: the section has ${chunks.length} chunks`);
      return text(chunks[i]!, {
        section_id,
        chunk: i,
        totalChunks: chunks.length,
        hasMore: i + 1 < chunks.length,
      });
    },
  );

  server.registerTool(
    'write_section_content',
    {
      description: 'Write (overwrite) or append Markdown to a section listed in the outline.',
      inputSchema: {
        document_id: docId,
        section_id: z.string(),
        content: z.string().max(MAX_FILE),
        mode: z.enum(['overwrite', 'append']).optional(),
      },
    },
    async ({ document_id, section_id, content, mode }) => {
      const dir = await docDir(document_id);
      const { path } = await sectionPath(dir, section_id, true);
      await writeConfined(path, content, mode === 'append');
      return text(
        `${mode === 'append' ? 'appended to' : 'wrote'} section ${section_id} (${estimateTokens(content)} tokens)`,
      );
    },
  );

  server.registerTool(
    'get_document_metadata',
    { description: 'Read metadata.json.', inputSchema: { document_id: docId } },
    async ({ document_id }) =>
      json(await readJson(await file(await docDir(document_id), 'metadata.json'), {})),
  );

  server.registerTool(
    'update_document_metadata',
    {
      description: 'Merge keys into metadata.json (a null value removes a key).',
      inputSchema: { document_id: docId, metadata: z.record(z.string(), z.unknown()) },
    },
    async ({ document_id, metadata }) => {
      const p = await file(await docDir(document_id), 'metadata.json', true);
      const cur = dict(await readJson<Record<string, unknown>>(p, {}));
      for (const [k, v] of Object.entries(metadata)) {
        if (k === '__proto__' || k === 'constructor' || k === 'prototype') continue;
        if (v === null) delete cur[k];
        else cur[k] = v;
      }
      await writeConfined(p, JSON.stringify(cur, null, 2));
      return json(cur);
    },
  );

  server.registerTool(
    'get_document_summary',
    {
      description: 'Read the running summary (_document_summary.json).',
      inputSchema: { document_id: docId },
    },
    async ({ document_id }) =>
      json(await readJson(await file(await docDir(document_id), '_document_summary.json'), {})),
  );

  server.registerTool(
    'update_document_summary',
    {
      description: 'Replace the running summary text and, optionally, its key points.',
      inputSchema: {
        document_id: docId,
        summary: z.string().max(200_000),
        key_points: z.array(z.string()).max(200).optional(),
      },
    },
    async ({ document_id, summary, key_points }) => {
      const p = await file(await docDir(document_id), '_document_summary.json', true);
      const cur = await readJson<{ keyPoints?: string[] }>(p, {});
      const next = {
        summary,
        keyPoints: key_points ?? cur.keyPoints ?? [],
        updatedAt: new Date().toISOString(),
      };
      await writeConfined(p, JSON.stringify(next, null, 2));
      return text('summary updated');
    },
  );

  server.registerTool(
    'search_document_context',
    {
      description:
        'Case-insensitive keyword search across the sections; every keyword must appear on the line.',
      inputSchema: {
        document_id: docId,
        query: z.string().min(1).max(500),
        max_results: z.number().int().min(1).max(200).optional(),
      },
    },
    async ({ document_id, query, max_results }) => {
      const dir = await docDir(document_id);
      const words = query.toLowerCase().split(/\s+/).filter(Boolean);
      const sectionsDir = await resolveInside(dir, 'sections');
      const files = sectionsDir.exists
        ? (await readdir(sectionsDir.path)).filter((f) => f.endsWith('.md')).sort()
        : [];
      const hits: Array<{ file: string; line: number; text: string }> = [];
      const limit = max_results ?? 20;
      for (const f of files) {
        const r = await resolveInside(dir, `sections/${f}`);
        const lines = (await readConfined(r.path)).split('\n');
        for (let i = 0; i < lines.length && hits.length < limit; i++) {
          const l = lines[i]!.toLowerCase();
          if (words.every((w) => l.includes(w)))
            hits.push({ file: `sections/${f}`, line: i + 1, text: lines[i]!.slice(0, 300) });
        }
      }
      return json({ query, hits });
    },
  );

  return server;
}
