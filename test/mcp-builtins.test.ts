/**
 * The built-in MCP servers through the MCP tool host (in-process, over the SDK's in-memory
 * transport): documents (RoboCo's document context), filesystem, state, shell and http.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fingerprintOf } from '../runtime/src/mcp/command-line.js';
import { approveFlow, isFlowApproved, shellBuiltinCommandLine } from '../runtime/src/mcp/consent.js';
import { McpPool } from '../runtime/src/mcp/pool.js';
import { TrustStore } from '../runtime/src/mcp/trust.js';
import { createMcpToolHost } from '../runtime/src/tools/mcp-host.js';
import type { ToolHandle } from '../runtime/src/tools/types.js';
import { never, runContext, tempDir, toolFlow } from './fixtures/mcp/helpers.js';

let tmp: ReturnType<typeof tempDir>;
let pool: McpPool;
let trust: TrustStore;
beforeEach(() => {
  tmp = tempDir('sb-builtins-');
  pool = new McpPool();
  trust = new TrustStore(join(tmp.dir, 'home', 'trust.json'));
});
afterEach(async () => {
  await pool.close();
  tmp.cleanup();
});

const call = async (tools: ToolHandle[], name: string, args: Record<string, unknown>) => {
  const t = tools.find((h) => h.name === name);
  if (!t) throw new Error(`no tool ${name} among ${tools.map((h) => h.name).join(', ')}`);
  return t.call(args, { signal: never });
};

describe('documents built-in', () => {
  it('initialises a context, plans an outline, writes, chunks, summarises, searches and deletes', async () => {
    const flow = toolFlow({ docs: { builtin: 'documents' } });
    const host = createMcpToolHost(flow, { pool, trust });
    const data = join(tmp.dir, 'run1');
    const rc = runContext('run1', data);
    const tools = await host.toolsFor('a1', rc.ctx);
    expect(tools.map((t) => t.name)).toEqual([
      't_docs__delete_document_context',
      't_docs__get_document_metadata',
      't_docs__get_document_outline',
      't_docs__get_document_summary',
      't_docs__initialize_document_context',
      't_docs__list_document_sections',
      't_docs__read_section_content',
      't_docs__search_document_context',
      't_docs__update_document_metadata',
      't_docs__update_document_outline',
      't_docs__update_document_summary',
      't_docs__write_section_content',
    ]);
    const init = await call(tools, 't_docs__initialize_document_context', {
      document_id: 'ethics',
      title: 'AI Ethics',
    });
    expect(init.isError).toBe(false);
    const dir = join(data, 'documents', 'ethics');
    expect(readdirSync(dir).sort()).toEqual([
      '_document_summary.json',
      'metadata.json',
      'outline.json',
      'sections',
    ]);

    const outline = {
      title: 'AI Ethics',
      sections: [
        { id: 'intro', title: 'Introduction' },
        { id: 'key-issues', title: 'Key Issues', keywords: ['bias'] },
      ],
    };
    expect(
      (await call(tools, 't_docs__update_document_outline', { document_id: 'ethics', outline })).isError,
    ).toBe(false);
    const long = Array.from({ length: 400 }, (_, i) => `word${i}`).join(' ');
    await call(tools, 't_docs__write_section_content', {
      document_id: 'ethics',
      section_id: 'intro',
      content: 'Hello world.\n',
    });
    await call(tools, 't_docs__write_section_content', {
      document_id: 'ethics',
      section_id: 'intro',
      content: `Bias matters.\n${long}\n`,
      mode: 'append',
    });
    expect(readdirSync(join(dir, 'sections'))).toEqual(['01_intro.md']);
    expect(readFileSync(join(dir, 'sections', '01_intro.md'), 'utf8')).toContain(
      'Hello world.\nBias matters.',
    );

    // Chunks by token count: every chunk within the budget, together the whole section.
    const first = await call(tools, 't_docs__read_section_content', {
      document_id: 'ethics',
      section_id: 'intro',
      max_tokens: 100,
    });
    const meta = first.structured as { totalChunks: number; hasMore: boolean };
    expect(meta.totalChunks).toBeGreaterThan(5);
    expect(meta.hasMore).toBe(true);
    let whole = first.content;
    for (let i = 1; i < meta.totalChunks; i++) {
      const c = await call(tools, 't_docs__read_section_content', {
        document_id: 'ethics',
        section_id: 'intro',
        max_tokens: 100,
        chunk: i,
      });
      expect(c.content.length).toBeLessThanOrEqual(400);
      whole += c.content;
    }
    expect(whole).toBe(readFileSync(join(dir, 'sections', '01_intro.md'), 'utf8'));

    // Reordering the outline renames section files to follow it.
    await call(tools, 't_docs__update_document_outline', {
      document_id: 'ethics',
      outline: { sections: [outline.sections[1], outline.sections[0]] },
    });
    expect(readdirSync(join(dir, 'sections'))).toEqual(['02_intro.md']);
    const listed = JSON.parse(
      (await call(tools, 't_docs__list_document_sections', { document_id: 'ethics' })).content,
    );
    expect(listed.map((s: { id: string; written: boolean }) => [s.id, s.written])).toEqual([
      ['key-issues', false],
      ['intro', true],
    ]);

    await call(tools, 't_docs__update_document_metadata', {
      document_id: 'ethics',
      metadata: { status: 'review', owner: 'planner' },
    });
    const md = JSON.parse(
      (await call(tools, 't_docs__get_document_metadata', { document_id: 'ethics' })).content,
    );
    expect(md).toMatchObject({ title: 'AI Ethics', status: 'review', owner: 'planner' });

    await call(tools, 't_docs__update_document_summary', {
      document_id: 'ethics',
      summary: 'Bias is central.',
      key_points: ['bias'],
    });
    const sum = JSON.parse(
      (await call(tools, 't_docs__get_document_summary', { document_id: 'ethics' })).content,
    );
    expect(sum).toMatchObject({ summary: 'Bias is central.', keyPoints: ['bias'] });

    const found = JSON.parse(
      (await call(tools, 't_docs__search_document_context', { document_id: 'ethics', query: 'BIAS matters' }))
        .content,
    );
    expect(found.hits).toEqual([{ file: 'sections/02_intro.md', line: 2, text: 'Bias matters.' }]);

    const missing = await call(tools, 't_docs__write_section_content', {
      document_id: 'ethics',
      section_id: 'nope',
      content: 'x',
    });
    expect(missing.isError).toBe(true);
    expect(missing.content).toContain('not in the outline');

    await call(tools, 't_docs__delete_document_context', { document_id: 'ethics' });
    expect(readdirSync(join(data, 'documents'))).toEqual([]);
    const gone = await call(tools, 't_docs__get_document_outline', { document_id: 'ethics' });
    expect(gone.isError).toBe(true);
    await host.release('run1');
  });
});

describe('filesystem built-in', () => {
  it('lists, writes, reads and searches within its root', async () => {
    const flow = toolFlow({ fs: { builtin: 'filesystem', options: { root: 'work' } } });
    const host = createMcpToolHost(flow, { pool, trust });
    const rc = runContext('run-fs', join(tmp.dir, 'data'));
    const tools = await host.toolsFor('a1', rc.ctx);
    expect(tools.map((t) => t.remoteName)).toEqual([
      'list_directory',
      'read_file',
      'search_files',
      'write_file',
    ]);
    expect(
      (await call(tools, 't_fs__write_file', { path: 'notes/a.txt', content: 'alpha beta' })).isError,
    ).toBe(false);
    await call(tools, 't_fs__write_file', { path: 'notes/b.md', content: 'gamma' });
    await call(tools, 't_fs__write_file', { path: 'notes/a.txt', content: '\ndelta', append: true });
    expect(readFileSync(join(tmp.dir, 'data', 'work', 'notes', 'a.txt'), 'utf8')).toBe('alpha beta\ndelta');
    expect((await call(tools, 't_fs__read_file', { path: 'notes/a.txt' })).content).toBe('alpha beta\ndelta');
    expect(JSON.parse((await call(tools, 't_fs__list_directory', { path: 'notes' })).content)).toEqual([
      { name: 'a.txt', type: 'file' },
      { name: 'b.md', type: 'file' },
    ]);
    expect(
      JSON.parse((await call(tools, 't_fs__search_files', { path: '.', text: 'DELTA' })).content),
    ).toEqual(['notes/a.txt']);
    expect(
      JSON.parse((await call(tools, 't_fs__search_files', { path: 'notes', name: '.md' })).content),
    ).toEqual(['notes/b.md']);
    const abs = await call(tools, 't_fs__read_file', { path: '/etc/passwd' });
    expect(abs).toMatchObject({ isError: true });
    expect(abs.content).toContain('absolute paths are not allowed');
  });

  it('refuses an absolute root the host did not allow', async () => {
    const flow = toolFlow({ fs: { builtin: 'filesystem', options: { root: '/etc' } } });
    const host = createMcpToolHost(flow, { pool, trust });
    const tools = await host.toolsFor('a1', runContext('run-root', join(tmp.dir, 'd')).ctx);
    const r = await call(tools, 't_fs__list_directory', { path: '.' });
    expect(r.isError).toBe(true);
    expect(r.content).toContain('not among the roots the host allows');
  });
});

describe('state built-in', () => {
  it("reads and writes keys of the run's JSON state", async () => {
    const flow = toolFlow({ st: { builtin: 'state', options: { readOnlyKeys: ['locked'] } } });
    const host = createMcpToolHost(flow, { pool, trust });
    const rc = runContext('run-state', join(tmp.dir, 'd'));
    rc.state.locked = 1;
    const tools = await host.toolsFor('a1', rc.ctx);
    await call(tools, 't_st__state_set', { key: 'plan', value: { steps: ['a', 'b'] } });
    expect(rc.state.plan).toEqual({ steps: ['a', 'b'] });
    expect(JSON.parse((await call(tools, 't_st__state_get', { key: 'plan' })).content)).toEqual({
      steps: ['a', 'b'],
    });
    expect(JSON.parse((await call(tools, 't_st__state_keys', {})).content)).toEqual(['locked', 'plan']);
    expect((await call(tools, 't_st__state_set', { key: 'locked', value: 2 })).isError).toBe(true);
    expect((await call(tools, 't_st__state_set', { key: '__proto__', value: 2 })).isError).toBe(true);
    await call(tools, 't_st__state_set', { key: 'plan', value: null });
    expect('plan' in rc.state).toBe(false);
  });
});

describe('shell built-in', () => {
  const shell = {
    builtin: 'shell',
    options: { enabled: true, allow: ['echo', 'sleep', 'cat'], timeoutMs: 1500, maxOutputBytes: 1000 },
  };

  it('is quarantined until the operator approves its options, then runs allow-listed programs only', async () => {
    const flow = toolFlow({ sh: shell });
    const host = createMcpToolHost(flow, { pool, trust });
    await expect(host.toolsFor('a1', runContext('r1', join(tmp.dir, 'd')).ctx)).rejects.toMatchObject({
      code: 'mcp.consent-required',
    });
    approveFlow(trust, flow);
    const tools = await host.toolsFor('a1', runContext('r2', join(tmp.dir, 'd')).ctx);
    const ok = await call(tools, 't_sh__run_command', { command: 'echo', args: ['hi', '$HOME;', '`id`'] });
    expect(ok.isError).toBe(false);
    expect(ok.content).toContain('hi $HOME; `id`'); // no shell: metacharacters stay literal
    const denied = await call(tools, 't_sh__run_command', { command: 'rm', args: ['-rf', '.'] });
    expect(denied).toMatchObject({ isError: true });
    expect(denied.content).toContain('not in the allow-list');
    const path = await call(tools, 't_sh__run_command', { command: '/bin/echo', args: ['x'] });
    expect(path.isError).toBe(true);
    const slow = await call(tools, 't_sh__run_command', { command: 'sleep', args: ['30'] });
    expect(slow.content).toContain('timed out after 1500 ms');
    const big = await call(tools, 't_sh__run_command', { command: 'cat', args: ['/dev/zero'] });
    expect(big.content).toContain('[output capped at 1000 bytes per stream]');
    const cwd = await call(tools, 't_sh__run_command', { command: 'echo', cwd: '../..' });
    expect(cwd.isError).toBe(true);
    // Changing the options is a new command line: approval does not carry over.
    const changed = { ...shell, options: { ...shell.options, allow: ['echo', 'node'] } };
    expect(isFlowApproved(trust, toolFlow({ sh: changed }))).toBe(false);
    expect(fingerprintOf(shellBuiltinCommandLine(changed.options))).not.toBe(
      fingerprintOf(shellBuiltinCommandLine(shell.options)),
    );
  });

  it('an allow entry with arguments admits only calls that begin with them', async () => {
    const flow = toolFlow({ sh: { builtin: 'shell', options: { enabled: true, allow: ['echo fixed'] } } });
    approveFlow(trust, flow);
    const host = createMcpToolHost(flow, { pool, trust });
    const tools = await host.toolsFor('a1', runContext('r4', join(tmp.dir, 'd')).ctx);
    expect(
      (await call(tools, 't_sh__run_command', { command: 'echo', args: ['fixed', 'more'] })).content,
    ).toContain('fixed more');
    for (const args of [[], ['other'], ['-e', 'fixed']]) {
      const r = await call(tools, 't_sh__run_command', { command: 'echo', args });
      expect(r.isError).toBe(true);
      expect(r.content).toContain('is not in the allow-list (echo fixed …)');
    }
  });

  it('is off unless the flow enables it', async () => {
    const opts = { allow: ['echo'] };
    const flow = toolFlow({ sh: { builtin: 'shell', options: opts } });
    approveFlow(trust, flow);
    const host = createMcpToolHost(flow, { pool, trust });
    await expect(host.toolsFor('a1', runContext('r3', join(tmp.dir, 'd')).ctx)).rejects.toThrow(
      /shell built-in is off/,
    );
  });
});

describe('http built-in', () => {
  let server: Server;
  let port: number;
  const hits: string[] = [];
  beforeEach(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        hits.push(`${req.method} ${req.url} ${body}`);
        res.setHeader('content-type', 'text/plain');
        res.end(`pong ${req.method} ${body}`);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterEach(async () => {
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('refuses loopback unless the operator allows it, and hosts off the allow-list always', async () => {
    const flow = toolFlow({ web: { builtin: 'http', options: { allowHosts: ['127.0.0.1'] } } });
    const strict = createMcpToolHost(flow, { pool, trust });
    const t1 = await strict.toolsFor('a1', runContext('h1', join(tmp.dir, 'd')).ctx);
    const refused = await call(t1, 't_web__http_get', { url: `http://127.0.0.1:${port}/x` });
    expect(refused.isError).toBe(true);
    expect(hits).toEqual([]);

    const pool2 = new McpPool();
    try {
      const lenient = createMcpToolHost(flow, {
        pool: pool2,
        trust,
        outboundPolicy: { allowLoopback: true },
      });
      const t2 = await lenient.toolsFor('a1', runContext('h2', join(tmp.dir, 'd')).ctx);
      const got = await call(t2, 't_web__http_get', { url: `http://127.0.0.1:${port}/x` });
      expect(got).toMatchObject({ isError: false });
      expect(got.content).toContain('pong GET');
      const posted = await call(t2, 't_web__http_post', {
        url: `http://127.0.0.1:${port}/y`,
        body: '{"a":1}',
      });
      expect(posted.content).toContain('pong POST {"a":1}');
      const other = await call(t2, 't_web__http_get', { url: `http://localhost:${port}/x` });
      expect(other.isError).toBe(true);
      expect(other.content).toContain('not on this tool');
      expect(hits).toEqual(['GET /x ', 'POST /y {"a":1}']);
    } finally {
      await pool2.close();
    }
  });
});
