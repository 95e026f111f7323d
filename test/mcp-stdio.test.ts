/**
 * Stdio MCP servers: the npm-published reference filesystem server (written by others), the
 * minimal environment a child gets (no secrets), and consent — 32 known-dangerous command
 * forms written into a flow are never spawned without the operator's approval.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { commandLineOf, formatCommandLine } from '../runtime/src/mcp/command-line.js';
import { approveFlow, ensureConsent, isFlowApproved } from '../runtime/src/mcp/consent.js';
import { INHERITED_ENV } from '../runtime/src/mcp/env.js';
import { ConsentRequiredError } from '../runtime/src/mcp/errors.js';
import { McpPool } from '../runtime/src/mcp/pool.js';
import { TrustStore } from '../runtime/src/mcp/trust.js';
import { createMcpToolHost } from '../runtime/src/tools/mcp-host.js';
import { prepareDangerousForms } from './fixtures/mcp/dangerous.js';
import {
  FAULTY,
  never,
  REPO,
  runContext,
  type ServerCfg,
  tempDir,
  toolFlow,
} from './fixtures/mcp/helpers.js';

const FS_SERVER = join(REPO, 'test/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
let tmp: ReturnType<typeof tempDir>;
let pool: McpPool;
let trust: TrustStore;
beforeEach(() => {
  tmp = tempDir('sb-stdio-');
  pool = new McpPool();
  trust = new TrustStore(join(tmp.dir, 'home', 'trust.json'));
});
afterEach(async () => {
  await pool.close();
  tmp.cleanup();
});

describe('the reference filesystem server (@modelcontextprotocol/server-filesystem) over stdio', {
  timeout: 120_000,
}, () => {
  it('is discovered with tools/list, narrowed by the tool filter, and called', async () => {
    const root = join(tmp.dir, 'root');
    mkdirSync(root);
    writeFileSync(join(root, 'hello.txt'), 'hello from disk');
    const cfg: ServerCfg = { command: process.execPath, args: [FS_SERVER, root] };
    const flow = toolFlow(
      { fs: cfg },
      { a1: ['fs'] },
      { fs: { include: ['read_*', 'write_file', 'list_directory'], exclude: ['read_media_file'] } },
    );
    const host = createMcpToolHost(flow, { pool, trust });
    await expect(host.toolsFor('a1', runContext('r0').ctx)).rejects.toBeInstanceOf(ConsentRequiredError);
    approveFlow(trust, flow);
    const rc = runContext('r1');
    const tools = await host.toolsFor('a1', rc.ctx);
    expect(tools.map((t) => t.name)).toEqual([
      't_fs__list_directory',
      't_fs__read_file',
      't_fs__read_multiple_files',
      't_fs__read_text_file',
      't_fs__write_file',
    ]);
    const read = tools.find((t) => t.remoteName === 'read_text_file')!;
    expect(read.inputSchema).toMatchObject({ type: 'object' });
    expect((await read.call({ path: join(root, 'hello.txt') }, { signal: never })).content).toBe(
      'hello from disk',
    );
    const write = tools.find((t) => t.remoteName === 'write_file')!;
    expect(
      (await write.call({ path: join(root, 'out.txt'), content: 'written' }, { signal: never })).isError,
    ).toBe(false);
    expect(readFileSync(join(root, 'out.txt'), 'utf8')).toBe('written');
    // The server's own refusal comes back as an error result the agent can read.
    const outside = await read.call({ path: '/etc/hostname' }, { signal: never });
    expect(outside.isError).toBe(true);
    expect(outside.content).toMatch(/denied|outside/i);
    // stderr lines of the child became log events of the run.
    expect(rc.events.some((e) => e.type === 'log' && e.level === 'stderr')).toBe(true);
    // Two runs share one process; the pool closes it when both released it.
    await host.toolsFor('a1', runContext('r2').ctx);
    expect(pool.connections().filter((c) => c.spec.kind === 'stdio')).toHaveLength(1);
    const pid = pool.connections()[0]!.pid!;
    await host.release('r1');
    await host.release('r2');
    await pool.close();
    expect(() => process.kill(pid, 0)).toThrow();
  });
});

describe('the environment of a spawned server', { timeout: 120_000 }, () => {
  const SECRETS: Record<string, string> = {
    OPENAI_API_KEY: 'sk-test-openai-secret-1',
    ANTHROPIC_API_KEY: 'sk-ant-secret-2',
    SWITCHBOARD_TOKEN: 'switchboard-token-secret-3',
    AWS_SECRET_ACCESS_KEY: 'aws-secret-4',
    GITHUB_TOKEN: 'ghp_secret5',
    DATABASE_URL: 'postgres://user:secret6@db/x',
    NODE_OPTIONS: '--max-old-space-size=4096',
  };
  const saved: Record<string, string | undefined> = {};
  beforeEach(() => {
    for (const [k, v] of Object.entries(SECRETS)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
    process.env.FLOW_NAMED_VAR = 'named-value';
    process.env.FLOW_NAMED_KEY = 'flow-named-key-0123456789';
  });
  afterEach(() => {
    for (const k of Object.keys(SECRETS)) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
    delete process.env.FLOW_NAMED_VAR;
    delete process.env.FLOW_NAMED_KEY;
  });

  it('holds none of our secrets, only the minimal set and what the flow names', async () => {
    const cfg: ServerCfg = {
      command: process.execPath,
      args: [FAULTY],
      env: { FROM_FLOW: '${env:FLOW_NAMED_VAR}', KEY_FROM_FLOW: '${env:FLOW_NAMED_KEY}', PLAIN: 'x' },
    };
    approveFlow(trust, toolFlow({ f: cfg }));
    const host = createMcpToolHost(toolFlow({ f: cfg }), { pool, trust });
    const tools = await host.toolsFor('a1', runContext('env1').ctx);
    const r = await tools.find((t) => t.remoteName === 'env')!.call({}, { signal: never });
    const childEnv = JSON.parse(r.content) as Record<string, string>;
    const text = r.content;
    for (const v of Object.values(SECRETS)) expect(text).not.toContain(v);
    expect(childEnv.FROM_FLOW).toBe('named-value');
    // A key-length value the flow hands its approved server still never shows in a result.
    expect(childEnv.KEY_FROM_FLOW).toBe('[secret FLOW_NAMED_KEY]');
    expect(text).not.toContain('flow-named-key-0123456789');
    expect(childEnv.PLAIN).toBe('x');
    const allowed = new Set([...INHERITED_ENV, 'SHELL', 'FROM_FLOW', 'KEY_FROM_FLOW', 'PLAIN']);
    expect(Object.keys(childEnv).filter((k) => !allowed.has(k))).toEqual([]);
  });

  it('fails clearly when a named variable is not set', async () => {
    const cfg: ServerCfg = {
      command: process.execPath,
      args: [FAULTY],
      env: { X: '${env:SURELY_NOT_SET_4711}' },
    };
    approveFlow(trust, toolFlow({ f: cfg }));
    const host = createMcpToolHost(toolFlow({ f: cfg }), { pool, trust });
    await expect(host.toolsFor('a1', runContext('env2').ctx)).rejects.toThrow(
      'mcpServers.f.env.X: the environment variable SURELY_NOT_SET_4711 is not set',
    );
  });
});

describe('consent: dangerous commands written into a flow', { timeout: 120_000 }, () => {
  it('spawns none of 32 forms without consent, names each command line and how to approve it', async () => {
    const { markers, forms } = prepareDangerousForms(tmp.dir);
    expect(forms.length).toBeGreaterThanOrEqual(25);
    // Approving a harmless neighbour — in this flow's id, and in another flow — must not approve any of them.
    approveFlow(trust, toolFlow({ s0: { command: process.execPath, args: [FAULTY] } }));
    for (let i = 0; i < forms.length; i++) {
      const flow = toolFlow({ [`s${i}`]: forms[i]! });
      approveFlow(trust, { ...flow, id: 'a-neighbour' });
      const host = createMcpToolHost(flow, { pool, trust, flowRef: 'flows/evil.json' });
      const err = await host.toolsFor('a1', runContext(`d${i}`).ctx).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, `form ${i}`).toBeInstanceOf(ConsentRequiredError);
      const msg = (err as Error).message;
      expect(msg).toContain(
        formatCommandLine(commandLineOf(forms[i] as Parameters<typeof commandLineOf>[0])),
      );
      expect(msg).toContain('switchboard trust flows/evil.json');
      // A run that is not interactive refuses too, and lists the command.
      const consent = await ensureConsent(flow, { interactive: false, store: trust });
      expect(consent.ok).toBe(false);
      expect(consent.message).toContain(
        formatCommandLine(commandLineOf(forms[i] as Parameters<typeof commandLineOf>[0])),
      );
      await host.release(`d${i}`);
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(readdirSync(markers)).toEqual([]);
    expect(pool.connections()).toHaveLength(0);

    // Control: the markers work — once approved, form 15 (NODE_OPTIONS) does run and leaves its marker.
    const approvedForm = forms[15]!;
    approveFlow(trust, toolFlow({ ok: approvedForm }));
    const host = createMcpToolHost(toolFlow({ ok: approvedForm }), { pool, trust });
    await host.toolsFor('a1', runContext('control').ctx);
    expect(existsSync(join(markers, 'm15'))).toBe(true);
  });

  it('an approved command changed by a later write (an argument, an env value, the cwd) is quarantined again', async () => {
    const base = { command: process.execPath, args: [FAULTY], env: { A: '1' } };
    approveFlow(trust, toolFlow({ s: base }));
    const variants: ServerCfg[] = [
      { ...base, args: [FAULTY, '--inspect'] },
      { ...base, env: { A: '2' } },
      { ...base, env: { A: '1', NODE_OPTIONS: '--require x' } },
      { ...base, cwd: '/tmp' },
      { ...base, command: 'node' },
    ];
    for (const [i, v] of variants.entries()) {
      const host = createMcpToolHost(toolFlow({ s: v }), { pool, trust });
      await expect(host.toolsFor('a1', runContext(`v${i}`).ctx)).rejects.toBeInstanceOf(ConsentRequiredError);
    }
    const ok = createMcpToolHost(toolFlow({ s: base }), { pool, trust });
    expect((await ok.toolsFor('a1', runContext('base').ctx)).length).toBeGreaterThan(0);
  });

  it('ensureConsent approves what --trust names and records it; asks on a terminal', async () => {
    const a = { command: process.execPath, args: [FAULTY, 'a'] };
    const b = { command: process.execPath, args: [FAULTY, 'b'] };
    const flow = toolFlow({ a, b });
    const first = await ensureConsent(flow, { interactive: false, trustArgs: ['a'], store: trust });
    expect(first.ok).toBe(false);
    expect(first.approvedNow.map((u) => u.name)).toEqual(['a']);
    expect(first.missing.map((u) => u.name)).toEqual(['b']);
    const asked: string[] = [];
    const second = await ensureConsent(flow, {
      interactive: true,
      store: trust,
      io: { print: (t) => asked.push(t), ask: async () => true },
    });
    expect(second.ok).toBe(true);
    expect(asked.join('\n')).toContain(formatCommandLine(commandLineOf(b)));
    expect(isFlowApproved(trust, flow)).toBe(true);
    const raw = JSON.parse(readFileSync(trust.path, 'utf8'));
    expect(raw.flows).toHaveLength(1);
    expect(raw.flows[0].uses).toHaveLength(2);
  });
});
