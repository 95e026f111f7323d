/**
 * `GET /api/attach` (WebSocket): where `switchboard run FLOW --attach URL` streams a headless
 * run. The request gate (guard.ts) has already checked the token and the Origin. The protocol,
 * JSON text frames:
 *
 *   → { type: "hello", protocol: 1, host, localRunId, flow, input }        a new run
 *   → { type: "hello", protocol: 1, host, localRunId, resume: { runId, key } }  its process again
 *   ← { type: "welcome", runId, key?, ackSeq, flowKnown, limits: { maxBatch, messagesPerSecond } }
 *   → { type: "events", events: [RunEvent…] }   seq contiguous after ackSeq, runId = localRunId
 *   ← { type: "ack", seq }                     every event up to seq is on the server's disk
 *   ← { type: "command", command }             pause, resume, step, cancel, inject, answer, breakpoint
 *   ← { type: "error", code, message }         then the connection closes (4400, 4403, 4409, 4413, 4429)
 *
 * Nothing but a hello is taken before the welcome, and a connection owns exactly the run it was
 * welcomed to.
 */
import { hostname } from 'node:os';
import { MAX_ID_LENGTH } from '@switchboard/schemas';
import type { FastifyInstance } from 'fastify';
import type { RawData, WebSocket } from 'ws';
import { RUN_ID_RE } from '../store/store.js';
import { AttachProtocolError, LOCAL_RUN_ID_RE } from './attach-events.js';
import type { AttachConnection, AttachedRuns } from './attach-host.js';

export const ATTACH_PROTOCOL = 1;

/** Close codes by refusal (4000–4999 are the application's). */
const CLOSE_FOR: ReadonlyMap<string, number> = new Map([
  ['not-your-run', 4403],
  ['run-abandoned', 4409],
  ['run-ended', 4409],
  ['too-large', 4413],
  ['rate-limited', 4429],
  ['too-many-runs', 4429],
  ['going-away', 1001],
]);

/** A ping this often; a process that answers none of two is taken as gone (detached). */
const HEARTBEAT_MS = 30_000;

/** How long a connection may stay without a hello. */
const HELLO_TIMEOUT_MS = 10_000;

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function str(v: unknown, what: string, max: number): string {
  if (typeof v !== 'string' || v.length === 0 || v.length > max)
    throw new AttachProtocolError(
      'bad-message',
      `hello: "${what}" must be a string of 1 to ${max} characters`,
    );
  return v;
}

