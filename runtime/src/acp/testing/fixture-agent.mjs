#!/usr/bin/env node
/**
 * A small ACP agent over stdio, for tests of the ACP client (createAcpAgent). It speaks the real
 * protocol through @agentclientprotocol/sdk. What it does depends on the prompt text:
 *
 * - `echo TEXT`            streams `You said: TEXT` in small chunks, ends the turn.
 * - `tool NAME JSON`       asks the client for permission to run tool NAME with JSON as input,
 *                          then streams `tool NAME allowed` or `tool NAME denied`.
 * - `slow`                 streams a chunk every 50 ms until the client sends session/cancel,
 *                          then ends the turn with stopReason `cancelled`.
 * - `ignore-cancel`        streams slowly and ignores session/cancel (the client must kill it).
 * - `env`                  streams the sorted names of its environment variables as JSON.
 * - `crash`                streams one chunk, then exits with code 3 mid-turn.
 * - `stderr`               writes a line to stderr, then answers `ok`.
 * - `count`                streams the number of prompts this process has answered so far.
 * Anything else is echoed.
 */
import { Readable, Writable } from 'node:stream';
import { agent, methods, ndJsonStream, PROTOCOL_VERSION } from '@agentclientprotocol/sdk';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const cancelled = new Set();
let prompts = 0;

async function say(client, sessionId, text) {
  await client.notify(methods.client.session.update, {
    sessionId,
    update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } },
  });
}

async function stream(client, sessionId, text) {
  for (let i = 0; i < text.length; i += 6) await say(client, sessionId, text.slice(i, i + 6));
}

const app = agent({ name: 'fixture-agent' })
  .onRequest(methods.agent.initialize, () => ({
    protocolVersion: PROTOCOL_VERSION,
    agentCapabilities: { loadSession: false },
    agentInfo: { name: 'fixture-agent', version: '1.0.0' },
  }))
  .onRequest(methods.agent.session.new, () => ({ sessionId: `s-${process.pid}-${Date.now()}` }))
  .onNotification(methods.agent.session.cancel, ({ params }) => {
    cancelled.add(params.sessionId);
  })
  .onRequest(methods.agent.session.prompt, async ({ params, client }) => {
    prompts++;
    const { sessionId } = params;
    cancelled.delete(sessionId);
    const text = params.prompt
      .filter((b) => b.type === 'text')
      .map((b) => b.text)
      .join('');
    const [word, ...rest] = text.trim().split(' ');
    switch (word) {
      case 'echo':
        await stream(client, sessionId, `You said: ${rest.join(' ')}`);
        break;
      case 'tool': {
        const [name, ...json] = rest;
        const input = json.length ? JSON.parse(json.join(' ')) : {};
        await client.notify(methods.client.session.update, {
          sessionId,
          update: {
            sessionUpdate: 'tool_call',
            toolCallId: 'tc1',
            title: name,
            kind: 'other',
            status: 'pending',
            rawInput: input,
          },
        });
        const answer = await client.request(methods.client.session.requestPermission, {
          sessionId,
          toolCall: { toolCallId: 'tc1', title: name, name, rawInput: input },
          options: [
            { optionId: 'yes', name: 'Allow', kind: 'allow_once' },
            { optionId: 'no', name: 'Reject', kind: 'reject_once' },
          ],
        });
        const allowed = answer.outcome.outcome === 'selected' && answer.outcome.optionId === 'yes';
        await say(client, sessionId, `tool ${name} ${allowed ? 'allowed' : 'denied'}`);
        break;
      }
      case 'slow':
      case 'ignore-cancel':
        for (let i = 0; i < 400; i++) {
          if (word === 'slow' && cancelled.has(sessionId)) return { stopReason: 'cancelled' };
          await say(client, sessionId, `.${i}`);
          await sleep(50);
        }
        break;
      case 'env':
        await say(client, sessionId, JSON.stringify(Object.keys(process.env).sort()));
        break;
      case 'crash':
        await say(client, sessionId, 'about to crash');
        await sleep(20);
        process.exit(3);
        break;
      case 'stderr':
        process.stderr.write('fixture agent: a diagnostic line\n');
        await say(client, sessionId, 'ok');
        break;
      case 'count':
        await say(client, sessionId, String(prompts));
        break;
      default:
        await stream(client, sessionId, text);
    }
    return { stopReason: 'end_turn' };
  });

const connection = app.connect(ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
connection.closed.then(() => process.exit(0));
