/**
 * Hostile and broken input: every case ends in a clear problem with a code and a path, never a
 * throw, and limits are checked before anything looks deeper.
 */
import { validate, validateText } from '@switchboard/nodes';
import { type Problem, parseFlowText, serializeFlow } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import { agent, baseFlow, handover, node } from './fixtures/build.js';

const text = (v: unknown) => JSON.stringify(v);
const only = (ps: Problem[]) => ps.map((p) => `${p.code} ${p.path}`);

describe('bad input', () => {
  it('not JSON: names the place', () => {
    const r = validateText('{ "version": 1,\n  "id": oops }');
    expect(r.ok).toBe(false);
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toMatchObject({ code: 'not-json', path: '' });
    expect(r.errors[0]!.message).toMatch(/line 2, column \d+/);
  });

  it('empty or blank', () => {
    for (const t of ['', '   \n\t', new Uint8Array(0)])
      expect(only(validateText(t).errors)).toEqual(['empty-document ']);
  });

  it('50 MB is refused by size before parsing, as text and as bytes, quickly', () => {
    const big = `{"name": "${'x'.repeat(50 * 1024 * 1024)}"}`;
    const t0 = performance.now();
    expect(only(validateText(big).errors)).toEqual(['too-large ']);
    expect(only(validateText(Buffer.from(big)).errors)).toEqual(['too-large ']);
    // Multi-byte characters count as bytes: 3 MiB of "€" is 9 MiB of UTF-8.
    expect(only(validateText(`"${'€'.repeat(3 * 1024 * 1024)}"`).errors)).toEqual(['too-large ']);
    expect(performance.now() - t0).toBeLessThan(20_000); // generous: a loaded 2-core machine
  });

  it('10,000 levels of nesting are refused before JSON.parse, and as an object without recursion', () => {
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    expect(only(validateText(deep).errors)).toEqual(['too-deep ']);
    const inConfig = text({
      ...baseFlow(),
      metadata: JSON.parse(`${'{"a":'.repeat(100)}1${'}'.repeat(100)}`),
    });
    expect(only(validateText(inConfig).errors)).toEqual(['too-deep ']);
    let obj: unknown = {};
    for (let i = 0; i < 10_000; i++) obj = { a: obj };
    expect(validate({ ...baseFlow(), metadata: obj }).errors[0]).toMatchObject({ code: 'too-deep' });
    // Brackets inside strings do not count.
    const f = baseFlow();
    f.description = '['.repeat(1000);
    expect(validateText(serializeFlow(f)).ok).toBe(true);
  });

  it('a cyclic object given by code ends in too-deep, not an endless loop', () => {
    const f = baseFlow() as unknown as Record<string, unknown>;
    const meta: Record<string, unknown> = {};
    meta.self = meta;
    f.metadata = meta;
    expect(validate(f).errors[0]).toMatchObject({ code: 'too-deep' });
  });

  it.each([
    ['a string', '"flow"'],
    ['an array', '[]'],
    ['a number', '42'],
    ['null', 'null'],
    ['true', 'true'],
  ])('a document that is %s', (_, t) => {
    const r = validateText(t);
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toMatchObject({ code: 'schema', path: '' });
    expect(r.errors[0]!.message).toContain('must be a JSON object');
  });

  it('wrong types everywhere: one problem per place, each with its path', () => {
    const r = validateText(
      text({
        version: 1,
        id: 7,
        name: [],
        models: { default: { provider: 5, temperature: 'hot' } },
        mcpServers: { x: 'documents' },
        nodes: [{ id: 'a', kind: 'agent', position: 'here', config: [] }, 'node', null],
        edges: {},
        metadata: 3,
      }),
    );
    expect(only(r.errors).sort()).toEqual(
      [
        'schema /edges',
        'schema /id',
        'schema /mcpServers/x',
        'schema /metadata',
        'schema /models/default/provider',
        'schema /models/default/temperature',
        'schema /name',
        'schema /nodes/0/config',
        'schema /nodes/0/position',
        'schema /nodes/1',
        'schema /nodes/2',
      ].sort(),
    );
    expect(r.errors.find((p) => p.path === '/nodes/0/position')).toMatchObject({ nodeId: 'a' });
    expect(r.errors.find((p) => p.path === '/nodes/1')!.message).toContain('must be an object');
    expect(r.errors.find((p) => p.path === '/models/default/temperature')!.message).toContain(
      'must be a number',
    );
  });

  it('unknown kinds: each named with its path and a hint, and the document is left as it is', () => {
    const f = baseFlow();
    f.nodes.push(node('r', 'robot', { arms: 2 }), node('g', 'agnet', {}));
    f.edges.push(handover('e3', 'writer', 'r'));
    const before = structuredClone(f);
    const r = validate(f);
    expect(f).toEqual(before);
    expect(r.errors.filter((p) => p.code === 'unknown-kind')).toEqual([
      expect.objectContaining({ path: '/nodes/3/kind', nodeId: 'r' }),
      expect.objectContaining({ path: '/nodes/4/kind', nodeId: 'g' }),
    ]);
    expect(r.errors.find((p) => p.nodeId === 'g')!.message).toContain('did you mean "agent"?');
    expect(r.errors.find((p) => p.nodeId === 'r')!.message).toContain('known kinds are start, end, agent');
  });

  it('duplicate ids and self-loops', () => {
    const f = baseFlow();
    f.nodes.push(agent('writer'));
    f.edges.push(handover('loop', 'end', 'end'));
    expect(only(validate(f).errors)).toEqual(
      expect.arrayContaining(['duplicate-id /nodes/3/id', 'self-loop /edges/2']),
    );
  });

  it('__proto__, constructor and prototype keys are refused wherever they are', () => {
    const t = serializeFlow(baseFlow()).replace(
      '"config": {}',
      '"config": {"__proto__": {"polluted": true}}',
    );
    const r = validateText(t);
    expect(only(r.errors)).toEqual(['reserved-key /nodes/0/config/__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const t2 = text({ ...baseFlow(), metadata: { a: [{ constructor: 1 }], prototype: 2 } });
    expect(only(validateText(t2).errors).sort()).toEqual([
      'reserved-key /metadata/a/0/constructor',
      'reserved-key /metadata/prototype',
    ]);
    expect(
      only(parseFlowText(t2).ok ? [] : (parseFlowText(t2) as { errors: Problem[] }).errors),
    ).toHaveLength(2);
    // As an own property of an object given by code.
    const f = baseFlow() as unknown as Record<string, unknown>;
    f.metadata = JSON.parse('{"__proto__": 1}');
    expect(only(validate(f).errors)).toEqual(['reserved-key /metadata/__proto__']);
  });

  it('bidi controls are errors, zero-width characters warnings, ids refuse both', () => {
    const f = baseFlow();
    f.nodes[1]!.config.role = 'Reviewer \u202Eevil\u202C';
    f.nodes[1]!.label = 'wri\u200Bter';
    f.metadata = { 'note\u2066': 'x' };
    const r = validate(f);
    expect(only(r.errors)).toEqual(
      expect.arrayContaining(['bidi-control /nodes/1/config/role', 'bidi-control /metadata/note\u2066']),
    );
    expect(r.errors.find((p) => p.path === '/nodes/1/config/role')).toMatchObject({ nodeId: 'writer' });
    expect(only(r.warnings)).toEqual(['hidden-characters /nodes/1/label']);
    // Emoji sequences (zero-width joiner) and right-to-left marks are fine.
    const ok = baseFlow();
    ok.description = 'Team 👩\u200D💻 — שלום\u200F';
    expect(validate(ok)).toMatchObject({ ok: true, warnings: [] });
    const id = baseFlow();
    id.nodes[1]!.id = 'wri\u200Bter';
    expect(validate(id).errors[0]).toMatchObject({ code: 'schema', path: '/nodes/1/id' });
  });

  it('a BOM is ignored with a warning; UTF-16 and broken UTF-8 are refused', () => {
    const t = serializeFlow(baseFlow());
    const withBom = validateText(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(t)]));
    expect(withBom.ok).toBe(true);
    expect(only(withBom.warnings)).toEqual(['bom ']);
    expect(validateText(`\uFEFF${t}`).warnings[0]!.code).toBe('bom');
    const utf16 = Buffer.from(`\uFEFF${t}`, 'utf16le');
    expect(validateText(utf16).errors[0]!.message).toContain('UTF-16');
    const broken = Buffer.from(t);
    broken[20] = 0xc3;
    broken[21] = 0x28;
    expect(validateText(broken).errors).toEqual([
      expect.objectContaining({ code: 'not-utf8', message: expect.stringContaining('at byte 20') }),
    ]);
  });

  it('numbers too large for JSON (1e999) are not finite and refused', () => {
    const t = serializeFlow(baseFlow()).replace('"x": 0', '"x": 1e999');
    expect(only(validateText(t).errors)).toEqual(['schema /nodes/0/position/x']);
  });

  it('values echoed in messages cannot carry terminal escapes or bidi controls', () => {
    const f = baseFlow();
    f.nodes.push(node('x', '\u001b[2J\u202Eevil', {}));
    const r = validate(f);
    const msg = r.errors.find((p) => p.code === 'unknown-kind')!.message;
    expect(msg).toContain('\\u001b[2J\\u202eevil');
    // biome-ignore lint/suspicious/noControlCharactersInRegex: asserting their absence
    expect(msg).not.toMatch(/[\u001b\u202e]/);
  });

  it('never throws on odd JSON values in any position', () => {
    const odd = [null, 0, -1, 1.5, '', 'x', true, [], {}, [null], { a: null }, '${env:X}'];
    const f = baseFlow() as unknown as Record<string, unknown>;
    for (const key of [
      'version',
      'id',
      'name',
      'models',
      'mcpServers',
      'nodes',
      'edges',
      'metadata',
      'budgets',
    ])
      for (const v of odd) {
        const r = validate({ ...f, [key]: v });
        expect(typeof r.ok).toBe('boolean');
      }
    for (const v of odd) {
      const g = baseFlow();
      (g.nodes[1] as unknown as Record<string, unknown>).config = { role: 'r', model: 'default', prompt: v };
      (g.edges[0] as unknown as Record<string, unknown>).config = v;
      (g.nodes[2] as unknown as Record<string, unknown>).parent = v;
      expect(validate(g).errors.length).toBeGreaterThan(0);
    }
  });
});
