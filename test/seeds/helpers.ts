/**
 * Shared harness for the seed-flow tests: load a flow from flows/, run it headless with the real
 * MCP tool host (built-in servers, a temp trust file, a temp data directory), record every model
 * request, validate every event against event.schema.json, and turn the flow's scripted replies
 * into canned replies of the fake OpenAI-compatible server so the same run can go through the
 * `openai` provider.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Flow, RunEvent } from '@switchboard/schemas';
import { resolveModelRequests } from '@switchboard/schemas/core';
import { afterAll, expect } from 'vitest';
import {
  assertEventsValid,
  assertSeqContiguous,
  type RecordedRequest,
  recordingModels,
} from '../../runtime/src/engine/testing/index.js';
import type { RunHandle, RunOptions, RunResult } from '../../runtime/src/index.js';
import { runFlow } from '../../runtime/src/index.js';
import { TrustStore } from '../../runtime/src/mcp/trust.js';
import { toOpenAIMessages } from '../../runtime/src/models/openai.js';
import type { ScriptEntry } from '../../runtime/src/models/scripted.js';
import {
  type CannedReply,
  type FakeOpenAIServer,
  type FakeReply,
  type FakeServerOptions,
  startFakeOpenAIServer,
} from '../../runtime/src/models/testing/fake-openai-server.js';
import { createMcpToolHost } from '../../runtime/src/tools/mcp-host.js';

export const FLOWS_DIR = fileURLToPath(new URL('../../flows/', import.meta.url));

export function loadFlow(name: string): Flow {
  return JSON.parse(readFileSync(join(FLOWS_DIR, `${name}.json`), 'utf8')) as Flow;
}

/** A temp folder for one test file; `cleanup` in afterAll. */
export function tempRoot(prefix: string): { dir: string; sub(name: string): string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), `sb-seed-${prefix}-`));
  return {
    dir,
    sub: (name) => mkdtempSync(join(dir, `${name}-`)),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * What every seed test file starts with: its flow from flows/ and a temp folder that is removed
 * after the file's tests. Call at the top level of the test file (it registers an afterAll).
 */
export function seedSuite(name: string, prefix = name): { flow: Flow; root: ReturnType<typeof tempRoot> } {
  const flow = loadFlow(name);
  const root = tempRoot(prefix);
  afterAll(() => root.cleanup());
  return { flow, root };
}

export interface SeedRun {
  events: RunEvent[];
  result: RunResult;
  requests: RecordedRequest[];
  dataDir: string;
}

export interface SeedRunOptions {
  dataDir: string;
  /** Defaults to an empty trust file in the data directory: nothing external is approved. */
  trust?: TrustStore;
  answers?: RunOptions['answers'];
  /** Sees every event as it happens, with the handle to send commands. */
  onEvent?: (e: RunEvent, handle: RunHandle) => void;
  /** For flows whose models point at a loopback server (the fake OpenAI server). */
  allowLocalModels?: boolean;
}

/** Runs a flow to its end and checks the envelope of every event. */
export async function runSeed(flow: Flow, input: unknown, o: SeedRunOptions): Promise<SeedRun> {
  const { factory, requests } = recordingModels();
  const events: RunEvent[] = [];
  const trust = o.trust ?? new TrustStore(join(o.dataDir, 'trust.json'));
  let handle: RunHandle | undefined;
  const options: RunOptions = {
    models: factory,
    tools: createMcpToolHost(flow, { trust, baseDir: FLOWS_DIR }),
    dataDir: o.dataDir,
    humanInput: 'fail',
    onEvent: (e) => {
      events.push(e);
      if (o.onEvent && handle) o.onEvent(e, handle);
    },
  };
  if (o.answers) options.answers = o.answers;
  if (o.allowLocalModels) options.allowLocalModels = true;
  handle = runFlow(flow, input, options);
  const result = await handle.result;
  assertEventsValid(events);
  assertSeqContiguous(events);
  return { events, result, requests, dataDir: o.dataDir };
}

// ---------------------------------------------------------------------------------------------
// Event helpers

export type Ev = RunEvent & Record<string, unknown>;

export function ofType(events: readonly RunEvent[], type: string, nodeId?: string): Ev[] {
  return events.filter((e) => e.type === type && (nodeId === undefined || e.nodeId === nodeId)) as Ev[];
}

/** Authors of committed messages, in order (top-level run only unless `all`). */
export function speakers(events: readonly RunEvent[], all = false): string[] {
  return ofType(events, 'message')
    .filter((e) => e.nodeId !== undefined && (all || e.parentRunId === undefined))
    .map((e) => e.nodeId!);
}

export function handovers(events: readonly RunEvent[]): string[] {
  return ofType(events, 'handover').map((e) => String(e.edgeId));
}

export function indexOf(events: readonly RunEvent[], type: string, nodeId: string, from = 0): number {
  for (let i = from; i < events.length; i++)
    if (events[i]!.type === type && events[i]!.nodeId === nodeId) return i;
  return -1;
}

// ---------------------------------------------------------------------------------------------
// The same flow against the fake OpenAI-compatible server

/** A copy of the flow whose every model goes through the `openai` provider to `baseURL`. */
export function openaiFlow(flow: Flow, baseURL: string): Flow {
  const copy = structuredClone(flow);
  for (const name of Object.keys(copy.models))
    copy.models[name] = { provider: 'openai', model: `fake-${name}`, baseURL };
  return copy;
}

/** Runs `body` against a fake OpenAI-compatible server, closing the server whatever happens. */
export async function withFakeOpenAI(
  options: FakeServerOptions,
  body: (fake: FakeOpenAIServer) => Promise<void>,
): Promise<void> {
  const fake = await startFakeOpenAIServer(options);
  try {
    await body(fake);
  } finally {
    await fake.close();
  }
}

/** Up to the first template tag of a prompt: a fixed piece of text that identifies its node. */
function fixedPart(text: string): string {
  const i = text.indexOf('{{');
  return (i < 0 ? text : text.slice(0, i)).trim().slice(0, 80);
}

/** A substring of the system prompt that only the given node's model calls carry. */
export function systemMarker(flow: Flow, nodeId: string): string {
  const n = flow.nodes.find((x) => x.id === nodeId);
  if (!n) throw new Error(`no node ${nodeId}`);
  const c = n.config as Record<string, unknown>;
  let text: string | undefined;
  if (n.kind === 'agent') text = (c.prompt as Array<{ text: string }>)[0]?.text;
  else if (n.kind === 'team') text = (c.speaker as { prompt?: string } | undefined)?.prompt;
  else text = c.prompt as string | undefined;
  const marker = text ? fixedPart(text) : '';
  if (marker.length < 12) throw new Error(`node ${nodeId} has no distinctive prompt to match on`);
  return marker;
}

function toFake(e: ScriptEntry): FakeReply {
  const r: FakeReply = {};
  const text = e.json !== undefined ? JSON.stringify(e.json) : e.text;
  if (text !== undefined) r.text = text;
  if (e.toolCalls)
    r.toolCalls = e.toolCalls.map((t) => ({
      name: t.name,
      arguments: t.arguments ?? ((t.args ?? {}) as Record<string, unknown>),
    }));
  return r;
}

/**
 * Canned replies equivalent to the flow's scripts: per node, its entries in order (its fallback
 * repeating last), matched on the node's system prompt. `extra` replies are tried first.
 */
export function cannedReplies(
  flow: Flow,
  extra: CannedReply[] = [],
): { replies: CannedReply[]; fallback?: FakeReply } {
  const perNode = new Map<string, FakeReply[]>();
  const fallbacks = new Map<string, FakeReply>();
  let fallback: FakeReply | undefined;
  for (const m of Object.values(flow.models)) {
    const script = (m as { script?: unknown[] }).script ?? [];
    for (const raw of script) {
      const e: ScriptEntry = typeof raw === 'string' ? { text: raw } : (raw as ScriptEntry);
      if (e.error) throw new Error('scripted errors have no canned equivalent');
      if (e.node === undefined) {
        if (!e.fallback) throw new Error('script entries without a node have no canned equivalent');
        fallback = toFake(e);
        continue;
      }
      if (e.fallback) fallbacks.set(e.node, toFake(e));
      else {
        const l = perNode.get(e.node) ?? [];
        const times = typeof e.repeat === 'number' ? e.repeat : 1;
        for (let i = 0; i < times; i++) l.push(toFake(e));
        perNode.set(e.node, l);
      }
    }
  }
  const replies: CannedReply[] = [...extra];
  for (const id of new Set([...perNode.keys(), ...fallbacks.keys()])) {
    const list = [...(perNode.get(id) ?? [])];
    const fb = fallbacks.get(id) ?? fallback;
    if (fb) list.push(fb);
    replies.push({ when: { system: systemMarker(flow, id) }, reply: list });
  }
  return fallback ? { replies, fallback } : { replies };
}

/**
 * Every `model.request` of the runs (one log each), resolved from the log and put in the wire format, equals a
 * request the fake server received (byte for byte as JSON), one for one. Both sides are sorted:
 * parallel branches may reach the server in another order than they were recorded.
 */
export function expectRequestsMatch(logs: ReadonlyArray<readonly RunEvent[]>, fake: FakeOpenAIServer): void {
  const resolved = logs.flatMap((events) => resolveModelRequests(events));
  expect(resolved.length).toBeGreaterThan(0);
  expect(resolved.filter((r) => r.messages.some((m) => m.missing))).toEqual([]);
  const recorded = resolved
    .map((r) => JSON.stringify(toOpenAIMessages(r.messages as Parameters<typeof toOpenAIMessages>[0])))
    .sort();
  const received = fake.requests
    .filter((r) => r.served === 'reply' && r.body?.messages)
    .map((r) => JSON.stringify(r.body!.messages))
    .sort();
  expect(recorded).toEqual(received);
}
