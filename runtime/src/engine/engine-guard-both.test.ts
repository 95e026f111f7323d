/**
 * One guard for both sides of a turn (`when: "both"`): the speaker (mic, rate) is checked before
 * the model is called, the message (schema, length, patterns) after it; and every mic grant and
 * release is an event.
 */
import { describe, expect, it } from 'vitest';
import { agent, collectRun, edge, flow, node, recordingModels } from './testing/index.js';

const SCHEMA = { type: 'object', required: ['ok'] };

/** start → decider (maybe granting the mic to a) → a → end, `a` observed by one `both` guard. */
function gated(grantMic: boolean, script: unknown[]) {
  return flow(
    [
      node('start', 'start'),
      node('d', 'decider', { strategy: 'rules', default: 'd-a', grantMic }),
      agent('a'),
      node('g', 'observer', { type: 'guard', when: 'both', micGrant: true, schema: SCHEMA, maxRetries: 1 }),
      node('end', 'end'),
    ],
    [
      edge('start', 'd'),
      edge('d', 'a', 'handover', undefined, 'd-a'),
      edge('a', 'end'),
      edge('g', 'a', 'observe'),
    ],
    script,
  );
}

const fired = (events: { type: string }[]) =>
  events.filter((e) => e.type === 'observer.fired') as unknown as Array<{
    action: string;
    detail: { reason: string; when?: string; attempt?: number };
  }>;

describe('a guard with when: "both"', () => {
  it('refuses a speaker without the mic before any model call', async () => {
    const { factory, requests } = recordingModels();
    const { result, events } = await collectRun(gated(false, ['{"ok": true}']), 'x', { models: factory });
    expect(result.status).toBe('completed');
    expect(requests.filter((r) => r.nodeId === 'a')).toHaveLength(0);
    expect(fired(events).map((e) => [e.action, e.detail.when])).toEqual([['block', 'before']]);
    expect(fired(events)[0]!.detail.reason).toBe('"a" was not granted the mic');
  });

  it('lets the holder speak and checks its message against the schema after the turn', async () => {
    const { factory, requests } = recordingModels();
    const { result, events } = await collectRun(gated(true, ['just prose', '{"ok": true}']), 'x', {
      models: factory,
    });
    expect(result.output).toEqual({ ok: true });
    expect(requests.filter((r) => r.nodeId === 'a')).toHaveLength(2);
    const f = fired(events);
    expect(f.map((e) => e.action)).toEqual(['retry']);
    expect(f[0]!.detail.reason).toBe('the message is not JSON');
    // The before side passed (the mic is held) without firing; the mic events frame the turn.
    const mic = events.filter((e) => e.type.startsWith('mic.')).map((e) => `${e.type}@${e.nodeId}`);
    expect(mic).toEqual(['mic.granted@a']);
    expect(events.find((e) => e.type === 'mic.granted')).toMatchObject({ holder: 'a', by: 'd' });
  });
});
