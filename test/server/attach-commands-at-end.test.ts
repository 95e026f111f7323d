/**
 * An attached (headless) run whose process has sent its final event is over: a command that
 * comes then — before that event is durable and the record says so, and after — is refused by
 * name (409 `not-live`, the status the run ended with), never relayed to the process, whose
 * engine would drop it after a 202. Real server, real WebSockets; the window before the final
 * event is durable is held open by holding the run log's durable callback.
 */
import type { RunEvent } from '@switchboard/schemas';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { runFlow } from '../../runtime/src/engine/index.js';
import { createServer } from '../../runtime/src/server/index.js';
import { simpleFlow, tempDir, until } from './helpers.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

type Durable = (events: RunEvent[], lines: never[]) => void;

describe('commands to an attached run after its final event', () => {
  it('are refused by name before and after the final event is durable, and never reach the process', async () => {
    const s = await createServer({ dataDir: tempDir('sb-attach-end-').dir, editorDir: false, port: 0 });
    const { port } = await s.listen();
    cleanups.push(() => s.close());
    const base = `http://127.0.0.1:${port}`;

    // Holds back the durable callback of any batch with a final event until released.
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    cleanups.push(() => release());
    let holding = false;
    const openLog = s.store.openLog.bind(s.store);
    s.store.openLog = (runId: string) => {
      const opened = openLog(runId);
      let inner: Durable | undefined;
      Object.defineProperty(opened.commit, 'onDurable', {
        configurable: true,
        get: () => inner,
        set: (f: Durable) => {
          inner = (events, lines) => {
            if (!events.some((e) => e.type === 'run.completed')) return f(events, lines);
            holding = true;
            void gate.then(() => f(events, lines));
          };
        },
      });
      return opened;
    };

    const ws = new WebSocket(`ws://127.0.0.1:${port}/api/attach`);
    const msgs: Array<Record<string, unknown>> = [];
    ws.on('message', (d) => msgs.push(JSON.parse(String(d))));
    cleanups.push(() => ws.close());
    await new Promise((r) => ws.once('open', r));
    const flow = simpleFlow('attached-end');
    ws.send(
      JSON.stringify({
        type: 'hello',
        protocol: 1,
        host: 'laptop-7',
        localRunId: 'run_l1',
        flow,
        input: 'go',
      }),
    );
    const welcome = await until(() => msgs.find((m) => m.type === 'welcome'), 'welcome');
    const runId = String(welcome.runId);
    const events: RunEvent[] = [];
    await runFlow(flow, 'go', { runId: 'run_l1', onEvent: (e) => events.push(e) }).result;
    expect(events.at(-1)?.type).toBe('run.completed');

    const command = (body: unknown) =>
      fetch(`${base}/api/runs/${runId}/commands`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: base },
        body: JSON.stringify(body),
      });
    // Live: a command is relayed (the control that this path reaches the process at all).
    ws.send(JSON.stringify({ type: 'events', events: events.slice(0, -1) }));
    await until(() => msgs.some((m) => m.type === 'ack' && m.seq === events.length - 1), 'acks');
    expect((await command({ type: 'inject', text: 'early' })).status).toBe(202);
    await until(() => msgs.some((m) => m.type === 'command'), 'the command relayed');

    ws.send(JSON.stringify({ type: 'events', events: events.slice(-1) }));
    await until(() => holding, 'the final event held before it is durable');
    expect(s.store.catalog.data.runs[runId]?.status).not.toBe('completed');
    expect(s.runs.isLive(runId)).toBe(true);
    for (const cmd of [
      { type: 'pause' },
      { type: 'resume' },
      { type: 'step' },
      { type: 'cancel', reason: 'late' },
      { type: 'inject', text: 'late' },
      { type: 'answer', nodeId: 'writer', answer: 'late' },
    ]) {
      const res = await command(cmd);
      expect({ cmd: cmd.type, status: res.status }).toEqual({ cmd: cmd.type, status: 409 });
      expect(((await res.json()) as { error: unknown }).error).toEqual({
        code: 'not-live',
        message: `run ${runId} is completed, not live`,
      });
    }

    release();
    await until(() => s.store.catalog.data.runs[runId]?.status === 'completed', 'recorded completed');
    const after = await command({ type: 'pause' });
    expect(after.status).toBe(409);
    expect(((await after.json()) as { error: { code: string } }).error.code).toBe('not-live');
    // Only the command sent while the run was live reached the process.
    expect(msgs.filter((m) => m.type === 'command').map((m) => m.command)).toEqual([
      { type: 'inject', text: 'early' },
    ]);
  });
});
