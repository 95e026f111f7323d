import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunEvent } from '@switchboard/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  agent,
  assertEventsValid,
  assertSeqContiguous,
  edge,
  flow,
  node,
} from '../runtime/src/engine/testing/index.js';
import {
  type FakeOpenAIServer,
  startFakeOpenAIServer,
} from '../runtime/src/models/testing/fake-openai-server.js';
import { cli } from './support/cli.js';

let dir: string;
let server: FakeOpenAIServer;

function write(name: string, value: unknown): string {
  const p = join(dir, name);
  writeFileSync(p, typeof value === 'string' ? value : JSON.stringify(value));
  return p;
}

const writerFlow = () =>
  flow(
    [node('start', 'start'), agent('writer'), node('end', 'end')],
    [edge('start', 'writer'), edge('writer', 'end')],
    [{ node: 'writer', text: 'Hello from the script' }],
  );

const gateFlow = () =>
  flow(
    [
      node('start', 'start'),
      node('boss', 'human', { mode: 'approve', question: 'Ship?' }),
      agent('yes'),
      agent('no'),
      node('end', 'end'),
    ],
    [
      edge('start', 'boss'),
      edge('boss', 'yes', 'handover', { branch: 'approve' }),
      edge('boss', 'no', 'handover', { branch: 'reject' }),
      edge('yes', 'end'),
      edge('no', 'end'),
    ],
    [
      { node: 'yes', text: 'shipped' },
      { node: 'no', text: 'held' },
    ],
  );

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sb-cli-run-'));
  server = await startFakeOpenAIServer({ fallback: { text: 'real model says hi' } });
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('switchboard run', () => {
  it('prints the answer on stdout and progress on stderr (exit 0)', async () => {
    const r = await cli('run', write('w.json', writerFlow()), '--input', 'go');
    expect(r.code).toBe(0);
    expect(r.out).toBe('Hello from the script\n');
    expect(r.err).toContain('(scripted models)');
    expect(r.err).toContain('● writer');
    expect(r.err).toContain('✔ completed');
  });

  it('--events jsonl writes every event as one JSON line; the answer is in run.completed', async () => {
    const r = await cli(
      'run',
      write('w.json', writerFlow()),
      '--input-file',
      write('in.txt', 'from a file'),
      '--events',
      'jsonl',
    );
    expect(r.code).toBe(0);
    const events = r.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as RunEvent);
    assertEventsValid(events);
    assertSeqContiguous(events);
    expect(events[0]).toMatchObject({ type: 'run.started', input: 'from a file' });
    expect(events.at(-1)).toMatchObject({ type: 'run.completed', output: 'Hello from the script' });
    expect(r.err).toBe('');
  });

  it('--events none prints only the answer', async () => {
    const r = await cli('run', write('w.json', writerFlow()), '--input', 'x', '--events', 'none');
    expect(r).toMatchObject({ code: 0, out: 'Hello from the script\n', err: '' });
  });

  it('exit 3 when a human answer is needed and none can be given; --answers supplies it', async () => {
    const f = write('gate.json', gateFlow());
    const r = await cli('run', f, '--input', 'x');
    expect(r.code).toBe(3);
    expect(r.err).toContain('human_input_required');
    const ok = await cli('run', f, '--input', 'x', '--answers', write('answers.json', { boss: 'approve' }));
    expect(ok).toMatchObject({ code: 0, out: 'shipped\n' });
    const no = await cli('run', f, '--input', 'x', '--answers', write('answers2.json', { boss: ['reject'] }));
    expect(no.out).toBe('held\n');
  });

  it('exit 1 when the run fails', async () => {
    const f = flow(
      [node('start', 'start'), agent('w', { retries: 0 }), node('end', 'end')],
      [edge('start', 'w'), edge('w', 'end')],
      [],
    );
    const r = await cli('run', write('fail.json', f), '--input', 'x');
    expect(r.code).toBe(1);
    expect(r.err).toContain('model_script_exhausted');
  });

  it('exit 2 for an invalid flow or bad usage, naming what is wrong', async () => {
    const bad = await cli('run', write('bad.json', { ...writerFlow(), nodes: [] }), '--input', 'x');
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('bad.json: ');
    expect((await cli('run', write('w.json', writerFlow()))).code).toBe(2);
    expect((await cli('run', write('w.json', writerFlow()), '--input', 'a', '--input-file', 'b')).code).toBe(
      2,
    );
    const events = await cli('run', write('w.json', writerFlow()), '--input', 'a', '--events', 'xml');
    expect(events).toMatchObject({ code: 2 });
    expect(events.err).toContain('--events must be one of');
    const model = await cli(
      'run',
      write('w.json', writerFlow()),
      '--input',
      'a',
      '--model',
      'nosuch=http://127.0.0.1:1/v1',
    );
    expect(model.code).toBe(2);
    expect(model.err).toContain('the flow has no model "nosuch"');
    const answers = await cli(
      'run',
      write('w.json', writerFlow()),
      '--input',
      'a',
      '--answers',
      write('a.json', '[1]'),
    );
    expect(answers.code).toBe(2);
    expect((await cli('run', '/nonexistent/flow.json', '--input', 'x')).code).toBe(2);
  });

  it('--model NAME=BASEURL points a scripted flow at an OpenAI-compatible endpoint', async () => {
    const r = await cli(
      'run',
      write('w.json', writerFlow()),
      '--input',
      'go',
      '--model',
      `default=${server.url}`,
      '--events',
      'jsonl',
    );
    expect(r.code).toBe(0);
    const events = r.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as RunEvent);
    assertEventsValid(events);
    expect(events.at(-1)).toMatchObject({ type: 'run.completed', output: 'real model says hi' });
    expect(events.some((e) => e.scripted)).toBe(false);
    expect(server.requests.length).toBeGreaterThan(0);
  });
});
