import { getEventListeners } from 'node:events';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { McpConnection } from './connection.js';

let conn: McpConnection | undefined;
afterEach(async () => {
  await conn?.close();
});

function echoServer(): McpServer {
  const s = new McpServer({ name: 'echo', version: '1.0.0' });
  s.registerTool('echo', { inputSchema: { text: z.string() } }, async (a) => ({
    content: [{ type: 'text', text: a.text }],
  }));
  return s;
}

describe('McpConnection.callTool', () => {
  it('leaves no listener on the caller’s signal after a call (a run shares one signal across all its calls)', async () => {
    conn = new McpConnection({ kind: 'builtin', key: 'b', label: 'echo', create: echoServer });
    const run = new AbortController();
    for (let i = 0; i < 30; i++) {
      const r = await conn.callTool('echo', { text: `x${i}` }, { signal: run.signal, timeoutMs: 10_000 });
      expect(r.content).toEqual([{ type: 'text', text: `x${i}` }]);
    }
    expect(getEventListeners(run.signal, 'abort')).toHaveLength(0);
  });

  it('an abort of the caller’s signal still cancels the call in flight', async () => {
    const slow = () => {
      const s = new McpServer({ name: 'slow', version: '1.0.0' });
      s.registerTool('wait', {}, async (extra) => {
        await new Promise((r) => setTimeout(r, 5_000).unref());
        return { content: [{ type: 'text', text: extra.signal.aborted ? 'aborted' : 'done' }] };
      });
      return s;
    };
    conn = new McpConnection({ kind: 'builtin', key: 's', label: 'slow', create: slow });
    const run = new AbortController();
    const p = conn.callTool('wait', {}, { signal: run.signal, timeoutMs: 10_000 });
    setTimeout(() => run.abort(), 100);
    await expect(p).rejects.toMatchObject({ code: 'mcp.cancelled' });
  });
});
