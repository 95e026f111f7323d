/**
 * The servers a replay still runs for real: the built-in `state` server, whose only effect is on
 * the run's own JSON state (which the replay must rebuild to take the same path). Every other
 * tool — files, shell, HTTP, stdio servers — answers from the cassette.
 */
import { join } from 'node:path';
import type { Flow } from '@switchboard/schemas';
import type { ToolHost } from '../tools/types.js';

export async function liveReplayTools(
  flow: Flow,
  dataDir: string,
): Promise<{ host?: ToolHost; servers: Set<string> }> {
  const servers = new Set<string>();
  for (const [name, cfg] of Object.entries(flow.mcpServers ?? {}))
    if ('builtin' in cfg && cfg.builtin === 'state') servers.add(name);
  if (servers.size === 0) return { servers };
  const { createMcpToolHost } = await import('../tools/mcp-host.js');
  const { TrustStore } = await import('../mcp/trust.js');
  // An empty trust file: nothing that needs consent can start from here.
  return { host: createMcpToolHost(flow, { trust: new TrustStore(join(dataDir, 'trust.json')) }), servers };
}

/** The flow's servers that are the built-in `state` server: run for real even while replaying. */
export function stateServers(flow: Flow): Set<string> {
  const servers = new Set<string>();
  for (const [name, cfg] of Object.entries(flow.mcpServers ?? {}))
    if ('builtin' in cfg && cfg.builtin === 'state') servers.add(name);
  return servers;
}
