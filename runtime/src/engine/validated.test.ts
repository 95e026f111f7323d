import { defaultRegistry, validate } from '@switchboard/nodes';
import type { Flow } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import { runFlow } from './index.js';
import { agent, chain, collectRun, edge, flow, node, trace } from './testing/index.js';
import { type Validator, validateOnce } from './validated.js';

function counting(): { check: Validator; calls: () => number } {
  let n = 0;
  return {
    check: (doc, o) => {
      n++;
      return validate(doc, o);
    },
    calls: () => n,
  };
}

describe('validation once per flow object', () => {
  it('validates an unchanged flow object once, however many times it is asked', () => {
    const f = chain(3);
    const { check, calls } = counting();
    for (let i = 0; i < 5; i++) expect(validateOnce(check, f).ok).toBe(true);
    expect(calls()).toBe(1);
    // An equal flow that is another object is validated on its own.
    expect(validateOnce(check, chain(3)).ok).toBe(true);
    expect(calls()).toBe(2);
  });

  it('validates again when the object was changed in between, and sees the change', () => {
    const f = chain(2);
    const { check, calls } = counting();
    expect(validateOnce(check, f).ok).toBe(true);
    f.edges.push(edge('a2', 'nowhere'));
    const v = validateOnce(check, f);
    expect(v.ok).toBe(false);
    expect(JSON.stringify(v.errors)).toContain('nowhere');
    expect(calls()).toBe(2);
  });

  it('a cycle added after validation ends the comparison and goes to the validator', () => {
    const f = chain(2);
    const { check, calls } = counting();
    expect(validateOnce(check, f).ok).toBe(true);
    const config = f.nodes[1]!.config as Record<string, unknown>;
    config.self = config;
    expect(validateOnce(check, f).ok).toBe(false);
    expect(calls()).toBe(2);
  });

  it('keeps no failure: an invalid flow is checked (and reported in full) every time', () => {
    const f = chain(1);
    f.edges.push(edge('a1', 'nowhere'));
    const { check, calls } = counting();
    expect(validateOnce(check, f).ok).toBe(false);
    expect(validateOnce(check, f).ok).toBe(false);
    expect(calls()).toBe(2);
  });

  it('keeps results per kind registry', () => {
    const f = chain(1);
    const { check, calls } = counting();
    validateOnce(check, f);
    validateOnce(check, f, defaultRegistry);
    validateOnce(check, f, defaultRegistry);
    expect(calls()).toBe(2);
  });

  it('a run of a flow changed since its last run validates it again and refuses it when invalid', async () => {
    const f = chain(2);
    expect((await runFlow(f, 'go').result).status).toBe('completed');
    f.edges.push(edge('a2', 'nowhere'));
    const r = await runFlow(f, 'go').result;
    expect(r).toMatchObject({ status: 'failed', error: { code: 'flow_invalid' } });
  });

  it('a run of a flow changed validly since its last run follows the new graph, not the compiled old one', async () => {
    const f: Flow = flow(
      [node('start', 'start'), agent('a'), node('end', 'end')],
      [edge('start', 'a'), edge('a', 'end')],
      [{ fallback: true, text: 'ok' }],
    );
    expect(trace((await collectRun(f, 'go')).events)).not.toContain('node.started@b');
    f.nodes.push(agent('b'));
    f.edges.splice(1, 1, edge('a', 'b'), edge('b', 'end'));
    const { events, result } = await collectRun(f, 'go');
    expect(result.status).toBe('completed');
    expect(trace(events)).toContain('node.started@b');
  });
});

describe('validation once per flow object: deep-frozen flows', () => {
  function deepFreeze<T>(v: T): T {
    if (v !== null && typeof v === 'object') {
      for (const x of Object.values(v)) deepFreeze(x);
      Object.freeze(v);
    }
    return v;
  }

  /** `f` with its node list behind a proxy that counts reads of it. */
  function watched(f: Flow): { flow: Flow; reads: () => number } {
    let n = 0;
    const nodes = new Proxy(f.nodes, {
      get(t, k, r) {
        n++;
        return Reflect.get(t, k, r);
      },
    });
    return { flow: { ...f, nodes }, reads: () => n };
  }

  it('a deep-frozen flow is validated once and then trusted without walking it again', () => {
    const { flow: f, reads } = watched(chain(3));
    deepFreeze(f);
    const { check, calls } = counting();
    expect(validateOnce(check, f).ok).toBe(true);
    const before = reads();
    for (let i = 0; i < 4; i++) expect(validateOnce(check, f).ok).toBe(true);
    expect(calls()).toBe(1);
    expect(reads()).toBe(before);
  });

  it('a flow not frozen is compared with its fingerprint on every run (the same watch sees it read)', () => {
    const { flow: f, reads } = watched(chain(3));
    const { check, calls } = counting();
    expect(validateOnce(check, f).ok).toBe(true);
    const before = reads();
    expect(validateOnce(check, f).ok).toBe(true);
    expect(calls()).toBe(1);
    expect(reads()).toBeGreaterThan(before);
  });

  it('a flow frozen only at the top is fingerprinted: a change inside is seen', () => {
    const f = chain(2);
    Object.freeze(f);
    const { check, calls } = counting();
    expect(validateOnce(check, f).ok).toBe(true);
    f.edges.push(edge('a2', 'nowhere'));
    expect(validateOnce(check, f).ok).toBe(false);
    expect(calls()).toBe(2);
  });
});
