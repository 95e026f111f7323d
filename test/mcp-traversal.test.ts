/**
 * Path traversal against every file-touching operation of the `documents` and `filesystem`
 * built-ins: 200+ encodings (`../`, `%2f`, `%252f`, `..\`, absolute paths, NUL, overlong UTF-8,
 * Unicode dots, symlinks leaving the root, dangling symlinks). Nothing outside the roots is read,
 * written or listed, and `resolveInside` never returns a path outside its root.
 */
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readlinkSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpPool } from '../runtime/src/mcp/pool.js';
import { isWithin, resolveInside } from '../runtime/src/mcp/safe-path.js';
import { TrustStore } from '../runtime/src/mcp/trust.js';
import { createMcpToolHost } from '../runtime/src/tools/mcp-host.js';
import type { ToolHandle } from '../runtime/src/tools/types.js';
import { never, runContext, tempDir, toolFlow } from './fixtures/mcp/helpers.js';

const SECRET = 'TOPSECRET-7f3a';
const CANARY = `sb-traversal-canary-${process.pid}`;
/** A file name that exists only outside the roots: seeing it in a listing is a leak. */
const LISTED_ONLY_OUTSIDE = 'only-outside-91c2.txt';

let tmp: ReturnType<typeof tempDir>;
let pool: McpPool;
let base: string;
let dataDir: string;
let docsRoot: string;
let fsRoot: string;

/** Everything under `dir` except the two roots: type, size, mtime, link target. */
function snapshot(dir: string, skip: string[], out: Record<string, string> = {}): Record<string, string> {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (skip.some((s) => p === s || p.startsWith(`${s}/`))) continue;
    const st = lstatSync(p);
    out[p] =
      `${st.isDirectory() ? 'd' : st.isSymbolicLink() ? `l:${readlinkSync(p)}` : 'f'}:${st.size}:${st.mtimeMs}`;
    if (st.isDirectory()) snapshot(p, skip, out);
  }
  return out;
}

/** 200+ spellings of "somewhere outside the root". */
function encodings(outsideAbs: string): string[] {
  const ups = [
    '../',
    '..%2f',
    '..%2F',
    '%2e%2e%2f',
    '%2e%2e/',
    '.%2e/',
    '%252e%252e%252f',
    '..%252f',
    '..\\',
    '..%5c',
    '%2e%2e%5c',
    '%c0%ae%c0%ae/',
    '%c0%ae%c0%ae%c0%af',
    '\u00c0\u00ae\u00c0\u00ae/',
    '\u2024\u2024/',
    '\uff0e\uff0e/',
    '\u3002\u3002/',
    '..;/',
    '....//',
    '.../',
    '..//',
    './../',
    '.\\..\\',
    '..\u0000/',
    '..%00/',
    '%u002e%u002e/',
    '..\u2215',
    '..\uff0f',
  ];
  const targets = ['outside/secret.txt', 'etc/passwd', `tmp/${CANARY}`];
  const out = new Set<string>();
  for (const u of ups) for (let d = 1; d <= 6; d += 2) for (const t of targets) out.add(u.repeat(d) + t);
  for (let d = 1; d <= 8; d++) out.add(`${'../'.repeat(d)}outside/secret.txt`);
  for (const extra of [
    outsideAbs,
    `${outsideAbs}/secret.txt`,
    '/etc/passwd',
    `/tmp/${CANARY}`,
    '/',
    '//etc/passwd',
    'C:\\Windows\\win.ini',
    'C:/Windows/win.ini',
    '\\\\server\\share\\x',
    'file:///etc/passwd',
    '~/.ssh/id_rsa',
    '~root',
    'a/../../../outside/secret.txt',
    'a/b/../../../outside',
    'ok\u0000../../outside/secret.txt',
    'secret.txt\u0000.md',
    '\u0000',
    '.',
    '..',
    '...',
    'link-out',
    'link-out/secret.txt',
    'link-out/new-file.txt',
    'link-file',
    'dangling',
    'dangling/below.txt',
    'sub/link-up/secret.txt',
    'sub/link-up',
    'link-abs/secret.txt',
    'link-self/link-self/secret.txt',
    encodeURIComponent(`${outsideAbs}/secret.txt`),
    encodeURIComponent('../../outside/secret.txt'),
    `${'x/'.repeat(50)}${'../'.repeat(60)}outside/secret.txt`,
    `${'a'.repeat(5000)}`,
  ])
    out.add(extra);
  return [...out];
}

