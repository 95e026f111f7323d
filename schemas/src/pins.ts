/**
 * Pins: a node's output taken from a past run, used by later runs instead of calling the node.
 * Pins live beside a flow, never inside it (`FLOW.pins.json` for the CLI, the data directory for
 * the server), so that pinning while debugging never edits the shared document.
 *
 * A pin is a snapshot, not a reference: it holds what the node's turn produced (its message, the
 * route it chose, its mic grant, an end node's output), so it still works once the run it came
 * from is deleted, and a pins file can be committed beside its flow for CI. `configHash` is the
 * hash of the node's config in the run it came from: a node whose config has changed since shows
 * its pin as stale (see `pinIsStale`).
 *
 * Browser-safe and dependency-free: the editor, the server and the CLI read pins with this one
 * checker, which names the JSON path of the first problem.
 */
import { isReservedName } from './names.js';

export const PINS_FORMAT = 'switchboard-pins';
export const PINS_VERSION = 1;
/** A pins file (or a PUT body's worth of pins) larger than this is refused before parsing. */
export const MAX_PINS_BYTES = 2 * 1024 * 1024;
export const MAX_PINS = 200;
/** Kinds whose output can be pinned: the ones that decide what a turn says or where it goes. */
export const PINNABLE_KINDS: ReadonlySet<string> = new Set(['agent', 'decider']);

/** What a node's turn produced, as the engine commits it. */
export interface PinnedOutcome {
  /** The message the turn appended to the transcript (its final reply); `json` for JSON output. */
  message?: { content: string; json?: unknown };
  /** Where control went: the edges the node chose (handover tool, decider), or `done`. */
  route?: { edges: string[]; reason?: string } | { done: true; reason?: string };
  /** The node a decider gave the mic to. */
  grantMic?: string;
}

export interface Pin {
  nodeId: string;
  /** The node's kind in the run the pin came from. */
  kind: string;
  /** The run the output came from. */
  fromRun: string;
  /** The node's turn in that run, from 1 (its first turn there is 1). */
  fromTurn: number;
  /** Hash of the node's config in that run (`configHash`). */
  configHash: string;
  /** ISO time the pin was made. */
  pinnedAt: string;
  /** Tool calls the recorded turn made; a pinned node makes none (they are not repeated). */
  toolCalls?: number;
  outcome: PinnedOutcome;
}

export interface PinsDocument {
  format: typeof PINS_FORMAT;
  version: typeof PINS_VERSION;
  pins: Pin[];
}

export interface PinsProblem {
  path: string;
  message: string;
}

function stable(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (Array.isArray(v)) return `[${v.map(stable).join(',')}]`;
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${stable(o[k])}`).join(',')}}`;
}

/**
 * A change detector for a node's config (key order does not matter): two FNV-1a lanes over its
 * canonical JSON. Not a security hash: it only says whether the node was edited since.
 */
export function configHash(config: unknown): string {
  const s = stable(config ?? {});
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995) ^ (b >>> 15);
  }
  return `fnv/${(a >>> 0).toString(16).padStart(8, '0')}${(b >>> 0).toString(16).padStart(8, '0')}`;
}

/** A pin is stale when its node's config is no longer the one the pinned output came from. */
export function pinIsStale(pin: Pin, currentConfig: unknown): boolean {
  return pin.configHash !== configHash(currentConfig);
}

export function emptyPins(): PinsDocument {
  return { format: PINS_FORMAT, version: PINS_VERSION, pins: [] };
}

const isObj = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

const ID_MAX = 200;
const okId = (v: unknown): v is string =>
  typeof v === 'string' && v.length > 0 && v.length <= ID_MAX && !isReservedName(v);

