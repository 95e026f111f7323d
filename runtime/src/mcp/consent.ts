/**
 * Consent for commands (DESIGN: "A stdio command runs only with the local operator's consent").
 * A flow may name stdio MCP servers, external ACP agent commands and the `shell` built-in; each
 * is started only once the operator approved it FOR THAT FLOW: an approval names the flow id and
 * a hash of every command definition of the flow (`definitionsHash`), so it never carries over
 * to another flow that repeats the same command line, nor to an approved flow whose definitions
 * changed since (a REST write, a co-editing room). This module lists those commands, records
 * approvals, and answers "may this be spawned?" right before every spawn.
 */
import { createHash } from 'node:crypto';
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
import { type ApprovedUse, type FlowApproval, TrustStore } from './trust.js';

export type CommandKind = 'mcp-server' | 'acp-agent' | 'shell-builtin';

export interface CommandUse {
  /** `mcp-server` (stdio server), `acp-agent` (agent backend) or `shell-builtin`. */
  kind: CommandKind;
  /** The mcpServers key or the agent node id: what `--trust NAME` names. */
  name: string;
  /** JSON-path-like location in the flow. */
  where: string;
  commandLine: CommandLine;
  display: string;
  fingerprint: string;
  /** Env keys that make interpreters load code (NODE_OPTIONS, LD_PRELOAD, …). */
  risky: string[];
  /** Approved for this flow, with the flow's command definitions unchanged since. */
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

type Bare = Omit<CommandUse, 'approved' | 'display' | 'fingerprint' | 'risky'> & { fingerprint?: string };

function bareUses(flow: Flow): Array<Bare & { fingerprint: string }> {
  const uses: Bare[] = [];
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
  return uses.map((u) => ({ ...u, fingerprint: fingerprintOf(u.commandLine) }));
}

/**
 * The hash an approval names: every command the flow would spawn (kind, name, exact command
 * line), sorted. Any change — a new server, an edited argument, shell options, another agent
 * backend — gives another hash, and the approval no longer holds.
 */
export function definitionsHash(flow: Flow): string {
  const parts = bareUses(flow)
    .map((u) => JSON.stringify([u.kind, u.name, u.fingerprint]))
    .sort();
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

function isApprovedIn(
  record: FlowApproval | undefined,
  hash: string,
  u: Bare & { fingerprint: string },
): boolean {
  return (
    record !== undefined &&
    record.hash === hash &&
    record.uses.some((a) => a.kind === u.kind && a.name === u.name && a.fingerprint === u.fingerprint)
  );
}

/** Every command a flow would spawn: stdio servers used by tool nodes, ACP agent backends, the shell built-in. */
export function commandsOf(flow: Flow, store?: TrustStore): CommandUse[] {
  const record = store?.flowApproval(flow.id);
  const hash = definitionsHash(flow);
  return bareUses(flow).map((u) => ({
    ...u,
    display: formatCommandLine(u.commandLine),
    risky: riskyEnvKeys(u.commandLine),
    approved: isApprovedIn(record, hash, u),
  }));
}

/** Why the flow's commands are not approved: never approved, or changed since. */
function missingReason(flow: Flow, store: TrustStore): string {
  const record = store.flowApproval(flow.id);
  if (!record) return `no command of the flow "${flow.id}" is approved`;
  if (record.hash !== definitionsHash(flow))
    return `the flow's command definitions changed since they were approved on ${record.approvedAt}`;
  return `this command of the flow "${flow.id}" is not among those approved`;
}

/** Records the operator's approval of `uses` (default: all) of the flow as it is now. */
export function approveFlow(store: TrustStore, flow: Flow, uses?: CommandUse[]): void {
  const all = uses ?? commandsOf(flow);
  const approved: ApprovedUse[] = all.map((u) => ({
    kind: u.kind,
    name: u.name,
    commandLine: u.commandLine,
    display: u.display,
    fingerprint: u.fingerprint,
  }));
  store.approveUses(flow.id, definitionsHash(flow), approved);
}

/** Whether every command of the flow is approved for it as it is now. */
export function isFlowApproved(store: TrustStore, flow: Flow): boolean {
  return commandsOf(flow, store).every((u) => u.approved);
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
  if (u.kind === 'shell-builtin' && interpreterIn(u.commandLine))
    lines.push(
      `  warning: allows ${interpreterIn(u.commandLine)} with any arguments, which runs any code: whoever drives this flow's model (its author, a prompt injection) runs what they like as this user`,
    );
  return lines.join('\n');
}

/** Programs that run whatever code (or program) they are given: allowing one with any arguments allows everything. */
export const INTERPRETERS = new Set([
  'node',
  'nodejs',
  'deno',
  'bun',
  'python',
  'python3',
  'python2',
  'sh',
  'bash',
  'zsh',
  'dash',
  'ksh',
  'fish',
  'perl',
  'ruby',
  'php',
  'lua',
  'awk',
  'gawk',
  'env',
  'xargs',
  'npx',
  'npm',
  'pnpm',
  'yarn',
  'make',
  'find',
  'git',
]);

/** The first interpreter a shell built-in command line allows without fixed arguments, if any. */
function interpreterIn(cl: CommandLine): string | undefined {
  const opt = cl.args[0]?.startsWith('options=') ? cl.args[0].slice('options='.length) : '{}';
  let allow: unknown;
  try {
    allow = (JSON.parse(opt) as { allow?: unknown }).allow;
  } catch {
    return undefined;
  }
  if (!Array.isArray(allow)) return undefined;
  for (const a of allow) {
    if (typeof a !== 'string') continue;
    const words = a.trim().split(/\s+/);
    // With fixed leading arguments (`node --test`) the entry is narrower; alone it is anything.
    if (words.length === 1 && INTERPRETERS.has(words[0]!)) return a;
  }
  return undefined;
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
 * Makes sure every command the flow would spawn is approved for it: those named by `trustArgs`
 * are approved (and recorded), the rest are asked about on a terminal; otherwise the result says
 * which command lines are missing. `switchboard run` and `mcp` call this before starting.
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
    if (yes) approvedNow.push({ ...u, approved: true });
    else missing.push(u);
  }
  if (approvedNow.length) approveFlow(store, flow, [...uses.filter((u) => u.approved), ...approvedNow]);
  if (missing.length === 0) return { ok: true, approvedNow, missing };
  const message = [
    `The flow "${flow.id}" needs commands the local operator has not approved for it (${missingReason(flow, store)}):`,
    ...missing.map(describeUse),
    `Approve them with \`${trustCommand(options.flowFile, options.trustFile)}\` (add --yes in scripts), or name them with --trust ${missing
      .map((m) => m.name)
      .join(' --trust ')}.`,
  ].join('\n');
  return { ok: false, approvedNow, missing, message };
}

/**
 * For code that spawns a command a flow names (stdio MCP servers and the shell built-in in the
 * tool host, ACP agent backends in the engine): throws `ConsentRequiredError` — naming the flow,
 * the exact command line and the `switchboard trust` command that approves it — unless the
 * operator approved that command for this flow as it is now. Call it right before spawning,
 * every time: the trust file is read afresh.
 */
export function requireFlowConsent(
  flow: Flow,
  kind: CommandKind,
  name: string,
  options: { trust?: TrustStore; flowRef?: string } = {},
): CommandLine {
  const trust = options.trust ?? new TrustStore();
  const use = commandsOf(flow, trust).find((u) => u.kind === kind && u.name === name);
  if (!use)
    // Not one of the flow's commands (e.g. a server no tool node uses): nothing can approve it.
    throw new ConsentRequiredError(
      kind === 'acp-agent' ? `nodes.${name}` : `mcpServers.${name}`,
      `(${kind} ${name} is not a command this flow declares)`,
      '',
      flow.id,
      options.flowRef ?? flow.id,
      'it is not among the commands of the flow',
    );
  if (!use.approved)
    throw new ConsentRequiredError(
      use.where,
      use.display,
      use.fingerprint,
      flow.id,
      options.flowRef ?? flow.id,
      missingReason(flow, trust),
    );
  return use.commandLine;
}
