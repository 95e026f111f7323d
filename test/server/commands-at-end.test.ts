/**
 * A command that reaches a run after its final event — while the run manager is still closing
 * the run's log and writing its index entry — is refused by name (409 `not-live`, like a command
 * to a run that has finished), is never acknowledged, and changes nothing: the record ends as
 * the run did and the run settles. The window is held open deterministically: the test's store
 * finishes closing the log, then waits for the test before the run manager may go on.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RunNotLiveError } from '../../runtime/src/server/run-manager.js';
import { simpleFlow, testServer, until } from './helpers.js';

type S = Awaited<ReturnType<typeof testServer>>;
let s: S;
let release: () => void = () => {};
beforeEach(async () => {
  s = await testServer();
});
afterEach(async () => {
  release();
  await s.close();
});

const json = (body: unknown) => ({
  payload: JSON.stringify(body),
  headers: { 'content-type': 'application/json' },
});

/** Holds every run's end between its log's close (final event durable) and the rest of it. */
function holdRunEnds(): { held: Set<string> } {
  const held = new Set<string>();
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const store = s.store;
  const closeLog = store.closeLog.bind(store);
  store.closeLog = async (runId: string) => {
    await closeLog(runId);
    held.add(runId);
    await gate;
  };
  return { held };
}

describe('commands to a run that is ending', () => {
  it('are refused by name after the final event, acknowledged never, and leave the record as the run ended', async () => {
    const { held } = holdRunEnds();
    const r = await s.req({
      method: 'POST',
      url: '/api/runs',
      ...json({ flow: simpleFlow('ending'), input: 'go' }),
    });
    expect(r.statusCode).toBe(201);
    const id: string = r.json().run.id;
    // The final event is durable and the entry says completed; the run manager still hosts the run.
    await until(() => held.has(id), 'the log closed');
    expect(s.store.catalog.data.runs[id]?.status).toBe('completed');
    expect(s.runs.isLive(id)).toBe(true);

    for (const cmd of [
      { type: 'pause' },
      { type: 'resume' },
      { type: 'step' },
      { type: 'cancel', reason: 'late' },
      { type: 'inject', text: 'late' },
      { type: 'answer', nodeId: 'writer', answer: 'late' },
    ]) {
      const res = await s.req({ method: 'POST', url: `/api/runs/${id}/commands`, ...json(cmd) });
      expect({ cmd: cmd.type, status: res.statusCode }).toEqual({ cmd: cmd.type, status: 409 });
      expect(res.json().error).toEqual({ code: 'not-live', message: `run ${id} is completed, not live` });
    }
    // The run manager's own API says the same.
    expect(() => s.runs.command(id, { type: 'pause' })).toThrow(RunNotLiveError);
    expect(() => s.runs.command(id, { type: 'pause' })).toThrow(`run ${id} is completed, not live`);

    release();
    const rec = await s.runs.settled(id);
    expect(rec).toMatchObject({ status: 'completed', output: 'the draft' });
    expect(rec?.pausedBy).toBeUndefined();
    expect(s.runs.isLive(id)).toBe(false);
    const events = (await s.req({ method: 'GET', url: `/api/runs/${id}/events` })).json().events as {
      type: string;
      seq: number;
    }[];
    expect(events.at(-1)?.type).toBe('run.completed');
    expect(events.filter((e) => /^run\.(paused|resumed|cancelled|failed)$/.test(e.type))).toEqual([]);
    expect(rec?.lastSeq).toBe(events.at(-1)?.seq);
    // After the end, the same refusal.
    const after = await s.req({
      method: 'POST',
      url: `/api/runs/${id}/commands`,
      ...json({ type: 'pause' }),
    });
    expect(after.statusCode).toBe(409);
    expect(after.json().error.code).toBe('not-live');
  });

  it('a run that ended by a cancel refuses a second one by name, with its own status', async () => {
    const { held } = holdRunEnds();
    const slow = {
      ...simpleFlow('slow'),
      models: {
        default: { provider: 'scripted', script: [{ node: 'writer', text: 'x' }], latencyMs: 60_000 },
      },
    };
    const r = await s.req({ method: 'POST', url: '/api/runs', ...json({ flow: slow, input: 'go' }) });
    const id: string = r.json().run.id;
    await until(
      async () => (await s.req({ method: 'GET', url: `/api/runs/${id}` })).json().run.status === 'running',
      'running',
    );
    const first = await s.req({
      method: 'POST',
      url: `/api/runs/${id}/commands`,
      ...json({ type: 'cancel' }),
    });
    expect(first.statusCode).toBe(202);
    await until(() => held.has(id), 'the log closed');
    const second = await s.req({
      method: 'POST',
      url: `/api/runs/${id}/commands`,
      ...json({ type: 'cancel' }),
    });
    expect(second.statusCode).toBe(409);
    expect(second.json().error).toEqual({ code: 'not-live', message: `run ${id} is cancelled, not live` });
    release();
    expect((await s.runs.settled(id))?.status).toBe('cancelled');
  });
});
