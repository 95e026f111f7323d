/**
 * The assertions of a flow-test case, checked against the events and result of its run. Each
 * failed assertion becomes one line naming what was expected, what happened, and the JSON path
 * of the assertion in the tests file.
 */
import {
  type CaseExpectationsT,
  checkAgainstSchema,
  type EventAssertionT,
  type OutputMatcherT,
  type RunEvent,
} from '@switchboard/schemas';
import type { RunResult } from '../engine/types.js';

export interface Failure {
  /** JSON pointer of the assertion in the tests file. */
  path: string;
  message: string;
}

const show = (v: unknown, max = 200): string => {
  const s = typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v ?? null);
  return s.length > max ? `${s.slice(0, max)}…` : s;
};

/** Structural equality; an object in `want` matches when its fields match (a subset), arrays match item by item. */
export function matchesSubset(want: unknown, got: unknown): boolean {
  if (want === null || typeof want !== 'object') return Object.is(want, got);
  if (Array.isArray(want)) {
    if (!Array.isArray(got) || got.length !== want.length) return false;
    return want.every((w, i) => matchesSubset(w, got[i]));
  }
  if (got === null || typeof got !== 'object' || Array.isArray(got)) return false;
  for (const [k, w] of Object.entries(want)) {
    if (!Object.hasOwn(got, k)) return false;
    if (!matchesSubset(w, (got as Record<string, unknown>)[k])) return false;
  }
  return true;
}

/** Deep equality for JSON values. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((x, i) => jsonEqual(x, bb[i]));
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.hasOwn(b, k) && jsonEqual((a as never)[k], (b as never)[k]));
}

const asText = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v ?? null));

/** A value as JSON: itself, or the parsed text when it is text holding JSON. */
function asJson(v: unknown): { ok: true; value: unknown } | { ok: false } {
  if (typeof v !== 'string') return { ok: true, value: v };
  try {
    return { ok: true, value: JSON.parse(v) };
  } catch {
    return { ok: false };
  }
}

/** Checks one value against a matcher; returns the problems (empty when it matches). */
export function checkMatcher(m: OutputMatcherT, got: unknown, what: string): string[] {
  const out: string[] = [];
  if (m.equals !== undefined) {
    const ok =
      typeof m.equals === 'string'
        ? asText(got) === m.equals
        : (() => {
            const j = asJson(got);
            return j.ok && jsonEqual(m.equals, j.value);
          })();
    if (!ok) out.push(`${what}: expected ${show(m.equals)}, got ${show(got)}`);
  }
  if (m.contains !== undefined && !asText(got).includes(m.contains))
    out.push(`${what}: expected it to contain ${show(m.contains)}, got ${show(got)}`);
  if (m.matches !== undefined) {
    const re = new RegExp(m.matches, m.flags ?? '');
    if (!re.test(asText(got)))
      out.push(`${what}: expected it to match /${m.matches}/${m.flags ?? ''}, got ${show(got)}`);
  }
  if (m.schema !== undefined) {
    const j = asJson(got);
    if (!j.ok)
      out.push(`${what}: expected JSON matching the schema, got text that is not JSON: ${show(got)}`);
    else {
      const r = checkAgainstSchema(m.schema, j.value);
      if (!r.valid) out.push(`${what}: does not match the schema: ${r.errors.slice(0, 3).join('; ')}`);
    }
  }
  return out;
}

type AnyEvent = RunEvent & Record<string, unknown>;

/** Handover edges of the run, in order (nested runs included). */
export function edgesTaken(events: readonly RunEvent[]): string[] {
  const out: string[] = [];
  for (const e of events) if (e.type === 'handover' && e.edgeId !== undefined) out.push(e.edgeId);
  return out;
}

/**
 * Outputs of a node, in order, one per time it completed (top-level run and nested runs): the
 * output its `node.completed` event carries, else the last message it wrote before.
 */
export function nodeOutputs(events: readonly RunEvent[], nodeId: string): unknown[] {
  const out: unknown[] = [];
  let said: string | undefined;
  for (const e of events) {
    if (e.nodeId !== nodeId) continue;
    if (e.type === 'message') said = e.message.content;
    else if (e.type === 'node.completed') {
      out.push(e.output !== undefined ? e.output : said);
      said = undefined;
    }
  }
  return out;
}

export function tokensUsed(events: readonly RunEvent[]): number {
  let n = 0;
  for (const e of events)
    if (e.type === 'model.completed' && e.usage) n += e.usage.promptTokens + e.usage.completionTokens;
  return n;
}

