import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Flow } from '@switchboard/schemas';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  approveFlow,
  commandsOf,
  definitionsHash,
  ensureConsent,
  isFlowApproved,
  requireFlowConsent,
} from './consent.js';
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

  it('hash every command definition, and nothing else of the flow', () => {
    const h = definitionsHash(flow);
    expect(definitionsHash({ ...flow, name: 'renamed', edges: [] })).toBe(h);
    const withShell = (options: Record<string, unknown>): Flow => ({
      ...flow,
      mcpServers: { ...flow.mcpServers, sh: { builtin: 'shell', options } },
    });
    expect(definitionsHash(withShell({ enabled: true, allow: ['ls', 'node'] }))).not.toBe(h);
    expect(definitionsHash(withShell({ enabled: true, allow: ['ls'], timeoutMs: 5 }))).not.toBe(h);
    // A tool node that starts using the unused server adds a command.
    const more: Flow = {
      ...flow,
      nodes: [...flow.nodes, { id: 't4', kind: 'tool', position: at, config: { server: 'unused' } }],
    };
    expect(definitionsHash(more)).not.toBe(h);
  });
});

describe('approvals belong to one flow as it is', () => {
  it('approve the flow; another flow id or an edited definition is refused, naming the trust command', () => {
    approveFlow(trust, flow);
    expect(isFlowApproved(trust, flow)).toBe(true);
    expect(requireFlowConsent(flow, 'shell-builtin', 'sh', { trust }).command).toBe('builtin:shell');

    const other: Flow = { ...flow, id: 'other' };
    expect(isFlowApproved(trust, other)).toBe(false);
    expect(() => requireFlowConsent(other, 'shell-builtin', 'sh', { trust, flowRef: 'other.json' })).toThrow(
      /not approved by the local operator for flow "other"[\s\S]*switchboard trust other\.json/,
    );

    const edited: Flow = {
      ...flow,
      mcpServers: { ...flow.mcpServers, used: { command: 'node', args: ['server.js', '--inspect'] } },
    };
    let err: unknown;
    try {
      // The unchanged shell built-in of the edited flow is refused too: the approval was for
      // the flow's definitions as a whole.
      requireFlowConsent(edited, 'shell-builtin', 'sh', { trust });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConsentRequiredError);
    expect((err as Error).message).toContain('changed since they were approved');
    // A server the flow does not declare as a command is never approved.
    expect(() => requireFlowConsent(flow, 'mcp-server', 'unused', { trust })).toThrow(ConsentRequiredError);
  });

  it('ensureConsent approves what --trust names (by name or fingerprint prefix), for this flow only', async () => {
    expect(() => requireFlowConsent(flow, 'acp-agent', 'ext', { trust, flowRef: 'f.json' })).toThrow(
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
    expect(requireFlowConsent(flow, 'acp-agent', 'ext', { trust }).command).toBe('my-agent');
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

  it('approving part of a flow, then the rest, approves the whole; a terminal answer other than yes is a no', async () => {
    const first = await ensureConsent(flow, { interactive: false, trustArgs: ['used'], store: trust });
    expect(first.ok).toBe(false);
    const second = await ensureConsent(flow, { interactive: false, trustArgs: ['sh', 'ext'], store: trust });
    expect(second.ok).toBe(true);
    expect(isFlowApproved(trust, flow)).toBe(true);
    const fresh = new TrustStore(join(dir, 'fresh.json'));
    const r = await ensureConsent(flow, {
      interactive: true,
      store: fresh,
      io: { print: () => {}, ask: async () => false },
    });
    expect(r.ok).toBe(false);
    expect(r.missing).toHaveLength(3);
  });
});
