/**
 * rawko coding FSM (flows/rawko.json): agent roles as states, an LLM arbiter as the transition
 * function limited to the drawn transitions, per-agent tool grants over real built-in MCP
 * servers (read-only filesystem, read/write filesystem, a node-only shell that needs consent),
 * failures counted per agent and escalation to a person after the third.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { approveFlow } from '../../runtime/src/mcp/consent.js';
import { TrustStore } from '../../runtime/src/mcp/trust.js';
import {
  cannedReplies,
  expectRequestsMatch,
  handovers,
  indexOf,
  ofType,
  openaiFlow,
  runSeed,
  type SeedRun,
  seedSuite,
  speakers,
  withFakeOpenAI,
} from './helpers.js';

const { flow, root } = seedSuite('rawko');

const INPUT = 'Add slugify(text) in slug.mjs with tests';
const GUIDANCE =
  'Lower-case first, replace runs of other characters with one dash, trim dashes at both ends.';

/** A trust file in which the operator approved this flow's shell built-in (and nothing else). */
function trusted(dir: string): TrustStore {
  const trust = new TrustStore(join(dir, 'trust.json'));
  approveFlow(trust, flow);
  return trust;
}

function checkRun(run: SeedRun): void {
  const { events, result, requests, dataDir } = run;
  expect(result.status, JSON.stringify(result.error)).toBe('completed');
  expect(String(result.output)).toMatch(/^LGTM/);

  // The arbiter is the transition function: it is offered only the current state's drawn
  // transitions; an illegal pick is re-asked; every legal pick is a decision event.
  const arbiter = requests.filter((r) => r.nodeId === 'arbiter');
  expect(arbiter[0]!.messages[0]!.content).toContain('"plan-to-dev"');
  expect(arbiter[0]!.messages[0]!.content).not.toContain('"review-fixes"');
  expect(ofType(events, 'log', 'arbiter').some((l) => String(l.text).includes('invalid choice'))).toBe(true);
  expect(ofType(events, 'decision', 'arbiter').map((d) => d.choice)).toEqual([
    'plan-to-dev',
    'dev-to-review',
    'done',
  ]);

  // Three failed attempts of the developer, counted, then escalation to the person.
  const failed = ofType(events, 'node.failed', 'developer');
  expect(failed).toHaveLength(3);
  for (const f of failed) expect((f.error as { code: string }).code).toBe('output_invalid');
  const asked = indexOf(events, 'input.requested', 'ask-user');
  expect(asked).toBeGreaterThan(events.indexOf(failed[2]!));
  expect(events.slice(events.indexOf(failed[0]!), asked).some((e) => e.type === 'decision')).toBe(false);
  expect(ofType(events, 'log', 'developer').map((l) => l.text)).toEqual([
    expect.stringContaining('failed (1/3)'),
    expect.stringContaining('failed (2/3)'),
    expect.stringContaining('failed 3 times; escalating along escalate'),
  ]);
  expect(handovers(events)).toEqual([
    'task',
    'plan-to-dev',
    'escalate',
    'user-guidance',
    'dev-to-review',
    'finished',
  ]);
  expect(ofType(events, 'input.received', 'ask-user')[0]!.answer).toBe(GUIDANCE);
  // Retried attempts are told that an earlier one failed (a prompt segment over the failure counter).
  const dev = requests.filter((r) => r.nodeId === 'developer');
  const warned = (i: number) => dev[i]!.messages[0]!.content.includes('An earlier attempt of yours failed');
  expect(warned(0)).toBe(false);
  expect(dev.filter((_, i) => warned(i)).length).toBeGreaterThanOrEqual(2);
  // After the person's guidance the developer succeeded and the reviewer approved.
  expect(speakers(events)).toEqual(['planner', 'ask-user', 'developer', 'reviewer']);

  // Capabilities: each agent saw only its own tools; the planner's write attempt never ran.
  const offered = (id: string) => [...requests.find((r) => r.nodeId === id)!.tools].sort();
  expect(offered('planner')).toEqual([
    'fs-read__list_directory',
    'fs-read__read_file',
    'fs-read__search_files',
  ]);
  expect(offered('reviewer')).toEqual(offered('planner'));
  expect(offered('developer')).toEqual([
    'fs-write__list_directory',
    'fs-write__read_file',
    'fs-write__search_files',
    'fs-write__write_file',
    'shell__run_command',
  ]);
  expect(ofType(events, 'tool.denied', 'planner')).toMatchObject([{ tool: 'fs-write__write_file' }]);
  expect(existsSync(join(dataDir, 'repo', 'PLAN.md'))).toBe(false);

  // The shell really ran the tests: failing on the first version, passing after the fix.
  const shellRuns = ofType(events, 'tool.result', 'developer').filter((r) => r.tool === 'shell__run_command');
  expect(shellRuns).toHaveLength(3);
  expect(String(shellRuns[0]!.result)).toContain('exit code 1');
  expect(String(shellRuns[2]!.result)).toContain('exit code 0');
  expect(readFileSync(join(dataDir, 'repo', 'slug.mjs'), 'utf8')).toContain('.toLowerCase()');
}

describe('rawko coding FSM', () => {
  it('scripted: arbiter transitions, tool grants, three failures then the human, then success', async () => {
    const dataDir = root.sub('scripted');
    const run = await runSeed(flow, INPUT, {
      dataDir,
      trust: trusted(dataDir),
      answers: { 'ask-user': GUIDANCE },
    });
    checkRun(run);
    expect(run.events.every((e) => e.scripted === true)).toBe(true);
  });

  it('without the operator’s consent the shell is never started', async () => {
    const dataDir = root.sub('no-consent');
    const run = await runSeed(flow, INPUT, { dataDir, answers: { 'ask-user': [GUIDANCE] } });
    expect(run.result.status).toBe('failed');
    const failed = ofType(run.events, 'node.failed', 'developer');
    expect(failed.length).toBeGreaterThanOrEqual(3);
    expect((failed[0]!.error as { message: string }).message).toContain('switchboard trust');
    expect(ofType(run.events, 'tool.called', 'developer')).toEqual([]);
    expect(existsSync(join(dataDir, 'repo', 'slug.mjs'))).toBe(false);
  });

  it('runs against an OpenAI-compatible server through the openai provider', async () => {
    await withFakeOpenAI(cannedReplies(flow), async (fake) => {
      const dataDir = root.sub('openai');
      const run = await runSeed(openaiFlow(flow, fake.url), INPUT, {
        dataDir,
        trust: trusted(dataDir),
        answers: { 'ask-user': GUIDANCE },
        allowLocalModels: true,
      });
      expectRequestsMatch([run.events], fake);
      checkRun(run);
      expect(run.events.some((e) => e.scripted)).toBe(false);
    });
  });
});
