import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approveFlow } from '../mcp/consent.js';
import { TrustStore } from '../mcp/trust.js';
import { agent, collectRun, edge, flow, node } from './testing/index.js';

const FIXTURE = fileURLToPath(new URL('../acp/testing/fixture-agent.mjs', import.meta.url));
const backend = { type: 'acp', command: process.execPath, args: [FIXTURE] };
let home: string;
let saved: string | undefined;

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), 'sb-acp-home-'));
  saved = process.env.SWITCHBOARD_HOME;
  process.env.SWITCHBOARD_HOME = home;
});
afterAll(() => {
  if (saved === undefined) delete process.env.SWITCHBOARD_HOME;
  else process.env.SWITCHBOARD_HOME = saved;
  rmSync(home, { recursive: true, force: true });
});

const acpFlow = () =>
  flow(
    [node('start', 'start'), agent('ext', { prompt: [], backend }), agent('after'), node('end', 'end')],
    [edge('start', 'ext'), edge('ext', 'after'), edge('after', 'end')],
    [{ node: 'after', text: 'done' }],
  );

describe('ACP-backed agents', () => {
  it('refuses to spawn a command the operator has not approved', async () => {
    const { result, events } = await collectRun(acpFlow(), 'echo hi');
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('consent_required');
    expect(result.error?.message).toContain('not approved by the local operator for flow');
    expect(events.find((e) => e.type === 'node.failed')).toMatchObject({
      nodeId: 'ext',
      error: { code: 'consent_required' },
    });
  });

  it('an approved agent process answers the turn; its streamed text becomes model.delta events', async () => {
    approveFlow(new TrustStore(join(home, 'trust.json')), acpFlow());
    const { result, events } = await collectRun(acpFlow(), 'echo hello there');
    expect(result).toMatchObject({ status: 'completed', output: 'done' });
    const msg = events.find((e) => e.type === 'message' && e.nodeId === 'ext') as
      | { message: { content: string } }
      | undefined;
    expect(msg?.message.content).toBe('You said: hello there');
    expect(events.filter((e) => e.type === 'model.delta' && e.nodeId === 'ext').length).toBeGreaterThan(1);
    expect(events.find((e) => e.type === 'turn.completed' && e.nodeId === 'ext')).toMatchObject({
      model: `acp:${process.execPath}`,
    });
  });

  it('an approval belongs to one flow: another flow with the same backend is refused', async () => {
    approveFlow(new TrustStore(join(home, 'trust.json')), acpFlow());
    const other = { ...acpFlow(), id: 'another-flow' };
    const { result } = await collectRun(other, 'echo hi');
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('consent_required');
    expect(result.error?.message).toContain('switchboard trust another-flow');
  });

  it('tool-permission requests outside the grant are denied with a tool.denied event', async () => {
    approveFlow(new TrustStore(join(home, 'trust.json')), acpFlow());
    const { events } = await collectRun(acpFlow(), 'tool format_disk {}');
    expect(events.find((e) => e.type === 'tool.denied')).toMatchObject({
      nodeId: 'ext',
      tool: 'format_disk',
    });
  });
});