let fsTools: ToolHandle[];
let docTools: ToolHandle[];
let outside: string;

beforeAll(async () => {
  tmp = tempDir('sb-traversal-');
  base = tmp.dir;
  outside = join(base, 'outside');
  dataDir = join(base, 'data');
  docsRoot = join(dataDir, 'documents');
  fsRoot = join(dataDir, 'workspace');
  mkdirSync(outside, { recursive: true });
  writeFileSync(join(outside, 'secret.txt'), SECRET);
  writeFileSync(join(outside, LISTED_ONLY_OUTSIDE), 'x');
  writeFileSync(join(dataDir, 'secret.txt').replace('/secret.txt', '-secret.txt'), SECRET);
  mkdirSync(join(fsRoot, 'sub'), { recursive: true });
  writeFileSync(join(fsRoot, 'ok.txt'), 'fine');
  // Symlinks planted inside the roots (as another process or an earlier run might leave them).
  symlinkSync(outside, join(fsRoot, 'link-out'));
  symlinkSync(join(outside, 'secret.txt'), join(fsRoot, 'link-file'));
  symlinkSync(join(outside, 'created-through-dangling.txt'), join(fsRoot, 'dangling'));
  symlinkSync('../../../outside', join(fsRoot, 'sub', 'link-up'));
  symlinkSync(outside, join(fsRoot, 'link-abs'));
  symlinkSync('link-self', join(fsRoot, 'link-self'));
  mkdirSync(join(docsRoot, 'ctx', 'sections'), { recursive: true });
  writeFileSync(
    join(docsRoot, 'ctx', 'outline.json'),
    JSON.stringify({
      sections: [
        { id: 'intro', title: 'Intro' },
        { id: 'two', title: 'Two' },
      ],
    }),
  );
  symlinkSync(join(outside, 'secret.txt'), join(docsRoot, 'ctx', 'sections', '01_intro.md'));
  symlinkSync(join(outside, 'created-through-section.md'), join(docsRoot, 'ctx', 'sections', '02_two.md'));
  symlinkSync(join(outside, 'secret.txt'), join(docsRoot, 'ctx', 'metadata.json'));
  symlinkSync(join(outside, 'created-summary.json'), join(docsRoot, 'ctx', '_document_summary.json'));
  symlinkSync(outside, join(docsRoot, 'link-out'));
  mkdirSync(join(docsRoot, 'ctx3'));
  symlinkSync(outside, join(docsRoot, 'ctx3', 'sections'));
  writeFileSync(
    join(docsRoot, 'ctx3', 'outline.json'),
    JSON.stringify({ sections: [{ id: 'secret', title: 'S' }] }),
  );

  pool = new McpPool();
  const trust = new TrustStore(join(base, 'home', 'trust.json'));
  const host = createMcpToolHost(
    toolFlow({ fs: { builtin: 'filesystem' }, docs: { builtin: 'documents' } }),
    { pool, trust },
  );
  const tools = await host.toolsFor('a1', runContext('trav', dataDir).ctx);
  fsTools = tools.filter((t) => t.server === 'fs');
  docTools = tools.filter((t) => t.server === 'docs');
});

afterAll(async () => {
  await pool?.close();
  tmp?.cleanup();
});

