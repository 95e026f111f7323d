import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Flow } from '@switchboard/schemas';
import { afterAll, describe, expect, it } from 'vitest';
import { agent, edge, flow, node } from './engine/testing/index.js';
import { FlowFileError, loadFlow, overrideModels, runFlowFile, validateFlow } from './headless.js';
import { trustCommand } from './mcp/consent.js';

const dir = mkdtempSync(join(tmpdir(), 'sb-headless-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const writer = (): Flow =>
  flow(
    [node('start', 'start'), agent('writer'), node('end', 'end')],
    [edge('start', 'writer'), edge('writer', 'end')],
    [{ node: 'writer', text: 'from the script' }],
  );

function write(name: string, value: unknown): string {
  const p = join(dir, name);
  writeFileSync(p, typeof value === 'string' ? value : JSON.stringify(value));
  return p;
}

describe('overrideModels', () => {
  it('a baseURL makes the entry an openai one and drops the script; other fields stay', () => {
    const f = writer();
    f.models.default = { ...f.models.default!, temperature: 0.2 };
    const o = overrideModels(f, { default: { baseURL: 'http://127.0.0.1:1/v1', model: 'm' } });
    expect(o.models.default).toEqual({
      provider: 'openai',
      baseURL: 'http://127.0.0.1:1/v1',
      model: 'm',
      temperature: 0.2,
    });
    expect(f.models.default!.provider).toBe('scripted'); // the input is not changed
  });

  it('forces scripted replies', () => {
    const f = writer();
    f.models.default = { provider: 'openai', model: 'gpt', baseURL: 'https://api.example/v1' };
    const o = overrideModels(f, { default: { provider: 'scripted', script: ['canned'] } });
    expect(o.models.default).toMatchObject({ provider: 'scripted', script: ['canned'] });
  });

  it('refuses a model the flow does not have, and prototype names', () => {
    expect(() => overrideModels(writer(), { other: { model: 'x' } })).toThrow(
      'modelOverrides.other: the flow has no model "other" (it has: default)',
    );
    const proto = JSON.parse('{"__proto__": {"model": "x"}}') as Record<string, object>;
    expect(() => overrideModels(writer(), proto)).toThrow('the flow has no model "__proto__"');
    expect(() => overrideModels(writer(), { constructor: {} })).toThrow('no model "constructor"');
  });
});

describe('loadFlow and validateFlow', () => {
  it('loads a valid file; names each problem of an invalid one with its path', async () => {
    expect((await loadFlow(write('ok.json', writer()))).id).toBe(writer().id);
    const bad = write('bad.json', { ...writer(), edges: [edge('start', 'nowhere')] });
    const e = await loadFlow(bad).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(FlowFileError);
    expect((e as FlowFileError).problems.length).toBeGreaterThan(0);
    expect((e as Error).message).toContain(`${bad} is not a valid flow:\n${bad}: /edges/0`);
    const missing = await loadFlow(join(dir, 'nope.json')).catch((x: unknown) => x);
    expect((missing as Error).message).toBe(`${join(dir, 'nope.json')}: cannot read it (ENOENT)`);
  });

  it('validates a document or its text with the same verdict', async () => {
    expect((await validateFlow(writer())).ok).toBe(true);
    expect((await validateFlow(JSON.stringify(writer()))).ok).toBe(true);
    expect((await validateFlow({ version: 1 })).ok).toBe(false);
  });
});

describe('runFlowFile', () => {
  it('runs a file with events and answers; a human node without one fails the run', async () => {
    const types: string[] = [];
    const r = await runFlowFile(write('w.json', writer()), 'go', { onEvent: (e) => types.push(e.type) });
    expect(r).toMatchObject({ status: 'completed', output: 'from the script' });
    expect(types[0]).toBe('run.started');
    const gate = flow(
      [node('start', 'start'), node('boss', 'human', { mode: 'ask', question: 'ok?' }), node('end', 'end')],
      [edge('start', 'boss'), edge('boss', 'end')],
      [],
    );
    const file = write('gate.json', gate);
    expect((await runFlowFile(file, 'x')).error?.code).toBe('human_input_required');
    expect(await runFlowFile(file, 'x', { answers: { boss: 'yes' } })).toMatchObject({ status: 'completed' });
  });
});

describe('trustCommand', () => {
  it('is the exact line to type, quoted for a POSIX shell', () => {
    expect(trustCommand('flows/rawko.json')).toBe('switchboard trust flows/rawko.json');
    expect(trustCommand("my flow's.json", '/t/trust.json')).toBe(
      "switchboard trust 'my flow'\\''s.json' --trust-file /t/trust.json",
    );
    expect(trustCommand(undefined)).toBe('switchboard trust FLOW');
  });
});
