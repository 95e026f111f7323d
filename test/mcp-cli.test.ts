/**
 * The MCP commands as real processes driven by the SDK's own client: `switchboard mcp FLOW`
 * over stdio and over streamable HTTP (list tools, call the flow's tool, receive progress and the
 * answer; DNS-rebinding protection on), `switchboard mcp-builtin NAME`, and `switchboard trust`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CLI, FIXTURES, tempDir } from './fixtures/mcp/helpers.js';

const BRIEF = join(FIXTURES, 'brief-flow.json');
const NEEDS_CONSENT = join(FIXTURES, 'needs-consent-flow.json');

let tmp: ReturnType<typeof tempDir>;
let env: Record<string, string>;
const clients: Client[] = [];
const children: ChildProcess[] = [];
beforeEach(() => {
  tmp = tempDir('sb-mcp-cli-');
  env = { PATH: process.env.PATH ?? '', HOME: tmp.dir, SWITCHBOARD_HOME: join(tmp.dir, 'sbhome') };
});
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => {});
  for (const ch of children.splice(0)) ch.kill('SIGKILL');
  tmp.cleanup();
});

let lastStderr = '';
async function stdioClient(args: string[]): Promise<Client> {
  lastStderr = '';
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...CLI, ...args],
    env,
    stderr: 'pipe',
    cwd: tmp.dir,
  });
  transport.stderr?.on('data', (c: Buffer) => {
    lastStderr += c.toString();
  });
  const client = new Client({ name: 'sdk-test-client', version: '1.0.0' });
  await client.connect(transport, { timeout: 60_000 });
  clients.push(client);
  return client;
}

function runCli(args: string[], input?: string): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const ch = spawn(process.execPath, [...CLI, ...args], {
      env,
      cwd: tmp.dir,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    ch.stdout.on('data', (c) => {
      out += c;
    });
    ch.stderr.on('data', (c) => {
      err += c;
    });
    ch.stdin.end(input ?? '');
    ch.on('close', (code) => resolve({ code, out, err }));
  });
}

describe('switchboard mcp FLOW', { timeout: 120_000 }, () => {
  it('over stdio: one tool from the flow, progress while it runs, the answer as the result', async () => {
    const client = await stdioClient(['mcp', BRIEF]);
    const { tools } = await client.listTools();
    expect(tools).toHaveLength(1);
    expect(tools[0]).toMatchObject({
      name: 'brief-writer',
      description: 'Write a one-paragraph brief about a topic.',
      inputSchema: { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] },
    });
    const progress: Array<{ progress: number; message?: string }> = [];
    const result = await client.callTool({ name: 'brief-writer', arguments: { input: 'tides' } }, undefined, {
      timeout: 60_000,
      onprogress: (p) => progress.push(p),
    });
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: 'text', text: 'BRIEF: the answer is 42.' }]);
    const lines = progress.map((p) => p.message);
    expect(lines).toContain('node.started writer');
    expect(lines).toContain('tool.called writer: kb__initialize_document_context');
    expect(progress.map((p) => p.progress)).toEqual(progress.map((_, i) => i + 1));
    // Bad arguments are an error result naming the problem.
    const bad = await client.callTool({ name: 'brief-writer', arguments: { input: 42 } });
    expect(bad.isError).toBe(true);
    expect(JSON.stringify(bad.content)).toContain('invalid arguments');
  });

  it('a client cancellation stops the run; the server keeps serving', async () => {
    const flow = JSON.parse(readFileSync(BRIEF, 'utf8'));
    flow.models.default.script = [{ node: 'writer', latencyMs: 60_000, text: 'too late' }];
    const slow = join(tmp.dir, 'slow.json');
    writeFileSync(slow, JSON.stringify(flow));
    const client = await stdioClient(['mcp', slow]);
    const ac = new AbortController();
    const started = new Promise<void>((resolve) => {
      void client
        .callTool({ name: 'brief-writer', arguments: { input: 'x' } }, undefined, {
          signal: ac.signal,
          timeout: 120_000,
          onprogress: (p) => {
            if (p.message === 'turn.started writer') resolve();
          },
        })
        .catch(() => {});
    });
    await started;
    const t0 = Date.now();
    ac.abort();
    // The cancellation reached the run: it ends cancelled long before the 60 s reply.
    while (!/run \S+ cancelled/.test(lastStderr) && Date.now() - t0 < 20_000)
      await new Promise((r) => setTimeout(r, 50));
    expect(lastStderr).toMatch(/switchboard mcp: run \S+ cancelled/);
    expect(lastStderr).not.toContain('completed');
    expect((await client.listTools()).tools).toHaveLength(1);
  });

  it('over streamable HTTP on 127.0.0.1, with DNS-rebinding protection', async () => {
    const ch = spawn(process.execPath, [...CLI, 'mcp', BRIEF, '--http', '0'], {
      env,
      cwd: tmp.dir,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(ch);
    const url = await new Promise<string>((resolve, reject) => {
      let err = '';
      const t = setTimeout(() => reject(new Error(`no URL: ${err}`)), 60_000);
      ch.stderr!.on('data', (c: Buffer) => {
        err += c.toString();
        const m = /at (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(err);
        if (m) {
          clearTimeout(t);
          resolve(m[1]!);
        }
      });
    });
    const client = new Client({ name: 'sdk-test-client', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    clients.push(client);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['brief-writer']);
    const progress: unknown[] = [];
    const r = await client.callTool({ name: 'brief-writer', arguments: { input: 'tides' } }, undefined, {
      timeout: 60_000,
      onprogress: (p) => progress.push(p),
    });
    expect(r.content).toEqual([{ type: 'text', text: 'BRIEF: the answer is 42.' }]);
    expect(progress.length).toBeGreaterThan(2);
    // A page on another origin reaching 127.0.0.1 through a rebound DNS name is refused.
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    };
    const port = new URL(url).port;
    // (fetch drops a forged Host header, so this uses a raw request.)
    const post = (host: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          {
            host: '127.0.0.1',
            port,
            path: '/mcp',
            method: 'POST',
            headers: {
              host,
              'content-type': 'application/json',
              accept: 'application/json, text/event-stream',
            },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify(init));
      });
    const status = await post(`evil.example:${port}`);
    expect(await post(`127.0.0.1:${port}`)).toBe(200); // control: the same request with our own Host passes
    expect(status).toBe(403);
  });

  it('refuses to start when the flow needs a command nobody approved, naming it', async () => {
    const r = await runCli(['mcp', NEEDS_CONSENT]);
    expect(r.code).toBe(2);
    expect(r.err).toContain("NODE_OPTIONS='--require x' sh -c 'touch /tmp/sb-should-never-exist'");
    expect(r.err).toContain(`switchboard trust ${NEEDS_CONSENT}`);
    expect(r.out).toBe('');
  });
});

describe('switchboard trust FLOW', { timeout: 120_000 }, () => {
  it('lists each command in full, approves with --yes, and is then satisfied', async () => {
    const listed = await runCli(['trust', NEEDS_CONSENT]);
    expect(listed.code).toBe(3);
    expect(listed.out).toContain(
      "mcp-server evil (/mcpServers/evil)\n  NODE_OPTIONS='--require x' sh -c 'touch /tmp/sb-should-never-exist'",
    );
    expect(listed.out).toContain('warning: sets NODE_OPTIONS');
    expect(listed.out).toContain('not approved (re-run on a terminal, or with --yes)');
    const yes = await runCli(['trust', NEEDS_CONSENT, '--yes']);
    expect(yes.code).toBe(0);
    const file = JSON.parse(readFileSync(join(tmp.dir, 'sbhome', 'trust.json'), 'utf8'));
    const flowId = JSON.parse(readFileSync(NEEDS_CONSENT, 'utf8')).id as string;
    expect(file.flows.map((f: { flowId: string }) => f.flowId)).toEqual([flowId]);
    expect(file.flows[0].uses.map((c: { display: string }) => c.display)).toEqual([
      "NODE_OPTIONS='--require x' sh -c 'touch /tmp/sb-should-never-exist'",
    ]);
    const again = await runCli(['trust', NEEDS_CONSENT, '--json']);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.out)[0]).toMatchObject({ name: 'evil', approved: true });

    // The same commands under another flow id are not approved.
    const other = join(tmp.dir, 'other.json');
    writeFileSync(
      other,
      JSON.stringify({ ...JSON.parse(readFileSync(NEEDS_CONSENT, 'utf8')), id: 'other-flow' }),
    );
    expect((await runCli(['trust', other, '--json'])).code).toBe(3);

    const list = await runCli(['trust', '--list']);
    expect(list.code).toBe(0);
    expect(list.out).toContain(`${flowId}  approved `);
    expect(list.out).toContain("mcp-server evil: NODE_OPTIONS='--require x' sh -c");
    const revoke = await runCli(['trust', '--revoke', flowId]);
    expect(revoke.code).toBe(0);
    expect((await runCli(['trust', NEEDS_CONSENT, '--json'])).code).toBe(3);
    expect((await runCli(['trust', '--revoke', flowId])).code).toBe(1);
    expect((await runCli(['trust', '--list'])).out).toContain('no flow is approved');
  });

  it('approves a flow stored by a server by its id (--data DIR)', async () => {
    const flow = JSON.parse(readFileSync(NEEDS_CONSENT, 'utf8'));
    const data = join(tmp.dir, 'data');
    mkdirSync(data);
    const rec = { flow, rev: 1, createdAt: 'x', updatedAt: 'x' };
    writeFileSync(
      join(data, 'catalog.json'),
      JSON.stringify({
        format: 'switchboard-catalog',
        version: 1,
        flows: { [flow.id]: rec },
        runs: {},
        settings: {},
      }),
    );
    const r = await runCli(['trust', '--data', data, flow.id, '--yes']);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain(`approved for flow "${flow.id}"`);
    expect((await runCli(['trust', NEEDS_CONSENT, '--json'])).code).toBe(0);
    const missing = await runCli(['trust', '--data', data, 'no-such-flow']);
    expect(missing.code).toBe(2);
    expect(missing.err).toContain('holds no flow "no-such-flow"');
  });
});

describe('switchboard trust FLOW --tools', { timeout: 120_000 }, () => {
  it('pins tools, reports a changed description and re-approves it only when told', async () => {
    const descFile = join(tmp.dir, 'desc.txt');
    writeFileSync(descFile, 'Echo, version one.');
    const flowFile = join(tmp.dir, 'pinned.json');
    const flow = JSON.parse(readFileSync(NEEDS_CONSENT, 'utf8'));
    flow.mcpServers = {
      evil: {
        command: process.execPath,
        args: [join(FIXTURES, 'faulty-server.mjs')],
        env: { DESC_FILE: descFile },
      },
    };
    writeFileSync(flowFile, JSON.stringify(flow));
    const first = await runCli(['trust', flowFile, '--yes', '--tools']);
    expect(first.code).toBe(0);
    expect(first.out).toContain('tool evil/echo: not pinned yet');
    expect((await runCli(['trust', flowFile, '--tools'])).out).toContain('every pinned tool is unchanged');
    writeFileSync(descFile, 'Echo, version two.');
    const changed = await runCli(['trust', flowFile, '--tools']);
    expect(changed.code).toBe(3);
    expect(changed.out).toContain(
      'tool evil/echo: description or schema changed\n  Echo, version two.\n  left disabled',
    );
    const again = await runCli(['trust', flowFile, '--tools', '--yes']);
    expect(again.code).toBe(0);
    expect((await runCli(['trust', flowFile, '--tools'])).out).toContain('every pinned tool is unchanged');
  });
});

describe('switchboard mcp-builtin NAME', { timeout: 120_000 }, () => {
  it('serves the documents built-in over stdio to the SDK client', async () => {
    const client = await stdioClient(['mcp-builtin', 'documents', '--data-dir', join(tmp.dir, 'data')]);
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('read_section_content');
    await client.callTool({
      name: 'initialize_document_context',
      arguments: { document_id: 'd1', title: 'T' },
    });
    const outline = await client.callTool({ name: 'get_document_outline', arguments: { document_id: 'd1' } });
    expect(JSON.parse((outline.content as Array<{ text: string }>)[0]!.text)).toEqual({
      title: 'T',
      sections: [],
    });
    expect(readFileSync(join(tmp.dir, 'data', 'documents', 'd1', 'metadata.json'), 'utf8')).toContain(
      '"title": "T"',
    );
  });

  it('refuses an unknown name and a shell that is not enabled', async () => {
    expect((await runCli(['mcp-builtin', 'nope'])).code).toBe(2);
    const shell = await runCli(['mcp-builtin', 'shell']);
    expect(shell.code).toBe(1);
    expect(shell.err).toContain('the shell built-in is off');
  });
});
