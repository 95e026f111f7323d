/**
 * The operator's trust file: per flow, the commands approved for it (and a hash of the flow's
 * command definitions when they were approved), plus pinned tool hashes. Default location
 * `$SWITCHBOARD_HOME/trust.json`, else `~/.switchboard/trust.json`. It is read afresh on every
 * check, so an approval given with `switchboard trust` in another process takes effect without a
 * restart; it is written with a temp file + fsync + rename, mode 0600.
 *
 * Approvals are stored as a list, not as an object keyed by flow id, so that no id from a flow
 * ever becomes a key of a plain object. Version 1 files approved command lines for every flow at
 * once (issue 13): their command approvals are dropped when read — the operator approves each
 * flow again — and only their tool pins are kept.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { type Dict, dict } from '@switchboard/schemas/core';
import type { CommandLine } from './command-line.js';
import { McpHostError } from './errors.js';

/** One approved command of a flow (stdio MCP server, shell built-in, ACP agent backend). */
export interface ApprovedUse {
  kind: 'mcp-server' | 'acp-agent' | 'shell-builtin';
  /** The mcpServers key or the agent node id. */
  name: string;
  commandLine: CommandLine;
  display: string;
  fingerprint: string;
}

export interface FlowApproval {
  flowId: string;
  /** Hash of every command definition of the flow when it was approved (see consent.ts). */
  hash: string;
  approvedAt: string;
  uses: ApprovedUse[];
}

export interface ToolPin {
  hash: string;
  approvedAt: string;
}

export interface TrustData {
  version: 2;
  flows: FlowApproval[];
  /** serverKey → tool name → pin. */
  pins: Dict<Dict<ToolPin>>;
  /** Command approvals of a version 1 file that no longer count (shown by `trust --list`). */
  droppedLegacy?: number;
}

/** Where the trust file lives unless a path is given. */
export function defaultTrustPath(env: Record<string, string | undefined> = process.env): string {
  const home = env.SWITCHBOARD_HOME || join(homedir(), '.switchboard');
  return join(home, 'trust.json');
}

const empty = (): TrustData => ({ version: 2, flows: [], pins: dict() });

function badFile(path: string, what: string): McpHostError {
  // A damaged trust file must not silently approve or forget anything: stop and say where.
  return new McpHostError('mcp.bad-config', `${path}: ${what}; fix or remove the trust file`);
}

function checkFlows(path: string, v: unknown): FlowApproval[] {
  if (!Array.isArray(v)) throw badFile(path, '"flows" is not a list');
  return v.map((f, i) => {
    const r = f as Partial<FlowApproval>;
    if (!r || typeof r.flowId !== 'string' || typeof r.hash !== 'string' || !Array.isArray(r.uses))
      throw badFile(path, `flows[${i}] is not an approval`);
    return r as FlowApproval;
  });
}

export class TrustStore {
  readonly path: string;
  constructor(path: string = defaultTrustPath()) {
    this.path = path;
  }

  read(): TrustData {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return empty();
      throw e;
    }
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      throw badFile(this.path, 'the trust file is not valid JSON');
    }
    const d = data as Record<string, unknown> | null;
    if (!d || typeof d !== 'object') throw badFile(this.path, 'unknown trust file version');
    // Server keys and tool names come from MCP servers: rebuilt as null-prototype tables.
    const pins = dict<Dict<ToolPin>>();
    if (d.pins && typeof d.pins === 'object')
      for (const [server, list] of Object.entries(d.pins as Record<string, Record<string, ToolPin>>))
        pins[server] = dict(list);
    if (d.version === 1) {
      const commands = d.commands && typeof d.commands === 'object' ? Object.keys(d.commands).length : 0;
      return { version: 2, flows: [], pins, ...(commands ? { droppedLegacy: commands } : {}) };
    }
    if (d.version !== 2) throw badFile(this.path, 'unknown trust file version');
    return {
      version: 2,
      flows: checkFlows(this.path, d.flows),
      pins,
      ...(typeof d.droppedLegacy === 'number' ? { droppedLegacy: d.droppedLegacy } : {}),
    };
  }

  private write(data: TrustData): void {
    mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 });
    const tmp = `${this.path}.${process.pid}.${Date.now()}.tmp`;
    const fd = openSync(tmp, 'w', 0o600);
    try {
      writeSync(fd, `${JSON.stringify(data, null, 2)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, this.path);
  }

  private update(fn: (d: TrustData) => void): void {
    const d = this.read();
    fn(d);
    this.write(d);
  }

  /** The approval recorded for a flow id, if any. */
  flowApproval(flowId: string): FlowApproval | undefined {
    return this.read().flows.find((f) => f.flowId === flowId);
  }

  /** Every flow approval, sorted by flow id. */
  listFlows(): FlowApproval[] {
    return [...this.read().flows].sort((a, b) => (a.flowId < b.flowId ? -1 : a.flowId > b.flowId ? 1 : 0));
  }

  /**
   * Approves `uses` for the flow as its command definitions hash to `hash` now. An approval
   * recorded for another hash (the definitions changed since) is replaced, not extended.
   */
  approveUses(flowId: string, hash: string, uses: ApprovedUse[]): void {
    this.update((d) => {
      const prev = d.flows.find((f) => f.flowId === flowId);
      const kept = prev && prev.hash === hash ? prev.uses : [];
      const merged = [...kept];
      for (const u of uses)
        if (!merged.some((m) => m.kind === u.kind && m.name === u.name && m.fingerprint === u.fingerprint))
          merged.push(u);
      const record: FlowApproval = {
        flowId,
        hash,
        approvedAt: new Date().toISOString(),
        uses: merged,
      };
      d.flows = [...d.flows.filter((f) => f.flowId !== flowId), record];
    });
  }

  /** Forgets every approval of a flow; false when there was none. */
  revokeFlow(flowId: string): boolean {
    let found = false;
    this.update((d) => {
      found = d.flows.some((f) => f.flowId === flowId);
      d.flows = d.flows.filter((f) => f.flowId !== flowId);
    });
    return found;
  }

  getPin(serverKey: string, tool: string): ToolPin | undefined {
    const all = this.read().pins;
    const pins = Object.hasOwn(all, serverKey) ? all[serverKey] : undefined;
    return pins && Object.hasOwn(pins, tool) ? pins[tool] : undefined;
  }

  setPin(serverKey: string, tool: string, hash: string): void {
    this.update((d) => {
      // Keys come from server URLs and tool names: null-prototype objects, so that no name
      // (`__proto__` included) reaches Object.prototype; JSON.stringify writes them as usual.
      const pins = dict<ToolPin>(Object.hasOwn(d.pins, serverKey) ? d.pins[serverKey] : undefined);
      pins[tool] = { hash, approvedAt: new Date().toISOString() };
      const all: TrustData['pins'] = dict(d.pins);
      all[serverKey] = pins;
      d.pins = all;
    });
  }
}
