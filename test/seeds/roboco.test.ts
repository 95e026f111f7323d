/**
 * RoboCo document writer (flows/roboco.json): a group chat whose LLM manager picks the next
 * speaker, agents working on the built-in `documents` MCP server, a reviewer who sends a section
 * back, a human user proxy, and pause + redirect commands arriving mid-run.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunEvent } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import {
  cannedReplies,
  expectRequestsMatch,
  indexOf,
  ofType,
  openaiFlow,
  runSeed,
  seedSuite,
  speakers,
  withFakeOpenAI,
} from './helpers.js';

const { flow, root } = seedSuite('roboco');

const INPUT = 'Write a short brief on AI ethics';
const ANSWERS = { 'user-proxy': 'Approved, finish it.' };
const REDIRECT = 'Redirect: focus the key issues on hiring decisions.';
const ORDER = ['planner', 'researcher', 'writer', 'reviewer', 'writer', 'reviewer', 'user-proxy', 'writer'];

/** Which tools each agent may use, from its tools edge. */
const allowed = new Map(
  flow.edges
    .filter((e) => e.kind === 'tools')
    .map((e) => [e.target, (e.config as { allow: string[] }).allow.map((t) => `docs__${t}`)]),
);

function checkDocument(dataDir: string): void {
  const doc = join(dataDir, 'documents', 'ai-ethics');
  const outline = JSON.parse(readFileSync(join(doc, 'outline.json'), 'utf8')) as {
    sections: Array<{ id: string; title: string }>;
  };
  expect(outline.sections.map((s) => s.id)).toEqual(['intro', 'key-issues', 'recommendations']);
  outline.sections.forEach((s, i) => {
    const file = join(doc, 'sections', `${String(i + 1).padStart(2, '0')}_${s.id}.md`);
    expect(existsSync(file), file).toBe(true);
    expect(readFileSync(file, 'utf8').startsWith(`## ${s.title}\n`)).toBe(true);
  });
  // The section the reviewer sent back holds the revision, not the first draft.
  expect(readFileSync(join(doc, 'sections', '03_recommendations.md'), 'utf8')).toContain('owner:');
  const summary = JSON.parse(readFileSync(join(doc, '_document_summary.json'), 'utf8'));
  expect(summary.summary).toContain('bias, privacy and accountability');
  expect(JSON.parse(readFileSync(join(doc, 'metadata.json'), 'utf8')).status).toBe('final');
}

function checkToolsWithinGrants(events: readonly RunEvent[]): void {
  const calls = ofType(events, 'tool.called');
  expect(calls.length).toBeGreaterThan(10);
  for (const c of calls) expect(allowed.get(c.nodeId!), `${c.nodeId} → ${c.tool}`).toContain(c.tool);
  expect(ofType(events, 'tool.result').every((r) => r.isError === false)).toBe(true);
  expect(ofType(events, 'tool.denied')).toEqual([]);
}

