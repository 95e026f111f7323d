/**
 * Running an exported flow file from a host program the way `switchboard run` does: read and
 * validate the file, point its models elsewhere when asked, connect its MCP servers (a command
 * the operator has not approved is refused with the exact `switchboard trust` line to run), run
 * it to its end. The validator, the interpreter and MCP load on first use, as everywhere in the
 * library, so importing it stays cheap.
 */
import { readFile, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { Flow, ModelConfigT, Problem, ValidationResult } from '@switchboard/schemas';
import { type Dict, dict } from '@switchboard/schemas/core';
import type { RunOptions, RunResult } from './engine/types.js';

/** The largest flow file read (the validator's own document limit applies after that). */
const MAX_FLOW_BYTES = 16 * 1024 * 1024;
const REFUSED_NAMES = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * The one validator with the built-in node kinds: a flow document (object) or its JSON text.
 * The same verdicts and JSON paths as `switchboard validate`, the editor and the API.
 */
export async function validateFlow(doc: unknown): Promise<ValidationResult> {
  const { validate, validateText } = await import('@switchboard/nodes');
  return typeof doc === 'string' || doc instanceof Uint8Array ? validateText(doc) : validate(doc);
}

/** A flow file that cannot be read or is not a valid flow: every problem, one per line. */
export class FlowFileError extends Error {
  override readonly name = 'FlowFileError';
  constructor(
    readonly file: string,
    readonly problems: Problem[],
    message: string,
  ) {
    super(message);
  }
}

/** Reads and validates a flow file (as exported from the editor); throws FlowFileError. */
export async function loadFlow(file: string): Promise<Flow> {
  let size: number;
  try {
    size = (await stat(file)).size;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
    throw new FlowFileError(file, [], `${file}: cannot read it (${code})`);
  }
  if (size > MAX_FLOW_BYTES)
    throw new FlowFileError(file, [], `${file}: ${size} bytes is larger than the limit of ${MAX_FLOW_BYTES}`);
  const v = await validateFlow(await readFile(file, 'utf8'));
  if (!v.ok || !v.flow) {
    const { formatProblem } = await import('./cli/commands/validate.js');
    const lines = v.errors.map((p) => formatProblem(file, p, 'error'));
    throw new FlowFileError(file, v.errors, `${file} is not a valid flow:\n${lines.join('\n')}`);
  }
  return v.flow;
}

/** Fields of one model entry to replace; see `overrideModels`. */
export type ModelOverride = Partial<ModelConfigT>;

/**
 * The flow with some model entries changed, by the flow's model names. A `baseURL` without a
 * `provider` makes the entry an `openai` one (any OpenAI-compatible endpoint); a `provider` of
 * `scripted` with a `script` forces canned replies. Fields not named stay as the flow has them.
 */
export function overrideModels(flow: Flow, overrides: Readonly<Record<string, ModelOverride>>): Flow {
  const models: Dict<ModelConfigT> = dict(flow.models);
  for (const [name, o] of Object.entries(overrides)) {
    if (REFUSED_NAMES.has(name) || !Object.hasOwn(flow.models, name))
      throw new Error(
        `modelOverrides.${name}: the flow has no model "${name}" (it has: ${Object.keys(flow.models).join(', ')})`,
      );
    const next: ModelConfigT = { ...flow.models[name]!, ...o };
    if (o.baseURL !== undefined && o.provider === undefined) next.provider = 'openai';
    if (next.provider !== 'scripted') {
      delete next.script;
      delete next.scriptFile;
    }
    models[name] = next;
  }
  return { ...flow, models };
}

/** A flow needs commands (stdio MCP servers, agent commands, the shell) nobody approved. */
export class ConsentNeededError extends Error {
  override readonly name = 'ConsentNeededError';
  constructor(
    message: string,
    /** The unapproved command lines, in full. */
    readonly commandLines: string[],
  ) {
    super(message);
  }
}

export interface RunFileOptions extends Omit<RunOptions, 'baseDir'> {
  /** Model entries to change before the run, by the flow's model names (see `overrideModels`). */
  modelOverrides?: Record<string, ModelOverride>;
  /** Approve these commands for this flow, as `switchboard run --trust NAME` does. */
  trust?: string[];
  /** The trust file (default `$SWITCHBOARD_HOME/trust.json`, else `~/.switchboard/trust.json`). */
  trustFile?: string;
}

/**
 * Runs a flow file to its end and resolves with the result (it never rejects for a run that
 * failed: see `status` and `error`). Relative paths in the flow resolve against its folder.
 * Tools: the flow's MCP servers, unless `tools` is given. Human nodes take `answers`; without
 * one a run fails with `human_input_required` (set `humanInput: 'wait'` only with a way to
 * answer, i.e. use `runFlow` and its handle). Pooled MCP servers keep running for later runs:
 * call `shutdownMcpServers()` when done.
 */
export async function runFlowFile(
  file: string,
  input: unknown,
  options: RunFileOptions = {},
): Promise<RunResult> {
  const { modelOverrides, trust, trustFile, ...rest } = options;
  let flow = await loadFlow(file);
  if (modelOverrides) flow = overrideModels(flow, modelOverrides);
  const baseDir = dirname(resolve(file));
  const run: RunOptions = { humanInput: 'fail', ...rest, baseDir };
  // An endpoint the host names is its operator's choice, loopback included (as `run --model`).
  if (
    run.allowLocalModels === undefined &&
    Object.values(modelOverrides ?? {}).some((o) => o.baseURL !== undefined)
  )
    run.allowLocalModels = true;
  const usesCommands =
    flow.nodes.some((n) => n.kind === 'tool') || flow.nodes.some((n) => n.config.backend !== undefined);
  if (usesCommands && run.tools === undefined) {
    const { ensureConsent } = await import('./mcp/consent.js');
    const { TrustStore } = await import('./mcp/trust.js');
    const store = new TrustStore(trustFile ? resolve(trustFile) : undefined);
    const consent = await ensureConsent(flow, {
      interactive: false,
      trustArgs: trust ?? [],
      store,
      flowFile: file,
      ...(trustFile ? { trustFile } : {}),
    });
    if (!consent.ok)
      throw new ConsentNeededError(
        consent.message ?? `${file}: the flow needs commands nobody approved`,
        consent.missing.map((m) => m.display),
      );
    const { createMcpToolHost } = await import('./tools/mcp-host.js');
    run.tools = createMcpToolHost(flow, { baseDir, flowRef: file, trust: store });
  }
  const { runFlow } = await import('./engine/index.js');
  return runFlow(flow, input, run).result;
}

/** Stops the MCP servers runs started (they are pooled per process). */
export async function shutdownMcpServers(): Promise<void> {
  const { shutdownMcpPool } = await import('./mcp/pool.js');
  await shutdownMcpPool();
}
