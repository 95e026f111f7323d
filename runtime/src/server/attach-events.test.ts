/**
 * What the attach endpoint takes from a headless process: every event a real run of each shipped
 * example emits passes (ids rewritten to the server's run, nested runs included), and each kind
 * of bad event is refused naming the event and the field.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Flow, RunEvent } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import { runFlow } from '../engine/index.js';
import { agent, edge, flow, node } from '../engine/testing/index.js';
import { AttachProtocolError, admitEvents, type EventCursor } from './attach-events.js';

const FLOWS = fileURLToPath(new URL('../../../flows/', import.meta.url));

/** Admits a batch as the attach host does: the cursor moves only past a batch taken whole. */
function take(cur: EventCursor, batch: unknown[]): RunEvent[] {
  const out = admitEvents(batch, cur, 1000);
  cur.nextSeq += out.length;
  if (
    out.some((e) => e.runId === cur.runId && /^run\.(completed|failed|cancelled|interrupted)$/.test(e.type))
  )
    cur.ended = true;
  return out;
}

function cursor(f: Flow, localRunId: string): EventCursor {
  return {
    localRunId,
    runId: 'r_server',
    flowId: f.id,
    nextSeq: 1,
    ended: false,
    nodes: new Set(f.nodes.map((n) => n.id)),
    edges: new Set(f.edges.map((e) => e.id)),
  };
}

async function eventsOf(f: Flow, runId: string): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  const answers: Record<string, string> = {};
  for (const n of f.nodes) if (n.kind === 'human') answers[n.id] = 'yes';
  await runFlow(f, 'a question', { runId, answers, humanInput: 'fail', onEvent: (e) => events.push(e) })
    .result;
  return events;
}

describe('admitEvents', () => {
  const files = readdirSync(FLOWS).filter((f) => f.endsWith('.json') && !f.endsWith('.tests.json'));
  it.each(files)('takes every event of a real run of flows/%s', async (file) => {
    const f = JSON.parse(readFileSync(`${FLOWS}${file}`, 'utf8')) as Flow;
    const events = await eventsOf(f, 'run_local');
    const cur = cursor(f, 'run_local');
    const out: RunEvent[] = [];
    for (let i = 0; i < events.length; i += 50) out.push(...take(cur, events.slice(i, i + 50)));
    expect(out.length).toBe(events.length);
    expect(out.map((e) => e.seq)).toEqual(events.map((e) => e.seq));
    for (const e of out) {
      expect(e.runId === 'r_server' || e.runId.startsWith('r_server~')).toBe(true);
      if (e.parentRunId !== undefined) expect(e.parentRunId.startsWith('r_server')).toBe(true);
    }
    expect(cur.ended).toBe(true);
  });

  it('refuses, naming the event and the field: an unknown node, a foreign run, a gap, anything after the end', async () => {
    const f = {
      ...flow(
        [node('start', 'start'), agent('w'), node('end', 'end')],
        [edge('start', 'w'), edge('w', 'end')],
        [{ fallback: true, text: 'ok' }],
      ),
      id: 'f',
    };
    const events = await eventsOf(f, 'run_l');
    const refuse = (batch: unknown[], cur = cursor(f, 'run_l')) => {
      try {
        admitEvents(batch, cur, 1000);
      } catch (e) {
        expect(e).toBeInstanceOf(AttachProtocolError);
        return `${(e as AttachProtocolError).code}: ${(e as Error).message}`;
      }
      return 'taken';
    };
    const ns = events.find((e) => e.type === 'node.started')!;
    expect(refuse([{ ...events[0], flowId: 'other' }])).toMatch(
      /^bad-event: events\[0\] \(run\.started\): flowId "other"/,
    );
    expect(refuse([events[0], { ...ns, seq: 2, nodeId: 'ghost' }])).toMatch(
      /^bad-event: events\[1\] \(node\.started\): \/nodeId "ghost" is not a node of the attached flow/,
    );
    expect(refuse([events[0], { ...events[1], edgeId: 'ghost' }])).toMatch(/\/edgeId "ghost" is not an edge/);
    expect(refuse([{ ...events[0], runId: 'r_other' }])).toMatch(/^not-your-run: events\[0\]/);
    expect(refuse([{ ...events[0], runId: 'run_l~x' }])).toMatch(/^not-your-run/);
    expect(refuse([events[0], events[2]])).toMatch(/^seq-gap: events\[1\] .*seq 3 where 2 was expected/);
    const cur = cursor(f, 'run_l');
    take(cur, events);
    expect(refuse([{ ...events[0], seq: events.length + 1 }], cur)).toMatch(/^run-ended/);
    expect(refuse(events.slice(0, 3), cursor(f, 'run_l'))).toBe('taken');
    // A refused batch moves nothing: the cursor is where it was.
    const c2 = cursor(f, 'run_l');
    refuse([events[0], events[2]], c2);
    expect(c2.nextSeq).toBe(1);
  });
});
