/**
 * Re-approval of pinned tools: connects to the flow's (approved) stdio and HTTP servers, compares
 * each tool's description + schema hash with its pin, and records the new hash for the tools the
 * operator accepts. Used by `switchboard trust FLOW --tools`.
 */
import type { Flow } from '@switchboard/schemas';
import type { OutboundPolicy } from '../net/outbound.js';
import { createMcpToolHost, pinKeyOf } from '../tools/mcp-host.js';
import { toolPinHash } from './pins.js';
import { McpPool } from './pool.js';
import type { TrustStore } from './trust.js';

export interface PinChange {
  server: string;
  tool: string;
  pinKey: string;
  oldHash?: string;
  newHash: string;
  description: string;
}

export interface RepinOptions {
  trust: TrustStore;
  env?: Record<string, string | undefined>;
  baseDir?: string;
  outboundPolicy?: OutboundPolicy;
  /** Decides per changed tool; resolve true to re-approve. */
  approve(change: PinChange): Promise<boolean>;
}

/** Lists changed pins of every non-built-in server the flow's tool nodes use; returns what was re-approved. */
export async function repinFlowTools(
  flow: Flow,
  o: RepinOptions,
): Promise<{ changed: PinChange[]; approved: PinChange[] }> {
  const pool = new McpPool({ idleMs: 0 });
  const changed: PinChange[] = [];
  const approved: PinChange[] = [];
  const servers = new Set(
    flow.nodes.filter((n) => n.kind === 'tool').map((n) => String(n.config.server ?? '')),
  );
  try {
    for (const name of [...servers].sort()) {
      const cfg = flow.mcpServers?.[name];
      if (!cfg) continue;
      const key = pinKeyOf(cfg);
      if (!key) continue;
      // A throwaway host over a throwaway pool: it enforces consent exactly as a run would.
      const probe: Flow = {
        ...flow,
        nodes: [
          { id: 'probe_tool', kind: 'tool', position: { x: 0, y: 0 }, config: { server: name } },
          { id: 'probe_agent', kind: 'agent', position: { x: 0, y: 0 }, config: {} },
        ],
        edges: [{ id: 'probe_edge', kind: 'tools', source: 'probe_tool', target: 'probe_agent' }],
      };
      const host = createMcpToolHost(probe, {
        pool,
        trust: o.trust,
        pinOnFirstUse: false,
        consentFlow: flow,
        ...(o.env ? { env: o.env } : {}),
        ...(o.baseDir ? { baseDir: o.baseDir } : {}),
        ...(o.outboundPolicy ? { outboundPolicy: o.outboundPolicy } : {}),
      });
      const ac = new AbortController();
      const runId = `repin-${name}`;
      try {
        await host.toolsFor('probe_agent', {
          runId,
          signal: ac.signal,
          state: { get: () => undefined, set: () => {}, snapshot: () => ({}) },
        });
        const conn = pool.connections().find((c) => c.spec.label === name);
        for (const t of conn?.currentTools ?? []) {
          const pin = o.trust.getPin(key, t.name);
          const hash = toolPinHash(t);
          if (pin?.hash === hash) continue;
          const change: PinChange = {
            server: name,
            tool: t.name,
            pinKey: key,
            ...(pin ? { oldHash: pin.hash } : {}),
            newHash: hash,
            description: t.description ?? '',
          };
          changed.push(change);
          if (await o.approve(change)) {
            o.trust.setPin(key, t.name, hash);
            approved.push(change);
          }
        }
      } finally {
        await host.release(runId);
      }
    }
  } finally {
    await pool.close();
  }
  return { changed, approved };
}
