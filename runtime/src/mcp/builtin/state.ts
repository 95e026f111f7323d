/**
 * The `state` built-in: read and write top-level keys of the run's JSON state, so agents can
 * leave structured notes for each other and for rule deciders (`{{state.x}}`, conditions).
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { dict } from '@switchboard/schemas/core';
import { z } from 'zod';
import { McpHostError } from '../errors.js';
import { type BuiltinContext, json, SERVER_VERSION, text } from './context.js';

const FORBIDDEN = new Set(['__proto__', 'constructor', 'prototype']);
const key = z.string().min(1).max(200).describe('A top-level key of the run state.');

/** A state held in memory, for `switchboard mcp-builtin state` where there is no run. */
export function memoryState(initial: Record<string, unknown> = {}): NonNullable<BuiltinContext['state']> {
  const s = dict(initial);
  return {
    get: (k) => (Object.hasOwn(s, k) ? s[k] : undefined),
    set: (k, v) => {
      s[k] = v;
    },
    snapshot: () => structuredClone(s),
  };
}

export function createStateServer(ctx: BuiltinContext): McpServer {
  const state = ctx.state;
  if (!state) throw new McpHostError('mcp.bad-config', 'the state built-in needs the run state');
  const readOnly = Array.isArray(ctx.options.readOnlyKeys)
    ? new Set(ctx.options.readOnlyKeys.filter((k): k is string => typeof k === 'string'))
    : new Set<string>();
  const server = new McpServer({ name: 'switchboard-state', version: SERVER_VERSION });
  const check = (k: string) => {
    if (FORBIDDEN.has(k)) throw new Error(`key ${k} is not allowed`);
  };
  server.registerTool(
    'state_get',
    { description: "Read one key of the run's JSON state (null when unset).", inputSchema: { key } },
    async ({ key: k }) => {
      check(k);
      return json(state.get(k) ?? null);
    },
  );
  server.registerTool(
    'state_set',
    {
      description: "Set one key of the run's JSON state to a JSON value (null removes it).",
      inputSchema: { key, value: z.unknown() },
    },
    async ({ key: k, value }) => {
      check(k);
      if (readOnly.has(k)) throw new Error(`key ${k} is read-only for tools`);
      const v = JSON.parse(JSON.stringify(value ?? null)) as unknown;
      if (JSON.stringify(v).length > 256 * 1024) throw new Error('value larger than 256 KiB');
      state.set(k, v === null ? undefined : v);
      return text(`state.${k} set`);
    },
  );
  server.registerTool(
    'state_keys',
    { description: "List the keys of the run's JSON state.", inputSchema: {} },
    async () => json(Object.keys(state.snapshot()).sort()),
  );
  return server;
}
