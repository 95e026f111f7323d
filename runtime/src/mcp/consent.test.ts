import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Flow } from '@switchboard/schemas';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { commandsOf, ensureConsent, requireCommandConsent } from './consent.js';
import { ConsentRequiredError } from './errors.js';
import { TrustStore } from './trust.js';

let dir: string;
let trust: TrustStore;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sb-consent-'));
  trust = new TrustStore(join(dir, 'trust.json'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const at = { x: 0, y: 0 };
const flow: Flow = {
  version: 1,
  id: 'f',
  name: 'f',
  models: {},
  mcpServers: {
    used: { command: 'node', args: ['server.js'], env: { TOKEN: '${env:TOKEN}' } },
    unused: { command: 'sh', args: ['-c', 'rm -rf /'] },
    sh: { builtin: 'shell', options: { enabled: true, allow: ['ls'] } },
    docs: { builtin: 'documents' },
  },
  nodes: [
    { id: 't1', kind: 'tool', position: at, config: { server: 'used' } },
    { id: 't2', kind: 'tool', position: at, config: { server: 'sh' } },
    { id: 't3', kind: 'tool', position: at, config: { server: 'docs' } },
    {
      id: 'ext',
      kind: 'agent',
      position: at,
      config: {
        role: 'r',
        model: 'default',
        prompt: [],
        backend: { type: 'acp', command: 'my-agent', args: ['--acp'] },
      },
    },
  ],
  edges: [],
};

describe('commandsOf', () => {
  it('lists stdio servers used by tool nodes, the shell built-in and ACP agent commands — nothing else', () => {
    const uses = commandsOf(flow, trust);
    expect(uses.map((u) => [u.kind, u.name, u.display, u.approved])).toEqual([
      ['mcp-server', 'used', "TOKEN='${env:TOKEN}' node server.js", false],
      ['shell-builtin', 'sh', `builtin:shell 'options={"allow":["ls"],"enabled":true}'`, false],
      ['acp-agent', 'ext', 'my-agent --acp', false],
    ]);
  });
});

describe('ensureConsent and requireCommandConsent', () => {
  it('refuse without approval, approve what --trust names (by name or fingerprint prefix)', async () => {
    const backend = { command: 'my-agent', args: ['--acp'] };
    expect(() => requireCommandConsent(backend, 'nodes.ext', { trust, flowRef: 'f.json' })).toThrow(
      ConsentRequiredError,
    );
    const fp = commandsOf(flow, trust).find((u) => u.name === 'sh')!.fingerprint;
    const r = await ensureConsent(flow, {
      interactive: false,
      trustArgs: ['used', 'ext', fp.slice(0, 12)],
      store: trust,
    });
    expect(r.ok).toBe(true);
    expect(r.approvedNow.map((u) => u.name)).toEqual(['used', 'sh', 'ext']);
    expect(requireCommandConsent(backend, 'nodes.ext', { trust }).command).toBe('my-agent');
    // A short or unrelated --trust value approves nothing.
    const other = new TrustStore(join(dir, 'other.json'));
    const r2 = await ensureConsent(flow, {
      interactive: false,
      trustArgs: ['abc', fp.slice(0, 7), 'unused'],
      store: other,
    });
    expect(r2.approvedNow).toEqual([]);
    expect(r2.message).toContain('--trust used --trust sh --trust ext');
  });

  it('a terminal answer other than yes is a no', async () => {
    const r = await ensureConsent(flow, {
      interactive: true,
      store: trust,
      io: { print: () => {}, ask: async () => false },
    });
    expect(r.ok).toBe(false);
    expect(r.missing).toHaveLength(3);
  });
});
