/**
 * The operator's secrets policy (issue 13, hole 3): which environment variables a flow may name
 * as `${env:NAME}` where a value leaves the process (a model's `apiKey`, an MCP server's `url` and
 * `headers`), and to which hosts each may be sent. A flow chooses neither the secret nor where it
 * goes: a reference to a variable the operator did not allow, or to an allowed one with a
 * destination it is not bound to, is refused before any request, naming the variable and the
 * host. The values of every allowed variable (and the server token) are also handed to the
 * outbound module, which refuses any request carrying one to another host, and to `redact`, which
 * takes them out of whatever a remote side echoes back.
 *
 * Sources, later ones adding to earlier ones: the defaults below (unless a config says
 * `"defaults": false`), `DATA_DIR/secrets.json`, `--secrets-config FILE`, `--allow-secret
 * NAME=HOST[,HOST]`. A config file is `{ "defaults": true, "secrets": { "NAME": ["host", …] } }`;
 * a host is `name`, `*.suffix` or either with `:port`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { dict } from '@switchboard/schemas/core';
import { type BoundSecret, hostMatchesBinding, MIN_SECRET_LENGTH } from './secret-scan.js';

/** Each well-known key goes to its vendor's API host and nowhere else. */
export const DEFAULT_SECRET_BINDINGS: ReadonlyArray<readonly [string, readonly string[]]> = [
  ['OPENAI_API_KEY', ['api.openai.com']],
  ['ANTHROPIC_API_KEY', ['api.anthropic.com']],
  ['OPENROUTER_API_KEY', ['openrouter.ai']],
  ['GROQ_API_KEY', ['api.groq.com']],
  ['MISTRAL_API_KEY', ['api.mistral.ai']],
  ['GEMINI_API_KEY', ['generativelanguage.googleapis.com']],
];

/** Variables no flow may ever send anywhere, whatever a config says. */
export const NEVER_SENT: ReadonlySet<string> = new Set(['SWITCHBOARD_TOKEN']);

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const HOST = /^(\*\.)?[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

export class SecretsConfigError extends Error {
  override readonly name = 'SecretsConfigError';
}

/** A reference refused by the policy: names the variable and the host, never a value. */
export class SecretRefusedError extends Error {
  override readonly name = 'SecretRefusedError';
  readonly code = 'secret_refused';
  constructor(
    readonly variable: string,
    readonly host: string,
    message: string,
  ) {
    super(message);
  }
}

export class SecretsPolicy {
  private readonly bindings: ReadonlyMap<string, readonly string[]>;
  constructor(bindings: Iterable<readonly [string, readonly string[]]> = DEFAULT_SECRET_BINDINGS) {
    const m = new Map<string, string[]>();
    for (const [name, hosts] of bindings) {
      if (NEVER_SENT.has(name)) continue;
      m.set(name, [...(m.get(name) ?? []), ...hosts]);
    }
    this.bindings = m;
  }

  /** A policy with more bindings (e.g. the endpoint named by `switchboard run --model`). */
  with(name: string, hosts: readonly string[]): SecretsPolicy {
    return new SecretsPolicy([...this.bindings, [name, hosts]]);
  }

  /** The hosts a variable may be sent to; undefined when flows may not use it at all. */
  hostsFor(name: string): readonly string[] | undefined {
    return this.bindings.get(name);
  }

  entries(): Array<[string, readonly string[]]> {
    return [...this.bindings];
  }

  /**
   * Throws a SecretRefusedError unless `name` may be sent to the host of `url`. `where` says
   * which field of the flow holds the reference (`models.default.apiKey`).
   */
  check(name: string, url: string, where: string): void {
    let host = '';
    let port = '';
    try {
      const u = new URL(url);
      host = u.hostname;
      port = u.port || (u.protocol === 'https:' ? '443' : '80');
    } catch {
      throw new SecretRefusedError(
        name,
        '',
        `${where}: refers to ${name}, but its destination is not a valid URL`,
      );
    }
    const hosts = NEVER_SENT.has(name) ? undefined : this.bindings.get(name);
    const shown = port === '80' || port === '443' ? host : `${host}:${port}`;
    if (!hosts)
      throw new SecretRefusedError(
        name,
        shown,
        `${where}: the operator does not let flows use the environment variable ${name} (it would go to ${shown}); ` +
          (NEVER_SENT.has(name)
            ? `${name} is never sent anywhere`
            : `allow it with --allow-secret ${name}=${shown} or in secrets.json`),
      );
    if (!hostMatchesBinding(host, port, hosts))
      throw new SecretRefusedError(
        name,
        shown,
        `${where}: the environment variable ${name} may not be sent to ${shown}; the operator binds it to ${hosts.join(', ')}` +
          ` (add the host with --allow-secret ${name}=${shown} or in secrets.json)`,
      );
  }

  /**
   * The values of every allowed variable that is set (and of the never-sent ones), with where each
   * may go: for the outbound module's last check and for redaction.
   */
  boundSecrets(
    env: Record<string, string | undefined> | ((name: string) => string | undefined),
  ): BoundSecret[] {
    const lookup = typeof env === 'function' ? env : (n: string) => env[n];
    const out: BoundSecret[] = [];
    for (const [name, hosts] of this.bindings) {
      const value = lookup(name);
      if (value) out.push({ name, value, hosts });
    }
    for (const name of NEVER_SENT) {
      const value = lookup(name);
      if (value) out.push({ name, value, hosts: [] });
    }
    return out;
  }
}

/** Replaces every secret value in `text` by `[secret NAME]`. */
export function redact(text: string, secrets: readonly BoundSecret[]): string {
  let out = text;
  for (const s of secrets)
    if (s.value.length >= MIN_SECRET_LENGTH && out.includes(s.value))
      out = out.split(s.value).join(`[secret ${s.name}]`);
  return out;
}

/** `redact` through a JSON value: every string in it, keys untouched. */
export function redactDeep<T>(value: T, secrets: readonly BoundSecret[]): T {
  if (secrets.length === 0) return value;
  if (typeof value === 'string') return redact(value, secrets) as T;
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, secrets)) as T;
  if (value && typeof value === 'object') {
    const out = dict<unknown>();
    for (const [k, v] of Object.entries(value)) out[k] = redactDeep(v, secrets);
    return Object.setPrototypeOf(out, Object.prototype) as T;
  }
  return value;
}