/** One pin's problem, or undefined; `at` is its JSON path. */
export function checkPin(v: unknown, at: string): PinsProblem | undefined {
  const bad = (path: string, message: string) => ({ path: `${at}${path}`, message });
  if (!isObj(v))
    return bad('', 'a pin is an object { nodeId, kind, fromRun, fromTurn, configHash, outcome }');
  if (!okId(v.nodeId)) return bad('/nodeId', 'expected a node id (1–200 characters, not a reserved name)');
  if (typeof v.kind !== 'string' || !PINNABLE_KINDS.has(v.kind))
    return bad('/kind', `expected one of ${[...PINNABLE_KINDS].join(', ')}`);
  if (!okId(v.fromRun)) return bad('/fromRun', 'expected a run id');
  if (!Number.isInteger(v.fromTurn) || (v.fromTurn as number) < 1)
    return bad('/fromTurn', 'expected a whole number from 1');
  if (typeof v.configHash !== 'string' || v.configHash.length > 100)
    return bad('/configHash', 'expected a string');
  if (v.pinnedAt !== undefined && typeof v.pinnedAt !== 'string')
    return bad('/pinnedAt', 'expected a string');
  if (v.toolCalls !== undefined && (!Number.isInteger(v.toolCalls) || (v.toolCalls as number) < 0))
    return bad('/toolCalls', 'expected a whole number');
  const o = v.outcome;
  if (!isObj(o)) return bad('/outcome', 'expected an object { message?, route?, grantMic? }');
  for (const k of Object.keys(o))
    if (k !== 'message' && k !== 'route' && k !== 'grantMic')
      return bad(`/outcome/${k}`, 'unknown field (expected message, route or grantMic)');
  if (o.message !== undefined) {
    const m = o.message;
    if (!isObj(m) || typeof m.content !== 'string')
      return bad('/outcome/message', 'expected { content: string, json? }');
  }
  if (o.route !== undefined) {
    const r = o.route;
    if (!isObj(r)) return bad('/outcome/route', 'expected { edges: [...] } or { done: true }');
    if (r.reason !== undefined && typeof r.reason !== 'string')
      return bad('/outcome/route/reason', 'expected a string');
    if ('done' in r) {
      if (r.done !== true) return bad('/outcome/route/done', 'expected true');
    } else {
      if (!Array.isArray(r.edges) || r.edges.length === 0)
        return bad('/outcome/route/edges', 'expected a non-empty list of edge ids');
      for (let i = 0; i < r.edges.length; i++)
        if (!okId(r.edges[i])) return bad(`/outcome/route/edges/${i}`, 'expected an edge id');
    }
  }
  if (o.grantMic !== undefined && !okId(o.grantMic)) return bad('/outcome/grantMic', 'expected a node id');
  if (o.message === undefined && o.route === undefined)
    return bad('/outcome', 'a pin needs a message or a route: the turn it came from produced neither');
  return undefined;
}

/** Checks a parsed pins document; the problem names the JSON path. */
export function checkPinsDocument(
  v: unknown,
): { ok: true; doc: PinsDocument } | { ok: false; problem: PinsProblem } {
  const bad = (path: string, message: string) => ({ ok: false as const, problem: { path, message } });
  if (!isObj(v))
    return bad('/', `a pins file is an object { "format": "${PINS_FORMAT}", "version": 1, "pins": [] }`);
  if (v.format !== PINS_FORMAT) return bad('/format', `expected "${PINS_FORMAT}"`);
  if (v.version !== PINS_VERSION) return bad('/version', `expected ${PINS_VERSION}`);
  if (!Array.isArray(v.pins)) return bad('/pins', 'expected an array');
  if (v.pins.length > MAX_PINS) return bad('/pins', `at most ${MAX_PINS} pins`);
  const seen = new Set<string>();
  for (let i = 0; i < v.pins.length; i++) {
    const p = checkPin(v.pins[i], `/pins/${i}`);
    if (p) return { ok: false, problem: p };
    const id = (v.pins[i] as Pin).nodeId;
    if (seen.has(id)) return bad(`/pins/${i}/nodeId`, `node "${id}" is pinned twice`);
    seen.add(id);
  }
  return { ok: true, doc: v as unknown as PinsDocument };
}

/** A pins document with `pin` in place of any earlier pin of its node. */
export function withPin(doc: PinsDocument, pin: Pin): PinsDocument {
  return { ...doc, pins: [...doc.pins.filter((p) => p.nodeId !== pin.nodeId), pin] };
}

export function withoutPin(doc: PinsDocument, nodeId: string): PinsDocument {
  return { ...doc, pins: doc.pins.filter((p) => p.nodeId !== nodeId) };
}