export function registerAttachRoute(app: FastifyInstance, attached: AttachedRuns): void {
  app.get(
    '/api/attach',
    {
      websocket: true,
      schema: { summary: 'Attach a headless run: stream its events, take commands (WebSocket)' },
    },
    (socket: WebSocket, req) => {
      const conn: AttachConnection = {
        send: (msg) => {
          if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(msg));
        },
        close: (code, reason) => {
          if (socket.readyState === socket.OPEN || socket.readyState === socket.CONNECTING)
            socket.close(code, reason.slice(0, 120));
        },
      };
      let runId: string | undefined;
      let greeting = false;
      const refuse = (e: unknown) => {
        const code = e instanceof AttachProtocolError ? e.code : 'internal';
        const message =
          e instanceof AttachProtocolError
            ? e.message
            : `the server could not take this: ${(e as Error).message}`;
        if (!(e instanceof AttachProtocolError))
          req.log.error({ err: (e as Error).message }, 'attach failed');
        conn.send({ type: 'error', code, message });
        conn.close(CLOSE_FOR.get(code) ?? (code === 'internal' ? 1011 : 4400), `${code}: ${message}`);
      };
      const helloTimer = setTimeout(
        () => refuse(new AttachProtocolError('bad-message', `no hello within ${HELLO_TIMEOUT_MS / 1000} s`)),
        HELLO_TIMEOUT_MS,
      );
      let alive = true;
      const beat = setInterval(() => {
        if (!alive) return void socket.terminate();
        alive = false;
        socket.ping();
      }, HEARTBEAT_MS);
      beat.unref?.();
      socket.on('pong', () => {
        alive = true;
      });
      socket.on('close', () => {
        clearInterval(beat);
        clearTimeout(helloTimer);
        if (runId !== undefined) attached.disconnected(runId, conn);
      });
      socket.on('message', (data: RawData, isBinary: boolean) => {
        const bytes = Array.isArray(data)
          ? data.reduce((n, b) => n + b.length, 0)
          : (data as Buffer | ArrayBuffer).byteLength;
        try {
          if (isBinary)
            throw new AttachProtocolError('bad-message', 'binary messages are not accepted; send JSON text');
          let msg: unknown;
          try {
            msg = JSON.parse(data.toString());
          } catch {
            throw new AttachProtocolError('bad-message', 'not JSON');
          }
          if (!isObj(msg) || typeof msg.type !== 'string')
            throw new AttachProtocolError(
              'bad-message',
              'expected { "type": "hello" | "events" | "ping", … }',
            );
          if (msg.type === 'ping') return conn.send({ type: 'pong' });
          if (msg.type === 'hello') {
            if (runId !== undefined || greeting)
              throw new AttachProtocolError('bad-message', 'one hello per connection');
            greeting = true;
            clearTimeout(helloTimer);
            void hello(msg).then((id) => {
              runId = id;
            }, refuse);
            return;
          }
          if (msg.type === 'events') {
            if (runId === undefined)
              throw new AttachProtocolError('bad-message', 'events before the welcome');
            attached.events(runId, msg.events, bytes);
            return;
          }
          throw new AttachProtocolError(
            'bad-message',
            `unknown message type ${JSON.stringify(msg.type).slice(0, 60)}`,
          );
        } catch (e) {
          refuse(e);
        }
      });

      async function hello(msg: Record<string, unknown>): Promise<string> {
        if (msg.protocol !== ATTACH_PROTOCOL)
          throw new AttachProtocolError(
            'bad-message',
            `hello: this server speaks attach protocol ${ATTACH_PROTOCOL}, not ${JSON.stringify(msg.protocol)}`,
          );
        const localRunId = str(msg.localRunId, 'localRunId', 64);
        if (!LOCAL_RUN_ID_RE.test(localRunId))
          throw new AttachProtocolError(
            'bad-message',
            'hello: "localRunId" may hold letters, digits, _ and - only',
          );
        const address = req.ip ?? req.socket.remoteAddress ?? 'unknown';
        let s: Awaited<ReturnType<AttachedRuns['create']>>;
        if (msg.resume !== undefined) {
          const r = msg.resume;
          if (!isObj(r))
            throw new AttachProtocolError('bad-message', 'hello: "resume" must be { runId, key }');
          const id = str(r.runId, 'resume.runId', 64);
          if (!RUN_ID_RE.test(id))
            throw new AttachProtocolError('bad-message', 'hello: "resume.runId" is not a run id');
          s = await attached.reattach(conn, {
            runId: id,
            key: str(r.key, 'resume.key', 100),
            localRunId,
            address,
          });
        } else {
          const host = str(msg.host, 'host', 200).replace(/[^\x20-\x7e]/g, '?');
          const flow = await checkedFlow(msg.flow);
          s = await attached.create(conn, { flow, input: msg.input ?? null, localRunId, host, address });
        }
        // The socket may have closed while the run was recorded: the run is then detached.
        if (socket.readyState !== socket.OPEN) {
          attached.disconnected(s.runId, conn);
          return s.runId;
        }
        conn.send({
          type: 'welcome',
          runId: s.runId,
          ...(s.key ? { key: s.key } : {}),
          ackSeq: s.ackSeq,
          flowKnown: s.flowKnown,
          // What a message may hold and how often: the client paces itself by them.
          limits: {
            maxBatch: attached.limits.maxBatch,
            messagesPerSecond: attached.limits.messagesPerSecond,
          },
          ...(s.flowStored ? { flowStored: true } : {}),
          server: hostname(),
        });
        return s.runId;
      }
    },
  );
}

/** The hello's flow, through the one validator (the same verdict as a REST write). */
async function checkedFlow(raw: unknown) {
  if (!isObj(raw)) throw new AttachProtocolError('bad-message', 'hello: "flow" must be a flow document');
  const { validate } = await import('@switchboard/nodes');
  const v = validate(raw);
  if (!v.ok || !v.flow) {
    const first = v.errors[0];
    throw new AttachProtocolError(
      'flow-invalid',
      `hello: the flow is invalid: ${first ? `${first.path || '/'}: ${first.message}` : 'unknown problem'}${v.errors.length > 1 ? ` (and ${v.errors.length - 1} more)` : ''}`,
    );
  }
  if (v.flow.id.length > MAX_ID_LENGTH)
    throw new AttachProtocolError('flow-invalid', 'hello: the flow id is too long');
  return v.flow;
}
