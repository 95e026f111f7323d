/**
 * `switchboard validate` on the broken fixtures (one per error code, `test/fixtures/invalid/`),
 * the warning fixtures and the example flows: exit codes, `FILE: /path (id): message [code]`
 * lines, and the `--json` shape. Runs through `main()` and once through the built binary.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PROBLEM_CODES, type ProblemCode, WARNING_CODES } from '@switchboard/schemas';
import { afterAll, describe, expect, it } from 'vitest';
import { cli } from './support/cli.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const invalidDir = join(root, 'test/fixtures/invalid');
const warningsDir = join(root, 'test/fixtures/warnings');

/** Where each fixture's first problem is: JSON path and node or edge id. */
const EXPECTED: Record<string, { path: string; id?: string }> = {
  'not-json': { path: '' },
  'not-utf8': { path: '' },
  unreadable: { path: '' },
  'empty-document': { path: '' },
  'too-deep': { path: '' },
  'reserved-key': { path: '/nodes/0/config/__proto__', id: 'start' },
  'unsupported-version': { path: '/version' },
  schema: { path: '/nodes/1/position/x', id: 'writer' },
  config: { path: '/nodes/1/config/memory', id: 'writer' },
  'edge-config': { path: '/edges/0/config/context/n', id: 'e1' },
  'unknown-kind': { path: '/nodes/2/kind', id: 'translator' },
  'duplicate-id': { path: '/nodes/2/id', id: 'writer' },
  'reserved-id': { path: '/nodes/1/id', id: '__proto__' },
  'dangling-edge': { path: '/edges/2/target', id: 'e3' },
  'illegal-edge': { path: '/edges/2', id: 'grant' },
  'self-loop': { path: '/edges/2', id: 'again' },
  'bad-parent': { path: '/nodes/2/parent', id: 'helper' },
  'parent-cycle': { path: '/nodes/1/parent', id: 'outer' },
  'team-no-entry': { path: '/nodes/1/config', id: 'desk' },
  'team-empty': { path: '/nodes/1', id: 'desk' },
  'team-decider': { path: '/nodes/1/config', id: 'desk' },
  'start-count': { path: '/nodes/1', id: 'start2' },
  'no-end': { path: '/nodes' },
  'endless-cycle': { path: '/nodes/1', id: 'writer' },
  'bad-route': { path: '/nodes/2/config/rules/0/to', id: 'route' },
  'unknown-model': { path: '/nodes/1/config/model', id: 'writer' },
  'unknown-server': { path: '/nodes/3/config/server', id: 'web' },
  'unknown-node-ref': { path: '/nodes/3/config/escalateTo', id: 'guard' },
  'script-file-path': { path: '/models/default/scriptFile' },
  'script-file': { path: '/models/default/scriptFile' },
  'env-not-allowed': { path: '/nodes/1/config/prompt/0/text', id: 'writer' },
  'literal-secret': { path: '/mcpServers/web/headers/Authorization' },
  'bidi-control': { path: '/nodes/1/config/prompt/0/text', id: 'writer' },
  'too-many-errors': { path: '' },
};
// Generated at test time: a fixture over the size limit does not belong in git.
const GENERATED = new Set(['too-large']);