export function turnsTaken(events: readonly RunEvent[]): number {
  let n = 0;
  for (const e of events) if (e.type === 'turn.completed') n++;
  return n;
}

function eventMatches(a: EventAssertionT, e: AnyEvent): boolean {
  if (e.type !== a.type) return false;
  if (a.node !== undefined && e.nodeId !== a.node) return false;
  if (a.fields !== undefined && !matchesSubset(a.fields, e)) return false;
  return true;
}

function describeEvent(a: EventAssertionT): string {
  return `${a.type}${a.node ? ` at node "${a.node}"` : ''}${a.fields ? ` with ${show(a.fields)}` : ''}`;
}

/** Every failed assertion of `expect` (at `base`, its JSON pointer) for this run. */
export function checkExpectations(
  expect: CaseExpectationsT,
  events: readonly RunEvent[],
  result: RunResult,
  base: string,
): Failure[] {
  const f: Failure[] = [];
  const fail = (path: string, message: string) => f.push({ path: `${base}${path}`, message });
  const status = expect.status ?? (expect.error ? 'failed' : 'completed');
  if (result.status !== status)
    fail(
      '/status',
      `expected the run to end ${status}, it ended ${result.status}${result.error ? ` (${result.error.code}: ${result.error.message})` : ''}`,
    );
  if (expect.error !== undefined && result.error?.code !== expect.error)
    fail('/error', `expected error code ${show(expect.error)}, got ${show(result.error?.code ?? null)}`);
  if (expect.edges) {
    const taken = edgesTaken(events);
    const e = expect.edges;
    if (e.order && !jsonEqual(e.order, taken))
      fail('/edges/order', `expected the handovers ${show(e.order, 400)}, took ${show(taken, 400)}`);
    if (e.includes) {
      const missing = e.includes.filter((id) => !taken.includes(id));
      if (missing.length > 0)
        fail('/edges/includes', `expected edges ${show(missing)} to be taken; taken: ${show(taken, 400)}`);
    }
    if (e.set) {
      const want = new Set(e.set);
      const got = new Set(taken);
      const missing = [...want].filter((x) => !got.has(x));
      const extra = [...got].filter((x) => !want.has(x));
      if (missing.length > 0 || extra.length > 0)
        fail(
          '/edges/set',
          `expected exactly the edges ${show([...want].sort())}; missing ${show(missing)}, unexpected ${show(extra)}`,
        );
    }
    if (e.excludes) {
      const hit = e.excludes.filter((id) => taken.includes(id));
      if (hit.length > 0) fail('/edges/excludes', `expected edges ${show(hit)} not to be taken`);
    }
  }
  if (expect.output) {
    if (result.status !== 'completed') fail('/output', `no final output: the run ended ${result.status}`);
    else for (const m of checkMatcher(expect.output, result.output, 'final output')) fail('/output', m);
  }
  expect.nodes?.forEach((n, i) => {
    const outs = nodeOutputs(events, n.node);
    const turn = n.turn ?? -1;
    const got = turn < 0 ? outs[outs.length + turn] : outs[turn - 1];
    if (got === undefined && outs.length < Math.abs(turn)) {
      fail(`/nodes/${i}`, `node "${n.node}" has ${outs.length} output(s); output ${turn} does not exist`);
      return;
    }
    const { node: _n, turn: _t, ...m } = n;
    for (const msg of checkMatcher(m, got, `output of node "${n.node}"`)) fail(`/nodes/${i}`, msg);
  });
  if (expect.maxTurns !== undefined) {
    const t = turnsTaken(events);
    if (t > expect.maxTurns) fail('/maxTurns', `expected at most ${expect.maxTurns} turns, took ${t}`);
  }
  if (expect.maxTokens !== undefined) {
    const t = tokensUsed(events);
    if (t > expect.maxTokens) fail('/maxTokens', `expected at most ${expect.maxTokens} tokens, used ${t}`);
  }
  expect.events?.forEach((a, i) => {
    const n = (events as AnyEvent[]).filter((e) => eventMatches(a, e)).length;
    const present = a.present ?? true;
    if (a.count !== undefined) {
      if (n !== a.count) fail(`/events/${i}`, `expected ${a.count} event(s) ${describeEvent(a)}, found ${n}`);
    } else if (present && n === 0) fail(`/events/${i}`, `expected an event ${describeEvent(a)}, found none`);
    else if (!present && n > 0) fail(`/events/${i}`, `expected no event ${describeEvent(a)}, found ${n}`);
  });
  return f;
}
