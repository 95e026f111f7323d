/**
 * `switchboard test`: the shipped examples' tests pass in a real process (what CI runs), a
 * failing assertion exits 1 naming its JSON path, a broken tests file exits 2 naming its file and
 * JSON path, the JUnit report is XML a JUnit parser reads, and a case recorded from a stored run
 * passes.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { afterAll, describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';
import { storeRun } from './helpers.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FLOWS = join(ROOT, 'flows');
const CLI = join(ROOT, 'test/crash/cli-main.ts');
const dir = mkdtempSync(join(tmpdir(), 'sb-flow-tests-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function write(name: string, value: unknown): string {
  const p = join(dir, name);
  writeFileSync(p, typeof value === 'string' ? value : JSON.stringify(value, null, 2));
  return p;
}

// A copy of a shipped flow, so tests files here refer to it by a relative path.
copyFileSync(join(FLOWS, 'support-triage.json'), join(dir, 'support-triage.json'));

const passing = {
  version: 1,
  flow: 'support-triage.json',
  cases: [
    {
      name: 'general question',
      input: 'Do you have an office in Lisbon?',
      replies: [{ node: 'generalist', text: 'No office in Lisbon.' }],
      expect: {
        edges: { order: ['begin', 'to-general', 'general-done'] },
        output: { equals: 'No office in Lisbon.' },
      },
    },
  ],
};

describe('switchboard test', () => {
  it('runs every shipped example tests file in a real process and exits 0', () => {
    const t0 = Date.now();
    const r = spawnSync(process.execPath, ['--conditions=source', '--import', 'tsx', CLI, 'test', FLOWS], {
      cwd: join(ROOT, 'runtime'),
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
    // Every shipped flow has a tests file, and each ran.
    const flows = readdirFlows();
    for (const f of flows) expect(r.stdout).toContain(`${f.replace(/\.json$/, '')}.tests.json`);
    expect(r.stdout).toMatch(/\d+ passed, 0 failed — \d+ files in [\d.]+ s/);
    expect(Date.now() - t0).toBeLessThan(120_000);
  });

  it('exits 0 when every case passes', async () => {
    const r = await cli('test', write('ok.tests.json', passing));
    expect(r.code, r.out + r.err).toBe(0);
    expect(r.out).toContain('✓ general question');
    expect(r.out).toContain('1 passed, 0 failed');
  });

  it('exits 1 on a failed assertion, naming the assertion by its JSON path', async () => {
    const bad = structuredClone(passing);
    bad.cases[0]!.expect.edges.order = ['begin', 'to-billing'];
    const r = await cli('test', write('fail.tests.json', bad));
    expect(r.code).toBe(1);
    expect(r.out).toContain('✗ general question');
    expect(r.out).toContain('/cases/0/expect/edges/order: expected the handovers ["begin","to-billing"]');
  });

  it('exits 2 on a broken tests file, naming the file and the JSON path', async () => {
    const shape = structuredClone(passing) as unknown as {
      cases: Array<{ expect: Record<string, unknown> }>;
    };
    shape.cases[0]!.expect.maxTurns = 'three';
    const f1 = write('broken-shape.tests.json', shape);
    let r = await cli('test', f1);
    expect(r.code).toBe(2);
    expect(r.out).toContain(`${f1}:/cases/0/expect/maxTurns`);

    const ref = structuredClone(passing);
    ref.cases[0]!.expect.edges.order = ['begin', 'no-such-edge'];
    const f2 = write('broken-ref.tests.json', ref);
    r = await cli('test', f2);
    expect(r.code).toBe(2);
    expect(r.out).toContain(`${f2}:/cases/0/expect/edges/order/1: the flow has no edge "no-such-edge"`);

    const f3 = write('broken-json.tests.json', '{ "version": 1, ');
    r = await cli('test', f3, write('ok2.tests.json', passing));
    // A broken file wins over passing ones, and the others still run.
    expect(r.code).toBe(2);
    expect(r.out).toContain(`${f3}:/: `);
    expect(r.out).toContain('✓ general question');
  });

  it('exits 2 on bad model scripts and cassettes, each at its JSON path', async () => {
    const models = structuredClone(passing) as unknown as { cases: Array<Record<string, unknown>> };
    delete models.cases[0]!.replies;
    models.cases[0]!.models = { nope: ['hi'], default: [{ text: 3 }] };
    const f1 = write('broken-models.tests.json', models);
    let r = await cli('test', f1);
    expect(r.code).toBe(2);
    expect(r.out).toContain(`${f1}:/cases/0/models/nope: the flow has no model "nope"`);
    expect(r.out).toContain(`${f1}:/cases/0/models/default: models.default[0].text: must be a string`);

    const cas = structuredClone(passing) as unknown as { cases: Array<Record<string, unknown>> };
    delete cas.cases[0]!.replies;
    cas.cases[0]!.cassette = 'missing.cassette.json';
    const f2 = write('broken-cassette.tests.json', cas);
    r = await cli('test', f2);
    expect(r.code).toBe(2);
    expect(r.out).toContain(`${f2}:/cases/0/cassette: cannot read the cassette`);
  });

  it('a case replayed from a cassette fails with cassette_miss when the flow changed since the recording', async () => {
    const flow = JSON.parse(readFileSync(join(FLOWS, 'rawko.json'), 'utf8'));
    const dev = flow.nodes.find((n: { id: string }) => n.id === 'developer');
    dev.config.prompt[0].text += ' Always write tests first.';
    writeFileSync(join(dir, 'rawko-edited.json'), JSON.stringify(flow));
    const tests = JSON.parse(readFileSync(join(FLOWS, 'rawko.tests.json'), 'utf8'));
    tests.flow = 'rawko-edited.json';
    tests.cases[0].cassette = join(FLOWS, tests.cases[0].cassette);
    const r = await cli('test', write('rawko-edited.tests.json', tests));
    expect(r.code).toBe(1);
    expect(r.out).toContain('/cases/0/cassette: cassette_miss at node "developer"');
    expect(r.out).toContain('Always write tests first.');
  });

  it('writes a JUnit report that a JUnit parser reads', async () => {
    const bad = structuredClone(passing);
    bad.cases.push({ ...structuredClone(passing.cases[0]!), name: 'fails <on purpose> & "quoted"' });
    bad.cases[1]!.expect.output.equals = 'something else';
    const out = join(dir, 'report.xml');
    const r = await cli(
      'test',
      write('junit.tests.json', bad),
      write('junit-broken.tests.json', { version: 2 }),
      '--reporter',
      'junit',
      '--output',
      out,
    );
    expect(r.code).toBe(2);
    const xml = readFileSync(out, 'utf8');
    expect(XMLValidator.validate(xml)).toBe(true);
    const doc = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '' }).parse(xml);
    const suites = doc.testsuites;
    expect(suites.tests).toBe('3');
    expect(suites.failures).toBe('1');
    expect(suites.errors).toBe('1');
    const [ok, broken] = suites.testsuite as Array<Record<string, unknown>>;
    const cases = ok!.testcase as Array<Record<string, unknown>>;
    expect(cases.map((c) => c.name)).toEqual(['general question', 'fails <on purpose> & "quoted"']);
    expect((cases[1]!.failure as { message: string }).message).toContain('expected "something else"');
    expect(((broken!.testcase as Record<string, unknown>).error as { type: string }).type).toBe(
      'broken_tests_file',
    );
  });

  it('--record-case appends a case built from a stored run, and that case passes', async () => {
    const data = join(dir, 'data');
    const flowFile = join(dir, 'support-triage.json');
    const runId = await storeRun(data, flowFile, 'I was charged twice on invoice INV-1042, please refund', {
      approval: 'yes',
    });
    const file = join(dir, 'support-triage.tests.json');
    const r = await cli('test', '--record-case', file, runId, '--data', data);
    expect(r.code, r.err).toBe(0);
    const doc = JSON.parse(readFileSync(file, 'utf8'));
    expect(doc.flow).toBe('support-triage.json');
    expect(doc.cases[0].answers).toEqual({ approval: 'yes' });
    expect(doc.cases[0].expect.edges.order).toEqual([
      'begin',
      'to-billing',
      'decided',
      'billing-done',
      'approved',
      'sent',
    ]);
    expect(
      doc.cases[0].replies.find((x: { node: string }) => x.node === 'billing-agent').toolCalls[0].name,
    ).toBe('kb__initialize_document_context');
    const t = await cli('test', file);
    expect(t.code, t.out).toBe(0);
    // The recorded replies, not the flow's script, answer: a changed reply fails the case.
    doc.cases[0].replies.find((x: { node: string }) => x.node === 'sender').text = 'changed';
    writeFileSync(file, JSON.stringify(doc));
    expect((await cli('test', file)).code).toBe(1);
    expect((await cli('test', '--record-case', file, 'no-such-run', '--data', data)).code).toBe(2);
  });
});

function readdirFlows(): string[] {
  return readdirSync(FLOWS).filter((f) => f.endsWith('.json') && !f.endsWith('.tests.json'));
}
