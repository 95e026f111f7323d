import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { type AcpAgent, AcpError, createAcpAgent } from './client.js';

const FIXTURE = fileURLToPath(new URL('./testing/fixture-agent.mjs', import.meta.url));
const agents: AcpAgent[] = [];

function fixture(extra: Partial<Parameters<typeof createAcpAgent>[0]> = {}) {
  const a = createAcpAgent({ command: process.execPath, args: [FIXTURE], cancelGraceMs: 1_000, ...extra });
  agents.push(a);
  return a;
}

/** Whether a process is still alive (signal 0 only checks). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.close()));
});

describe('ACP client against a real agent process', () => {
  it('prompts and streams the reply', async () => {
    const a = fixture();
    const chunks: string[] = [];
    const result = await a.prompt('echo hello from switchboard', { onUpdate: (t) => chunks.push(t) });
    expect(result).toEqual({ text: 'You said: hello from switchboard', stopReason: 'end_turn' });
    expect(chunks.length).toBeGreaterThan(2);
    expect(chunks.join('')).toBe(result.text);
  });

  it('keeps one process and session across prompts, one turn at a time', async () => {
    const a = fixture();
    const [one, two, three] = await Promise.all([a.prompt('count'), a.prompt('count'), a.prompt('count')]);
    expect([one.text, two.text, three.text]).toEqual(['1', '2', '3']);
    const pid = a.pid!;
    await a.prompt('echo again');
    expect(a.pid).toBe(pid);
  });

  it('answers permission requests through the grant callback', async () => {
    const a = fixture();
    const asked: Array<[string, unknown]> = [];
    const requestPermission = async (tool: string, args: unknown) => {
      asked.push([tool, args]);
      return tool === 'read_file';
    };
    const allowed = await a.prompt('tool read_file {"path": "notes.md"}', { requestPermission });
    expect(allowed.text).toBe('tool read_file allowed');
    const denied = await a.prompt('tool delete_everything {"path": "/"}', { requestPermission });
    expect(denied.text).toBe('tool delete_everything denied');
    expect(asked).toEqual([
      ['read_file', { path: 'notes.md' }],
      ['delete_everything', { path: '/' }],
    ]);
    // No callback: refused.
    expect((await a.prompt('tool read_file {}')).text).toBe('tool read_file denied');
  });

  it('reports tool calls as session updates', async () => {
    const a = fixture();
    const kinds: string[] = [];
    await a.prompt('tool x {}', { onSessionUpdate: (u) => kinds.push(u.sessionUpdate) });
    expect(kinds).toContain('tool_call');
    expect(kinds).toContain('agent_message_chunk');
  });

  it('spawns with a minimal environment: no model keys, no server token', async () => {
    process.env.OPENAI_API_KEY = 'sk-should-not-leak';
    process.env.SWITCHBOARD_TOKEN = 'secret-token';
    try {
      const a = fixture({ env: { FLOW_NAMED_VAR: 'yes' } });
      const names = JSON.parse((await a.prompt('env')).text) as string[];
      expect(names).toContain('FLOW_NAMED_VAR');
      expect(names).not.toContain('OPENAI_API_KEY');
      expect(names).not.toContain('SWITCHBOARD_TOKEN');
      const allowed = new Set(['PATH', 'HOME', 'LANG', 'LC_ALL', 'TMPDIR', 'TEMP', 'TMP', 'FLOW_NAMED_VAR']);
      // Node itself may add a few of its own (none of ours).
      expect(names.filter((n) => !allowed.has(n) && !n.startsWith('NODE_') && n !== 'LC_CTYPE')).toEqual([]);
    } finally {
      delete process.env.OPENAI_API_KEY;
      delete process.env.SWITCHBOARD_TOKEN;
    }
  });

  it('does not use a shell: metacharacters in arguments stay literal', async () => {
    const a = createAcpAgent({
      command: process.execPath,
      args: [FIXTURE, '; echo pwned > /tmp/sb-acp-pwned'],
    });
    agents.push(a);
    const result = await a.prompt('echo safe');
    expect(result.text).toBe('You said: safe');
  });

  it('cancels a turn with session/cancel', async () => {
    const a = fixture();
    const controller = new AbortController();
    let chunks = 0;
    const pending = a.prompt('slow', {
      signal: controller.signal,
      onUpdate: () => {
        if (++chunks === 3) controller.abort();
      },
    });
    const started = Date.now();
    await expect(pending).rejects.toMatchObject({ code: 'cancelled' });
    expect(Date.now() - started).toBeLessThan(5_000);
    // The process survives a cooperative cancel and takes the next prompt.
    expect((await a.prompt('echo after')).text).toBe('You said: after');
  });

  it('kills an agent that ignores the cancel, and starts a new one for the next prompt', async () => {
    const a = fixture();
    const controller = new AbortController();
    let firstPid = 0;
    const pending = a.prompt('ignore-cancel', {
      signal: controller.signal,
      onUpdate: () => {
        if (!firstPid) {
          firstPid = a.pid!;
          controller.abort();
        }
      },
    });
    await expect(pending).rejects.toMatchObject({ code: 'cancelled' });
    await expect.poll(() => alive(firstPid), { timeout: 5_000 }).toBe(false);
    expect((await a.prompt('echo again')).text).toBe('You said: again');
    expect(a.pid).not.toBe(firstPid);
  });

  it('a prompt that exceeds its timeout fails as a timeout', async () => {
    const a = fixture();
    await expect(a.prompt('ignore-cancel', { timeoutMs: 300 })).rejects.toMatchObject({ code: 'timeout' });
  });

  it('an agent that dies mid-turn gives a typed error with its exit status', async () => {
    const a = fixture();
    const err = await a.prompt('crash').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AcpError);
    expect(err).toMatchObject({ code: 'exited' });
    expect((err as Error).message).toMatch(/code 3/);
    expect((await a.prompt('echo revived')).text).toBe('You said: revived');
  });

  it('keeps the tail of stderr for diagnostics', async () => {
    const a = fixture();
    await a.prompt('stderr');
    await expect.poll(() => a.stderr(), { timeout: 2_000 }).toContain('a diagnostic line');
  });

  it('a command that does not exist fails with a spawn error', async () => {
    const a = createAcpAgent({ command: '/nonexistent/acp-agent' });
    agents.push(a);
    await expect(a.prompt('hi')).rejects.toMatchObject({ code: 'spawn' });
  });

  it('a process that does not speak ACP fails to start within the start timeout', async () => {
    const a = createAcpAgent({
      command: process.execPath,
      args: ['-e', 'setInterval(() => {}, 1000)'],
      startTimeoutMs: 500,
    });
    agents.push(a);
    await expect(a.prompt('hi')).rejects.toMatchObject({ code: 'timeout' });
  });

  it('close ends the process', async () => {
    const a = fixture();
    await a.prompt('echo x');
    const pid = a.pid!;
    await a.close();
    expect(alive(pid)).toBe(false);
    await expect(a.prompt('echo y')).rejects.toMatchObject({ code: 'closed' });
  });
});