describe('RoboCo document writer', () => {
  it('scripted: manager picks speakers, the reviewer sends a section back, pause + redirect work, the document is on disk', async () => {
    let pausedAt = -1;
    const run = await runSeed(flow, INPUT, {
      dataDir: root.sub('scripted'),
      answers: ANSWERS,
      onEvent: (e, h) => {
        if (e.type === 'node.completed' && e.nodeId === 'researcher') h.send({ type: 'pause' });
        if (e.type === 'run.paused')
          setTimeout(() => {
            pausedAt = Date.now();
            expect(h.status).toBe('paused');
            h.send({ type: 'inject', text: REDIRECT });
            h.send({ type: 'resume' });
          }, 30);
      },
    });
    const { events, result, requests } = run;
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(String(result.output)).toContain('DOCUMENT COMPLETE');
    expect(events.every((e) => e.scripted === true)).toBe(true);

    // The manager (an LLM turn of the team node) chose every speaker, in this order.
    const picks = ofType(events, 'decision', 'roboco').map((d) => d.choice);
    expect(picks).toEqual(ORDER);
    expect(speakers(events)).toEqual(ORDER);
    expect(ofType(events, 'turn.completed', 'roboco')).toHaveLength(ORDER.length);

    // The reviewer sent Recommendations back; the manager gave the writer another turn, which rewrote it.
    const revise = ofType(events, 'message', 'reviewer')[0]!;
    expect((revise.message as { content: string }).content).toMatch(/^REVISE recommendations:/);
    const back = indexOf(events, 'decision', 'roboco', events.indexOf(revise));
    expect(events[back]).toMatchObject({ choice: 'writer' });
    const rewrite = ofType(events.slice(back), 'tool.called', 'writer')[0]!;
    expect(rewrite).toMatchObject({
      tool: 'docs__write_section_content',
      args: { section_id: 'recommendations' },
    });

    // Pause after the researcher, a redirect injected while paused, then resume.
    expect(pausedAt).toBeGreaterThan(0);
    const paused = events.findIndex((e) => e.type === 'run.paused');
    const resumed = events.findIndex((e) => e.type === 'run.resumed');
    expect(paused).toBeGreaterThan(indexOf(events, 'node.completed', 'researcher'));
    const injected = events.findIndex(
      (e) => e.type === 'message' && (e as { message: { content: string } }).message.content === REDIRECT,
    );
    expect(paused).toBeLessThan(injected);
    expect(injected).toBeLessThan(resumed);
    expect(resumed).toBeLessThan(indexOf(events, 'node.started', 'writer'));
    // Nobody ran while paused, and the manager and the writer both read the redirect afterwards.
    expect(events.slice(paused, resumed).some((e) => e.type === 'turn.started')).toBe(false);
    const managerAfter = requests.filter((r) => r.nodeId === 'roboco')[2]!;
    console.log(
      JSON.stringify(
        requests
          .filter((r) => r.nodeId === 'roboco')
          .map((r) => r.messages.map((m) => m.content.slice(0, 60))),
        null,
        1,
      ),
    );
    expect(managerAfter.messages.some((m) => m.content.includes(REDIRECT))).toBe(true);
    const writerFirst = requests.find((r) => r.nodeId === 'writer')!;
    expect(writerFirst.messages.some((m) => m.content.includes(REDIRECT))).toBe(true);

    // The user proxy asked the person and passed the answer on.
    expect(ofType(events, 'input.requested', 'user-proxy')[0]!.question).toContain('APPROVED');
    expect(ofType(events, 'input.received', 'user-proxy')[0]!.answer).toBe(ANSWERS['user-proxy']);

    // Each agent saw only the document tools its edge grants, and used only those.
    for (const [agent, tools] of allowed) {
      const req = requests.find((r) => r.nodeId === agent)!;
      expect(req.tools.sort()).toEqual([...tools].sort());
    }
    checkToolsWithinGrants(events);
    checkDocument(run.dataDir);
  });

  it('runs against an OpenAI-compatible server through the openai provider', async () => {
    await withFakeOpenAI(cannedReplies(flow), async (fake) => {
      const run = await runSeed(openaiFlow(flow, fake.url), INPUT, {
        dataDir: root.sub('openai'),
        answers: ANSWERS,
        allowLocalModels: true,
      });
      expectRequestsMatch([run.events], fake);
      expect(run.result.status, JSON.stringify(run.result.error)).toBe('completed');
      expect(String(run.result.output)).toContain('DOCUMENT COMPLETE');
      expect(run.events.some((e) => e.scripted)).toBe(false);
      expect(speakers(run.events)).toEqual(ORDER);
      expect(ofType(run.events, 'model.completed').every((e) => String(e.model).startsWith('fake-'))).toBe(
        true,
      );
      // The documents server's tools went over the wire as OpenAI function tools.
      const planner = fake.requests.find((r) =>
        r.body?.tools?.some((t) => t.function.name === 'docs__update_document_outline'),
      );
      expect(planner).toBeDefined();
      checkToolsWithinGrants(run.events);
      checkDocument(run.dataDir);
    });
  });
});
