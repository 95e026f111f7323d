/**
 * The exact command line an operator approves: command, args, env (keys and the values as
 * written in the flow — `${env:…}` references, never resolved secrets) and cwd. Its fingerprint
 * is what the trust file records, so any change to any part needs a new approval.
 */
import { createHash } from 'node:crypto';
import { dict } from '@switchboard/schemas/core';
import { CODE_LOADING_ENV } from './env.js';

export interface CommandLine {
  command: string;
  args: string[];
  /** As written in the flow: literal values or `${env:NAME}` references. */
  env: Record<string, string>;
  cwd?: string;
}

export function commandLineOf(cfg: {
  command: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
}): CommandLine {
  const env = dict<string>();
  for (const k of Object.keys(cfg.env ?? {}).sort()) env[k] = cfg.env![k]!;
  return { command: cfg.command, args: [...(cfg.args ?? [])], env, ...(cfg.cwd ? { cwd: cfg.cwd } : {}) };
}

/** sha256 over a canonical JSON form; the first 16 hex digits are shown to people. */
export function fingerprintOf(cl: CommandLine): string {
  const canonical = JSON.stringify([cl.command, cl.args, Object.entries(cl.env).sort(), cl.cwd ?? null]);
  return createHash('sha256').update(canonical).digest('hex');
}

/** Quotes one word for display so that spaces, quotes and control characters are visible. */
export function quoteWord(s: string): string {
  if (/^[A-Za-z0-9_./:=@%+,-]+$/.test(s)) return s;
  let out = '';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    // Control characters are shown as \xNN so that nothing hides in the displayed line.
    out += c < 0x20 || c === 0x7f ? `\\x${c.toString(16).padStart(2, '0')}` : ch === "'" ? `'\\''` : ch;
  }
  return `'${out}'`;
}

/** The command line in full, as an operator reads it: `[cwd=DIR] [KEY=VALUE …] command args…`. */
export function formatCommandLine(cl: CommandLine): string {
  const parts: string[] = [];
  if (cl.cwd) parts.push(`cwd=${quoteWord(cl.cwd)}`);
  for (const [k, v] of Object.entries(cl.env)) parts.push(`${quoteWord(k)}=${quoteWord(v)}`);
  parts.push(quoteWord(cl.command), ...cl.args.map(quoteWord));
  return parts.join(' ');
}

/** Env keys of a command line that make an interpreter load extra code. */
export function riskyEnvKeys(cl: CommandLine): string[] {
  return Object.keys(cl.env).filter((k) => CODE_LOADING_ENV.has(k.toUpperCase()));
}