describe('traversal', () => {
  it('resolveInside never returns a path outside its root, for every encoding', async () => {
    const encs = encodings(outside);
    expect(encs.length).toBeGreaterThanOrEqual(200);
    let outsideCount = 0;
    let refused = 0;
    for (const root of [fsRoot, docsRoot]) {
      for (const e of encs) {
        try {
          const r = await resolveInside(root, e);
          if (!isWithin(root, r.path)) outsideCount++;
        } catch (err) {
          expect((err as { code?: string }).code).toBe('mcp.path-refused');
          refused++;
        }
      }
    }
    expect(outsideCount).toBe(0);
    expect(refused).toBeGreaterThan(100);
  });

  it('no file-touching operation reads, writes or lists anything outside the roots', async () => {
    const encs = encodings(outside);
    const before = snapshot(base, [docsRoot, fsRoot]);
    const leaks: string[] = [];
    let attempts = 0;
    const attempt = async (tool: ToolHandle, args: Record<string, unknown>) => {
      attempts++;
      const r = await tool.call(args, { signal: never });
      if (
        r.content.includes(SECRET) ||
        r.content.includes('root:x:0:0') ||
        r.content.includes(LISTED_ONLY_OUTSIDE)
      )
        leaks.push(`${tool.remoteName} ${JSON.stringify(args).slice(0, 120)} → ${r.content.slice(0, 120)}`);
    };
    const fsTool = (n: string) => fsTools.find((t) => t.remoteName === n)!;
    const docTool = (n: string) => docTools.find((t) => t.remoteName === n)!;
    for (const e of encs) {
      await attempt(fsTool('list_directory'), { path: e });
      await attempt(fsTool('read_file'), { path: e });
      await attempt(fsTool('write_file'), { path: e, content: 'PWNED' });
      await attempt(fsTool('write_file'), { path: e, content: 'PWNED', append: true });
      await attempt(fsTool('search_files'), { path: e, text: 'TOPSECRET' });
      await attempt(fsTool('search_files'), { path: e, name: 'secret' });
      await attempt(docTool('get_document_outline'), { document_id: e });
      await attempt(docTool('get_document_metadata'), { document_id: e });
      await attempt(docTool('get_document_summary'), { document_id: e });
      await attempt(docTool('list_document_sections'), { document_id: e });
      await attempt(docTool('search_document_context'), { document_id: e, query: 'TOPSECRET' });
      await attempt(docTool('read_section_content'), { document_id: e, section_id: 'intro' });
      await attempt(docTool('read_section_content'), { document_id: 'ctx', section_id: e });
      await attempt(docTool('write_section_content'), {
        document_id: e,
        section_id: 'intro',
        content: 'PWNED',
      });
      await attempt(docTool('write_section_content'), {
        document_id: 'ctx',
        section_id: e,
        content: 'PWNED',
      });
      await attempt(docTool('update_document_metadata'), { document_id: e, metadata: { x: 'PWNED' } });
      await attempt(docTool('update_document_summary'), { document_id: e, summary: 'PWNED' });
      await attempt(docTool('update_document_outline'), {
        document_id: e,
        outline: { sections: [{ id: e.slice(0, 80), title: 't' }] },
      });
      await attempt(docTool('initialize_document_context'), { document_id: e, title: 'x' });
      await attempt(docTool('delete_document_context'), { document_id: e });
    }
    // The planted symlinks inside a context: reading and writing through them is refused.
    for (const doc of ['ctx', 'ctx3', 'link-out']) {
      await attempt(docTool('read_section_content'), { document_id: doc, section_id: 'intro' });
      await attempt(docTool('read_section_content'), { document_id: doc, section_id: 'secret' });
      await attempt(docTool('write_section_content'), {
        document_id: doc,
        section_id: 'two',
        content: 'PWNED',
      });
      await attempt(docTool('write_section_content'), {
        document_id: doc,
        section_id: 'secret',
        content: 'PWNED',
      });
      await attempt(docTool('get_document_metadata'), { document_id: doc });
      await attempt(docTool('update_document_summary'), { document_id: doc, summary: 'PWNED' });
      await attempt(docTool('search_document_context'), { document_id: doc, query: 'TOPSECRET' });
      await attempt(docTool('delete_document_context'), { document_id: doc });
    }
    expect(attempts).toBeGreaterThan(4000);
    expect(leaks).toEqual([]);
    expect(snapshot(base, [docsRoot, fsRoot])).toEqual(before);
    expect(existsSync(`/tmp/${CANARY}`)).toBe(false);
    expect(existsSync(join(outside, 'created-through-dangling.txt'))).toBe(false);
    expect(existsSync(join(outside, 'created-through-section.md'))).toBe(false);
    expect(existsSync(join(outside, 'created-summary.json'))).toBe(false);
    // And the tools still work for honest paths.
    expect((await fsTool('read_file').call({ path: 'ok.txt' }, { signal: never })).content).toBe('fine');
  });
});
