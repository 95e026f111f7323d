/**
 * Consent for commands (DESIGN: "A stdio command runs only with the local operator's consent").
 * A flow may name stdio MCP servers, external ACP agent commands and the `shell` built-in; each
 * is started only once its exact command line is in the operator's trust file. This module lists
 * those command lines and records approvals; the tool host refuses anything not approved.
 */
import { createInterface } from 'node:readline';
import type { Flow } from '@switchboard/schemas';
import {
  type CommandLine,
  commandLineOf,
  fingerprintOf,
  formatCommandLine,
  riskyEnvKeys,
} from './command-line.js';
import { ConsentRequiredError } from './errors.js';
import { canonicalJson } from './pins.js';
import { TrustStore } from './trust.js';

export interface CommandUse {
  /** `mcp-server` (stdio server), `acp-agent` (agent backend) or `shell-builtin`. */
  kind: 'mcp-server' | 'acp-agent' | 'shell-builtin';
  /** The mcpServers key or the agent node id: what `--trust NAME` names. */
  name: string;
  /** JSON-path-like location in the flow. */
  where: string;
  commandLine: CommandLine;
  display: string;
  fingerprint: string;
  /** Env keys that make interpreters load code (NODE_OPTIONS, LD_PRELOAD, …). */
  risky: string[];
  approved: boolean;
}

type ServerCfg = NonNullable<Flow['mcpServers']>[string];

/** The command line the shell built-in stands for: its whole options object is part of it. */
export function shellBuiltinCommandLine(options: Record<string, unknown> | undefined): CommandLine {
  return { command: 'builtin:shell', args: [`options=${canonicalJson(options ?? {})}`], env: {} };
}

/** The command line a server config needs approved, or undefined for servers that spawn nothing. */
export function serverCommandLine(cfg: ServerCfg): CommandLine | undefined {
  if ('command' in cfg) return commandLineOf(cfg);
  if ('builtin' in cfg && cfg.builtin === 'shell') return shellBuiltinCommandLine(cfg.options);
  return undefined;
}

/** Every command a flow would spawn: stdio servers used by tool nodes, ACP agent backends, the shell built-in. */
export function commandsOf(flow: Flow, store?: TrustStore): CommandUse[] {
  const uses: Array<Omit<CommandUse, 'approved' | 'display' | 'fingerprint' | 'risky'>> = [];
  const referenced = new Set<string>();
  for (const n of flow.nodes)
    if (n.kind === 'tool' && typeof n.config.server === 'string') referenced.add(n.config.server);
  for (const [name, cfg] of Object.entries(flow.mcpServers ?? {})) {
    if (!referenced.has(name)) continue;
    const cl = serverCommandLine(cfg);
    if (!cl) continue;
    uses.push({
      kind: 'command' in cfg ? 'mcp-server' : 'shell-builtin',
      name,
      where: `/mcpServers/${name}`,
      commandLine: cl,
    });
  }
  flow.nodes.forEach((n, i) => {
    const b = n.config.backend as { type?: string; command?: unknown } | undefined;
    if (n.kind === 'agent' && b && b.type === 'acp' && typeof b.command === 'string') {
      uses.push({
        kind: 'acp-agent',
        name: n.id,
        where: `/nodes/${i}/config/backend`,
        commandLine: commandLineOf(b as Parameters<typeof commandLineOf>[0]),
      });
    }
  });
  const data = store?.read();
  return uses.map((u) => {
    const fingerprint = fingerprintOf(u.commandLine);
    return {
      ...u,
      fingerprint,
      display: formatCommandLine(u.commandLine),
      risky: riskyEnvKeys(u.commandLine),
      approved: data ? Object.hasOwn(data.commands, fingerprint) : false,
    };
  });
}

/** One command as shown to the operator before approval. */
export function describeUse(u: CommandUse): string {
  const lines = [
    `${u.kind} ${u.name} (${u.where})${u.approved ? ' [approved]' : ''}`,
    `  ${u.display}`,
    `  fingerprint ${u.fingerprint.slice(0, 16)}`,
  ];
  if (u.risky.length)
    lines.push(`  warning: sets ${u.risky.join(', ')}, which make programs load extra code`);
  return lines.join('\n');
}

export interface ConsentIO {
  /** Asks a yes/no question; resolves true only on an explicit yes. */
  ask(question: string): Promise<boolean>;
  print(text: string): void;
}

