import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { simpleFlow, testServer } from './server/helpers.js';

type S = Awaited<ReturnType<typeof testServer>>;
let s: S;
const unhandled: unknown[] = [];
const onUnhandled = (e: unknown) => unhandled.push(e);
beforeAll(async () => {
  process.on('unhandledRejection', onUnhandled);
  s = await testServer();
  await s.req({
    method: 'PUT',
    url: '/api/flows/simple',
    payload: JSON.stringify(simpleFlow()),
    headers: { 'content-type': 'application/json' },
  });
});
afterAll(async () => {
  process.off('unhandledRejection', onUnhandled);
  await s.close();
});

function rng(seed: number) {
  let x = seed;
  return () => {
    x = (x * 48271) % 2147483647;
    return x / 2147483647;
  };
}

describe('fuzzed REST bodies', () => {
  it('2,000 random bodies on every write route: never a 5xx, never a crash, never a stored invalid flow', async () => {
    const seed = Number(process.env.SWITCHBOARD_FUZZ_SEED ?? 20261122);
    const rand = rng(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
    const base = simpleFlow('fz');
    const atoms = [
      null,
      true,
      false,
      0,
      -1,
      1e308,
      'x',
      '',
      '${env:X}',
      '__proto__',
      [],
      {},
      '\u202e',
      'a'.repeat(300),
    ];
    const randomValue = (d: number): unknown => {
      const k = rand();
      if (d > 5 || k < 0.4) return pick(atoms);
      if (k < 0.6) return Array.from({ length: Math.floor(rand() * 4) }, () => randomValue(d + 1));
      const o: Record<string, unknown> = {};
      for (let i = 0; i < Math.floor(rand() * 4); i++)
        o[
          pick(['id', 'type', 'nodes', 'edges', 'models', 'flow', 'flowId', 'input', 'text', 'answer', 'x'])
        ] = randomValue(d + 1);
      return o;
    };
    /** A valid flow with one random mutation, so the validator's deeper paths are reached. */
    const mutated = (): unknown => {
      const f = JSON.parse(JSON.stringify(base));
      const paths: Array<(x: typeof f) => void> = [
        (x) => {
          x.nodes[Math.floor(rand() * x.nodes.length)].config = randomValue(0);
        },
        (x) => {
          x.edges[0].target = pick(['nope', 'start', '', 'writer']);
        },
        (x) => {
          x.models.default = randomValue(0);
        },
        (x) => {
          x.version = pick([0, 2, '1', null]);
        },
        (x) => {
          x.nodes.push({
            id: pick(['writer', 'n2', '../x']),
            kind: pick(['agent', 'zzz', 'team']),
            position: { x: 0, y: 0 },
            config: {},
          });
        },
        (x) => {
          x[pick(['extra', 'metadata', 'budgets'])] = randomValue(0);
        },
      ];
      pick(paths)(f);
      return f;
    };
    const routes = [
      ['POST', '/api/flows'],
      ['PUT', '/api/flows/fz'],
      ['POST', '/api/flows/validate'],
      ['POST', '/api/flows/import'],
      ['POST', '/api/runs'],
      ['POST', '/api/runs/r_unknown/commands'],
    ] as const;
    const counts: Record<number, number> = {};
    for (let i = 0; i < 2000; i++) {
      const [method, url] = pick(routes);
      const kind = rand();
      let payload: string | Buffer;
      let ct = 'application/json';
      if (kind < 0.35) payload = JSON.stringify(mutated());
      else if (kind < 0.6) payload = JSON.stringify(randomValue(0));
      else if (kind < 0.7) payload = JSON.stringify(mutated()).slice(0, Math.floor(rand() * 200));
      else if (kind < 0.75) payload = Buffer.from(Array.from({ length: 64 }, () => Math.floor(rand() * 256)));
      else if (kind < 0.8) payload = `${'{"a":'.repeat(100 + Math.floor(rand() * 1000))}1${'}'.repeat(100)}`;
      else if (kind < 0.85) payload = `{"__proto__":{"admin":true},"flowId":"simple"}`;
      else if (kind < 0.9) {
        payload = 'x=1&y=2';
        ct = pick(['application/x-www-form-urlencoded', 'text/plain', 'multipart/form-data; boundary=x']);
      } else if (kind < 0.95)
        payload = JSON.stringify({ flowId: 'simple', input: randomValue(0), models: randomValue(0) });
      else
        payload = JSON.stringify({
          type: pick(['pause', 'inject', 'answer', 'breakpoint', 'x']),
          text: randomValue(0),
          nodeId: randomValue(0),
          on: randomValue(0),
        });
      const r = await s.req({ method, url, payload, headers: { 'content-type': ct } });
      counts[r.statusCode] = (counts[r.statusCode] ?? 0) + 1;
      expect(r.statusCode, `${method} ${url} ${String(payload).slice(0, 200)}`).toBeLessThan(500);
      expect(() => r.json()).not.toThrow();
    }
    // Whatever got stored is valid and readable; the server still answers.
    const stored = s.store.catalog.data.flows.fz;
    if (stored) {
      const { validate } = await import('@switchboard/nodes');
      expect(validate(stored.flow).ok).toBe(true);
    }
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
    expect((await s.req({ method: 'GET', url: '/api/health' })).statusCode).toBe(200);
    expect(unhandled).toEqual([]);
    console.log(`fuzz seed ${seed}: status counts ${JSON.stringify(counts)}`);
  }, 120_000);
});

describe('static editor build', () => {
  it('serves editor/dist with an index fallback for client routes, JSON 404s under /api', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-editor-'));
    writeFileSync(join(dir, 'index.html'), '<!doctype html><title>Switchboard</title>');
    writeFileSync(join(dir, 'app.js'), 'console.log(1)');
    const srv = await testServer({ editorDir: dir });
    try {
      const home = await srv.req({ method: 'GET', url: '/' });
      expect(home.statusCode).toBe(200);
      expect(home.body).toContain('<title>Switchboard</title>');
      expect((await srv.req({ method: 'GET', url: '/app.js' })).body).toBe('console.log(1)');
      expect((await srv.req({ method: 'GET', url: '/flows/doc-writer' })).body).toContain('Switchboard');
      const api404 = await srv.req({ method: 'GET', url: '/api/nope' });
      expect(api404.statusCode).toBe(404);
      expect(api404.json().error.code).toBe('not-found');
      expect((await srv.req({ method: 'GET', url: '/../../etc/passwd' })).body).not.toContain('root:');
    } finally {
      await srv.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
