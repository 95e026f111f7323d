/**
 * The operator's trust file: approved command lines (by fingerprint) and pinned tool hashes.
 * Default location `$SWITCHBOARD_HOME/trust.json`, else `~/.switchboard/trust.json`. It is read
 * afresh on every check, so an approval given with `switchboard trust` in another process takes
 * effect without a restart; it is written with a temp file + fsync + rename, mode 0600.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { type Dict, dict } from '@switchboard/schemas/core';
import { type CommandLine, fingerprintOf, formatCommandLine } from './command-line.js';
import { McpHostError } from './errors.js';

export interface ApprovedCommand {
  commandLine: CommandLine;
  display: string;
  approvedAt: string;
  /** Flow ids the approval was given for (informational). */
  flows: string[];
}

export interface ToolPin {
  hash: string;
  approvedAt: string;
}

export interface TrustData {
  version: 1;
  commands: Dict<ApprovedCommand>;
  /** serverKey → tool name → pin (tool names come from MCP servers: null-prototype tables). */
  pins: Dict<Dict<ToolPin>>;
}

/** Where the trust file lives unless a path is given. */
export function defaultTrustPath(env: Record<string, string | undefined> = process.env): string {
  const home = env.SWITCHBOARD_HOME || join(homedir(), '.switchboard');
  return join(home, 'trust.json');
}

const empty = (): TrustData => ({ version: 1, commands: dict(), pins: dict() });

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
      // A corrupt trust file must not silently approve or forget anything: stop and say where.
      throw new McpHostError(
        'mcp.bad-config',
        `${this.path}: the trust file is not valid JSON; fix or remove it`,
      );
    }
    const d = data as Partial<TrustData>;
    if (!d || typeof d !== 'object' || d.version !== 1)
      throw new McpHostError('mcp.bad-config', `${this.path}: unknown trust file version`);
    const pins = dict<Dict<ToolPin>>();
    for (const [server, list] of Object.entries(d.pins ?? {})) pins[server] = dict(list);
    return { version: 1, commands: dict(d.commands ?? {}), pins };
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

  isApproved(cl: CommandLine): boolean {
    return Object.hasOwn(this.read().commands, fingerprintOf(cl));
  }

  approve(cl: CommandLine, flowId?: string): string {
    const fp = fingerprintOf(cl);
    this.update((d) => {
      const prev = d.commands[fp];
      const flows = new Set(prev?.flows ?? []);
      if (flowId) flows.add(flowId);
      d.commands[fp] = {
        commandLine: cl,
        display: formatCommandLine(cl),
        approvedAt: prev?.approvedAt ?? new Date().toISOString(),
        flows: [...flows].sort(),
      };
    });
    return fp;
  }

  revoke(fingerprint: string): boolean {
    let found = false;
    this.update((d) => {
      found = Object.hasOwn(d.commands, fingerprint);
      delete d.commands[fingerprint];
    });
    return found;
  }

  getPin(serverKey: string, tool: string): ToolPin | undefined {
    const pins = this.read().pins[serverKey];
    return pins && Object.hasOwn(pins, tool) ? pins[tool] : undefined;
  }

  setPin(serverKey: string, tool: string, hash: string): void {
    this.update((d) => {
      const pins = Object.hasOwn(d.pins, serverKey) ? d.pins[serverKey]! : dict<ToolPin>();
      pins[tool] = { hash, approvedAt: new Date().toISOString() };
      d.pins[serverKey] = pins;
    });
  }
}