export interface EnsureConsentOptions {
  /** True when a person is at a terminal and may be asked. */
  interactive: boolean;
  /** `--trust` values: an mcpServers key or agent node id, or a fingerprint prefix (8+ hex digits). */
  trustArgs?: string[];
  store?: TrustStore;
  io?: ConsentIO;
  /** The flow file as the operator named it, so a refusal gives the exact `switchboard trust` line. */
  flowFile?: string;
  /** Given when the trust file is not the default one: the refusal's command names it too. */
  trustFile?: string;
}

/** A word as a POSIX shell reads it: bare when it is plain, else single-quoted. */
function shellWord(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`;
}

/** The command an operator runs to approve a flow's commands: `switchboard trust FILE`. */
export function trustCommand(flowFile: string | undefined, trustFile?: string): string {
  const file = flowFile === undefined ? 'FLOW' : shellWord(flowFile);
  return `switchboard trust ${file}${trustFile === undefined ? '' : ` --trust-file ${shellWord(trustFile)}`}`;
}

export interface ConsentResult {
  ok: boolean;
  /** Commands approved by this call (recorded in the trust file). */
  approvedNow: CommandUse[];
  /** Commands still unapproved; the run must not start them. */
  missing: CommandUse[];
  /** For a refusal: every missing command line in full and how to approve it. */
  message?: string;
}

/** Reads y/N from stdin, writing the question to stderr. */
export function terminalConsentIO(
  input: NodeJS.ReadableStream = process.stdin,
  output: NodeJS.WritableStream = process.stderr,
): ConsentIO {
  return {
    print: (t) => void output.write(`${t}\n`),
    ask: (q) =>
      new Promise((resolve) => {
        const rl = createInterface({ input, output, terminal: false });
        let answered = false;
        rl.question(`${q} [y/N] `, (a) => {
          answered = true;
          rl.close();
          resolve(/^\s*y(es)?\s*$/i.test(a));
        });
        rl.once('close', () => {
          if (!answered) resolve(false);
        });
      }),
  };
}

function named(u: CommandUse, trustArgs: string[]): boolean {
  return trustArgs.some(
    (t) => t === u.name || (/^[0-9a-f]{8,64}$/i.test(t) && u.fingerprint.startsWith(t.toLowerCase())),
  );
}

/**
 * Makes sure every command the flow would spawn is approved: those named by `trustArgs` are
 * approved (and recorded), the rest are asked about on a terminal; otherwise the result says
 * which command lines are missing. `switchboard run` calls this before starting a run.
 */
export async function ensureConsent(flow: Flow, options: EnsureConsentOptions): Promise<ConsentResult> {
  const store = options.store ?? new TrustStore();
  const uses = commandsOf(flow, store);
  const approvedNow: CommandUse[] = [];
  const missing: CommandUse[] = [];
  const io = options.io ?? terminalConsentIO();
  for (const u of uses) {
    if (u.approved) continue;
    let yes = named(u, options.trustArgs ?? []);
    if (!yes && options.interactive) {
      io.print(describeUse(u));
      yes = await io.ask(`Allow Switchboard to run this command for flow "${flow.id}"?`);
    }
    if (yes) {
      store.approve(u.commandLine, flow.id);
      approvedNow.push({ ...u, approved: true });
    } else missing.push(u);
  }
  if (missing.length === 0) return { ok: true, approvedNow, missing };
  const message = [
    `The flow "${flow.id}" needs commands the local operator has not approved:`,
    ...missing.map(describeUse),
    `Approve them with \`${trustCommand(options.flowFile, options.trustFile)}\` (add --yes in scripts), or name them with --trust ${missing
      .map((m) => m.name)
      .join(' --trust ')}.`,
  ].join('\n');
  return { ok: false, approvedNow, missing, message };
}

/**
 * For code that spawns a command a flow names (stdio MCP servers here, ACP agent backends in
 * `acp/`): throws `ConsentRequiredError` — naming the exact command line and how to approve it —
 * unless the operator approved it. Call it right before spawning, every time.
 */
export function requireCommandConsent(
  cfg: { command: string; args?: string[]; env?: Record<string, string>; cwd?: string },
  where: string,
  options: { trust?: TrustStore; flowRef?: string } = {},
): CommandLine {
  const cl = commandLineOf(cfg);
  if (!(options.trust ?? new TrustStore()).isApproved(cl))
    throw new ConsentRequiredError(
      where,
      formatCommandLine(cl),
      fingerprintOf(cl),
      options.flowRef ?? 'FLOW',
    );
  return cl;
}
