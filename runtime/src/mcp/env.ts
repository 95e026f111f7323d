/**
 * `${env:NAME}` references and the minimal environment of spawned processes. A flow never holds
 * a secret: it names a variable, and the value is looked up only when a server starts.
 */

import { dict, ownValue } from '@switchboard/schemas/core';
import { McpHostError } from './errors.js';

const REF = /\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** Replaces every `${env:NAME}` in `value`; a missing variable is an error naming it and where. */
export function resolveEnvRefs(
  value: string,
  env: Record<string, string | undefined>,
  where: string,
): string {
  return value.replace(REF, (_m, name: string) => {
    // Own variables only: `${env:constructor}` must not find Object.prototype's.
    const v = ownValue(env, name);
    if (v === undefined)
      throw new McpHostError('mcp.env-missing', `${where}: the environment variable ${name} is not set`);
    return v;
  });
}

/** The names referenced by `${env:…}` in a string. */
export function envRefsIn(value: string): string[] {
  return [...value.matchAll(REF)].map((m) => m[1]!);
}

/**
 * Variables a spawned process gets from our own environment: enough to find programs and a home,
 * nothing that could hold a key. (The SDK's stdio transport adds the same short list itself.)
 */
export const INHERITED_ENV = ['PATH', 'HOME', 'USER', 'LOGNAME', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR', 'TERM'];

export function minimalEnv(source: Record<string, string | undefined> = process.env): Record<string, string> {
  const out = dict<string>();
  for (const k of INHERITED_ENV) {
    const v = source[k];
    // A value starting with "()" is a shell function export, never needed by a tool server.
    if (v !== undefined && !v.startsWith('()')) out[k] = v;
  }
  return out;
}

/** Environment keys that change how an interpreter loads code; shown with a warning on approval. */
export const CODE_LOADING_ENV = new Set([
  'NODE_OPTIONS',
  'NODE_PATH',
  'LD_PRELOAD',
  'LD_LIBRARY_PATH',
  'DYLD_INSERT_LIBRARIES',
  'PYTHONPATH',
  'PYTHONSTARTUP',
  'PERL5OPT',
  'RUBYOPT',
  'BASH_ENV',
  'ENV',
  'PROMPT_COMMAND',
]);