const tmp = mkdtempSync(join(tmpdir(), 'sb-cli-validate-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('switchboard validate', () => {
  it('has a fixture for every error code, named after it', () => {
    const files = readdirSync(invalidDir).map((f) => f.replace(/\.json$/, ''));
    const errorCodes = (Object.keys(PROBLEM_CODES) as ProblemCode[]).filter((c) => !WARNING_CODES.has(c));
    expect([...files, ...GENERATED].sort()).toEqual(errorCodes.sort());
    expect(Object.keys(EXPECTED).sort()).toEqual(files.sort());
    // Warnings too, except `migrated`: no migration exists yet (see test/validate-migrate.test.ts).
    const warned = readdirSync(warningsDir).map((f) => f.replace(/\.json$/, ''));
    expect([...warned, 'migrated'].sort()).toEqual([...WARNING_CODES].sort());
  });

  it.each(Object.entries(EXPECTED))('%s: exit 1, with the code, path and id', async (code, want) => {
    const file = join(invalidDir, `${code}.json`);
    const r = await cli('validate', file);
    expect(r.code).toBe(1);
    expect(r.out).toBe('');
    const line = r.err.split('\n').find((l) => l.endsWith(`[${code}]`));
    expect(line, r.err).toBeDefined();
    expect(
      line!.startsWith(
        `${file}: ${want.path || '/'}${want.id ? ` (${want.id})` : ''}: ${PROBLEM_CODES[code as ProblemCode]}`,
      ),
    ).toBe(true);
    expect(r.err).not.toMatch(/\n\s+at /); // no stack traces
    const json = await cli('validate', '--json', file);
    expect(json.code).toBe(1);
    const [report] = JSON.parse(json.out);
    expect(report).toMatchObject({ file, ok: false });
    expect(report.errors).toContainEqual(expect.objectContaining({ code, path: want.path }));
    const hit = report.errors.find((p: { code: string }) => p.code === code);
    if (want.id) expect(hit.nodeId ?? hit.edgeId).toBe(want.id);
  });

  it('too-large: refused from its size, before reading', async () => {
    const file = join(tmp, 'huge.json');
    writeFileSync(file, `{"name": "${'x'.repeat(9 * 1024 * 1024)}"}`);
    const r = await cli('validate', file);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(
      /huge\.json: \/: The document is larger than the limit: \d+ bytes, limit 8388608 \[too-large\]/,
    );
  });

  it('warnings are printed but do not fail', async () => {
    for (const f of readdirSync(warningsDir)) {
      const file = join(warningsDir, f);
      const r = await cli('validate', file);
      expect(r.code, f).toBe(0);
      expect(r.out).toBe(`${file}: ok (1 warnings)\n`);
      expect(r.err).toContain(`warning: `);
      expect(r.err).toContain(`[${f.replace('.json', '')}]`);
    }
  });

  it('one bad file among good ones fails the run, and each file gets its own report', async () => {
    const good = join(warningsDir, 'unreachable.json');
    const bad = join(invalidDir, 'no-end.json');
    const r = await cli('validate', '--json', good, bad);
    expect(r.code).toBe(1);
    const reports = JSON.parse(r.out);
    expect(reports).toHaveLength(2);
    for (const rep of reports) {
      expect(Object.keys(rep).sort()).toEqual(['errors', 'file', 'ok', 'warnings']);
      for (const p of [...rep.errors, ...rep.warnings]) {
        expect(typeof p.code).toBe('string');
        expect(typeof p.path).toBe('string');
        expect(typeof p.message).toBe('string');
      }
    }
    expect(reports.map((x: { ok: boolean }) => x.ok)).toEqual([true, false]);
  });

  it('prints paths and ids from the document without raw control or bidi characters', async () => {
    const file = join(tmp, 'escapes.json');
    writeFileSync(
      file,
      JSON.stringify({
        version: 1,
        id: 'x',
        name: 'x',
        models: {},
        nodes: [{ id: 'evil\u001b[2J', kind: 'agent', position: { x: 0, y: 0 }, config: {} }],
        edges: [],
        metadata: { 'a\u202eb': 'c\u202ed' },
      }),
    );
    const r = await cli('validate', file);
    expect(r.code).toBe(1);
    expect(r.err).toContain('/metadata/a\\u202eb: The text contains bidirectional control characters');
    expect(r.err).toContain('(evil\\u001b[2J)');
    // biome-ignore lint/suspicious/noControlCharactersInRegex: asserting their absence
    expect(r.err).not.toMatch(/[\u001b\u202e]/);
  });

  it('exits 2 on usage errors', async () => {
    expect((await cli('validate')).code).toBe(2);
    expect((await cli('validate', '--frobnicate', 'x.json')).code).toBe(2);
    expect((await cli('frobnicate')).code).toBe(2);
  });

  it('exits 1 and names the file when it cannot be read', async () => {
    const r = await cli('validate', '/nonexistent/flow.json');
    expect(r.code).toBe(1);
    expect(r.err).toBe('/nonexistent/flow.json: /: The file cannot be read: ENOENT [unreadable]\n');
  });

  it.runIf(existsSync(join(root, 'runtime/dist/cli/main.js')))(
    'the built binary gives the same verdicts',
    () => {
      const files = Object.keys(EXPECTED).map((c) => join(invalidDir, `${c}.json`));
      const bin = join(root, 'runtime/bin/switchboard.js');
      const r = spawnSync(process.execPath, [bin, 'validate', ...files], { encoding: 'utf8', cwd: root });
      expect(r.status).toBe(1);
      for (const [code, want] of Object.entries(EXPECTED))
        expect(r.stderr, 'runtime/dist is older than the sources? run `pnpm build`').toContain(
          `${join(invalidDir, `${code}.json`)}: ${want.path || '/'}`,
        );
      expect(r.stderr).not.toMatch(/\n\s+at /); // no stack traces
      const json = spawnSync(
        process.execPath,
        [bin, 'validate', '--json', join(invalidDir, 'bad-route.json')],
        {
          encoding: 'utf8',
        },
      );
      expect(json.status).toBe(1);
      expect(JSON.parse(json.stdout)[0].errors[0]).toMatchObject({ code: 'bad-route', nodeId: 'route' });
      const usage = spawnSync(process.execPath, [bin, 'validate'], { encoding: 'utf8' });
      expect(usage.status).toBe(2);
    },
  );
});