function parseBindingsObject(v: unknown, where: string): Array<[string, string[]]> {
  if (!v || typeof v !== 'object' || Array.isArray(v))
    throw new SecretsConfigError(`${where}: expected an object { "NAME": ["host", …] }`);
  return Object.entries(v).map(([name, hosts]) => {
    if (!NAME.test(name)) throw new SecretsConfigError(`${where}/${name}: not an environment variable name`);
    if (NEVER_SENT.has(name))
      throw new SecretsConfigError(`${where}/${name}: ${name} is never sent to any host`);
    const list = typeof hosts === 'string' ? [hosts] : hosts;
    if (!Array.isArray(list) || list.length === 0)
      throw new SecretsConfigError(`${where}/${name}: expected a list of hosts`);
    list.forEach((h, i) => {
      if (typeof h !== 'string' || !HOST.test(h.trim()))
        throw new SecretsConfigError(
          `${where}/${name}/${i}: ${JSON.stringify(h)} is not a host (name, *.suffix, with an optional :port)`,
        );
    });
    return [name, list.map((h: string) => h.trim())];
  });
}

/** Reads a secrets config file: `{ "defaults"?: boolean, "secrets": { NAME: [hosts] } }`. */
export function readSecretsConfig(file: string): { defaults: boolean; bindings: Array<[string, string[]]> } {
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new SecretsConfigError(
      `${file}: cannot read the secrets config (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
    );
  }
  const d = data as Record<string, unknown> | null;
  if (!d || typeof d !== 'object' || Array.isArray(d))
    throw new SecretsConfigError(`${file}: expected a JSON object`);
  for (const k of Object.keys(d))
    if (k !== 'defaults' && k !== 'secrets' && k !== '$comment')
      throw new SecretsConfigError(`${file}: /${k} is not a setting (defaults, secrets)`);
  if (d.defaults !== undefined && typeof d.defaults !== 'boolean')
    throw new SecretsConfigError(`${file}: /defaults must be true or false`);
  return {
    defaults: d.defaults !== false,
    bindings: d.secrets === undefined ? [] : parseBindingsObject(d.secrets, `${file}: /secrets`),
  };
}

/** Parses `--allow-secret NAME=HOST[,HOST]`. */
export function parseAllowSecret(flag: string): [string, string[]] {
  const i = flag.indexOf('=');
  const name = i > 0 ? flag.slice(0, i) : '';
  const hosts =
    i > 0
      ? flag
          .slice(i + 1)
          .split(',')
          .map((h) => h.trim())
          .filter(Boolean)
      : [];
  if (!NAME.test(name) || hosts.length === 0 || !hosts.every((h) => HOST.test(h)))
    throw new SecretsConfigError(
      `--allow-secret ${flag}: expected NAME=HOST[,HOST], e.g. OPENAI_API_KEY=api.openai.com or LOCAL_KEY=127.0.0.1:11434`,
    );
  if (NEVER_SENT.has(name))
    throw new SecretsConfigError(`--allow-secret ${flag}: ${name} is never sent to any host`);
  return [name, hosts];
}

export interface SecretsPolicySources {
  /** A server's data directory: `secrets.json` there is read when it exists. */
  dataDir?: string;
  /** `--secrets-config FILE` (must exist). */
  configFile?: string;
  /** `--allow-secret NAME=HOST[,HOST]` values. */
  allow?: readonly string[];
}

/** The operator's policy from its sources; a bad source throws a SecretsConfigError naming it. */
export function loadSecretsPolicy(o: SecretsPolicySources = {}): SecretsPolicy {
  const files: string[] = [];
  if (o.dataDir && existsSync(join(o.dataDir, 'secrets.json'))) files.push(join(o.dataDir, 'secrets.json'));
  if (o.configFile) files.push(o.configFile);
  let defaults = true;
  const bindings: Array<readonly [string, readonly string[]]> = [];
  for (const f of files) {
    const c = readSecretsConfig(f);
    if (!c.defaults) defaults = false;
    bindings.push(...c.bindings);
  }
  for (const flag of o.allow ?? []) bindings.push(parseAllowSecret(flag));
  return new SecretsPolicy([...(defaults ? DEFAULT_SECRET_BINDINGS : []), ...bindings]);
}
