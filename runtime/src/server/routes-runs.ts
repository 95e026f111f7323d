/**
 * Runs: start (a stored flow or an inline one, input, models override), list with filters,
 * get, events after a seq, and commands.
 */
import { type Flow, MAX_ID_LENGTH, type ModelConfigT, type Pin, summarizeNodes } from '@switchboard/schemas';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ForkPlan } from '../cassette/fork.js';
import type { RunCommand } from '../engine/types.js';
import { RUN_STATUSES, type RunRecord } from '../store/catalog.js';
import { RUN_ID_RE, type Store } from '../store/store.js';
import { HttpError } from './errors.js';
import { AUTHOR_HEADER, cleanAuthor } from './flow-lifecycle.js';
import { servedForkPlan } from './fork-plan.js';
import { checkFlow } from './routes-flows.js';
import { RunDigests } from './run-digest.js';
import { type RunManager, RunNotLiveError } from './run-manager.js';

const RUN_ID = { type: 'string', pattern: RUN_ID_RE.source } as const;
const runParams = { type: 'object', properties: { id: RUN_ID }, required: ['id'] } as const;

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Checks a command body and names what is wrong. */
export function parseCommand(body: unknown): RunCommand {
  if (!isObj(body) || typeof body.type !== 'string')
    throw new HttpError(
      400,
      'bad-command',
      'expected { "type": "pause" | "resume" | "cancel" | "step" | "inject" | "answer" | "breakpoint", … }',
    );
  const str = (k: string, required: boolean, max = 100_000): string | undefined => {
    const v = body[k];
    if (v === undefined && !required) return undefined;
    if (typeof v !== 'string' || v.length > max)
      throw new HttpError(400, 'bad-command', `"${k}" must be a string of at most ${max} characters`);
    return v;
  };
  switch (body.type) {
    case 'pause':
    case 'resume':
    case 'step':
      return { type: body.type };
    case 'cancel': {
      const reason = str('reason', false, 1000);
      return reason === undefined ? { type: 'cancel' } : { type: 'cancel', reason };
    }
    case 'inject': {
      const nodeId = str('nodeId', false, MAX_ID_LENGTH);
      const c: RunCommand = { type: 'inject', text: str('text', true)! };
      if (nodeId !== undefined) c.nodeId = nodeId;
      return c;
    }
    case 'answer': {
      const nodeId = str('nodeId', false, MAX_ID_LENGTH);
      const c: RunCommand = { type: 'answer', answer: str('answer', true)! };
      if (nodeId !== undefined) c.nodeId = nodeId;
      return c;
    }
    case 'breakpoint':
      if (typeof body.on !== 'boolean') throw new HttpError(400, 'bad-command', '"on" must be true or false');
      return { type: 'breakpoint', nodeId: str('nodeId', true, MAX_ID_LENGTH)!, on: body.on };
    default:
      throw new HttpError(400, 'bad-command', `unknown command ${JSON.stringify(body.type).slice(0, 60)}`);
  }
}

/** Who a start names, when it names anyone (the editor sends its person's display name). */
function startedBy(req: FastifyRequest): { startedBy?: string } {
  const h = req.headers[AUTHOR_HEADER];
  const name = cleanAuthor(Array.isArray(h) ? h[0] : h);
  return name ? { startedBy: name } : {};
}

interface StartBody {
  flowId?: string;
  flow?: unknown;
  input?: unknown;
  models?: Record<string, ModelConfigT>;
  breakpoints?: string[];
  fromRun?: string;
  at?: string;
  /** false: run without the flow's pins. */
  pins?: boolean;
}

/**
 * `settleFlow` saves a co-editing room's pending edits first, so a run of a stored flow runs what
 * its editors see rather than the last quiet-moment save.
 */
export function registerRunRoutes(
  app: FastifyInstance,
  store: Store,
  runs: RunManager,
  settleFlow: (flowId: string) => Promise<void> = async () => {},
  limits: { maxRuns?: number } = {},
  /** The flow's pins for a run (routes-pins.ts `runPins`); none when not given. */
  pinsFor?: (flow: Flow, fork: ForkPlan | undefined) => Promise<Pin[] | undefined>,
): void {
  const catalog = store.catalog;
  const maxRuns = limits.maxRuns ?? Number.POSITIVE_INFINITY;
  /** Starts admitted but not yet live: counted, so starts that race cannot pass the cap together. */
  let starting = 0;
  /** Takes a run slot or refuses with 429; the caller gives it back (`starting--`) once the run is live or failed to start. */
  const admit = (): void => {
    if (runs.liveCount + starting >= maxRuns)
      throw new HttpError(
        429,
        'too-many-runs',
        `${maxRuns} runs are live, the most this server runs at once (--max-runs); retry when one ends`,
        {},
        { 'retry-after': '5' },
      );
    starting++;
  };
  const digests = new RunDigests(store);
  /** A run as the API lists it: its entry, whether it is live, its path and cost (run-digest.ts). */
  const listed = async (r: RunRecord) => ({ ...r, live: runs.isLive(r.id), ...(await digests.of(r)) });
  /** Scaled out, a run another instance started may be recorded here a moment later (arrived). */
  const getRun = async (id: string) => {
    const r = catalog.data.runs[id] ?? ((await runs.arrived(id)) ? catalog.data.runs[id] : undefined);
    if (!r) throw new HttpError(404, 'not-found', `no run ${id}`);
    return r;
  };

  app.post<{ Body: StartBody }>(
    '/api/runs',
    {
      schema: {
        summary: 'Start a run of a stored flow (flowId) or an inline flow, with input and a models override',
        body: {
          type: 'object',
          properties: {
            flowId: { type: 'string', maxLength: MAX_ID_LENGTH },
            flow: { type: 'object' },
            input: {},
            models: { type: 'object', description: 'Replaces entries of the flow’s `models`' },
            breakpoints: {
              type: 'array',
              maxItems: 1000,
              items: { type: 'string', maxLength: MAX_ID_LENGTH },
              description: 'Node ids the run pauses before, set before its first node starts',
            },
            fromRun: {
              type: 'string',
              maxLength: 64,
              description:
                'Fork this run: the new run replays its recorded state up to `at`, live from there',
            },
            at: { type: 'string', maxLength: 300, description: 'With fromRun: NODE or NODE:TURN (from 1)' },
            pins: {
              type: 'boolean',
              description: "false: run without the flow's pins (GET /api/flows/:id/pins); default true",
            },
          },
        },
      },
    },
    async (req, reply) => {
      const b = req.body;
      if ((b.flowId === undefined) === (b.flow === undefined))
        throw new HttpError(400, 'bad-request', 'give exactly one of "flowId" and "flow"');
      admit();
      try {
        return await startRun(b, reply, req);
      } finally {
        starting--;
      }
    },
  );

  async function startRun(b: StartBody, reply: FastifyReply, req: FastifyRequest) {
    let base: unknown;
    if (b.flowId !== undefined) {
      await settleFlow(b.flowId);
      const rec = catalog.data.flows[b.flowId];
      if (!rec) throw new HttpError(404, 'not-found', `no flow ${b.flowId}`);
      base = rec.flow;
    } else base = b.flow;
    if (b.models !== undefined) {
      if (!isObj(base)) throw new HttpError(400, 'bad-request', '"flow" must be an object');
      base = { ...base, models: { ...(base.models as object), ...b.models } };
    }
    // The override is validated together with the flow, by the same validator.
    const { flow } = checkFlow(base);
    if ((b.fromRun === undefined) !== (b.at === undefined))
      throw new HttpError(400, 'bad-request', '"fromRun" and "at" go together');
    const fork = b.fromRun === undefined ? undefined : await servedForkPlan(store, b.fromRun, b.at);
    if (fork && !(flow as Flow).nodes.some((n) => n.id === fork.at.nodeId))
      throw new HttpError(400, 'bad-fork', `the flow has no node "${fork.at.nodeId}" to fork at`);
    const pins = b.pins === false || !pinsFor ? undefined : await pinsFor(flow as Flow, fork);
    const rec = await runs.start({
      ...(pins ? { pins } : {}),
      flow: flow as Flow,
      // A fork runs on its past run's input unless given another.
      input: b.input ?? (fork ? fork.input : null),
      ...(fork ? { fork } : {}),
      source: 'api',
      ...startedBy(req),
      breakpoints: b.breakpoints,
      validated: true,
    });
    reply.code(201);
    return { run: rec };
  }

  app.get<{ Querystring: { flowId?: string; status?: string; limit?: number; before?: string } }>(
    '/api/runs',
    {
      schema: {
        summary: 'List runs, newest first; filter by flowId and status (comma-separated)',
        querystring: {
          type: 'object',
          properties: {
            flowId: { type: 'string' },
            status: { type: 'string' },
            limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
            before: { type: 'string', description: 'only runs created before this ISO time' },
          },
        },
      },
    },
    async (req) => {
      const q = req.query;
      const statuses = q.status ? new Set(q.status.split(',')) : undefined;
      for (const s of statuses ?? [])
        if (!RUN_STATUSES.has(s)) throw new HttpError(400, 'bad-request', `unknown status ${s}`);
      const list = Object.values(catalog.data.runs)
        .filter(
          (r) =>
            (q.flowId === undefined || r.flowId === q.flowId) &&
            (!statuses || statuses.has(r.status)) &&
            (q.before === undefined || r.createdAt < q.before),
        )
        .sort((a, b) =>
          a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : a.id < b.id ? 1 : -1,
        )
        .slice(0, q.limit ?? 100);
      return { runs: await Promise.all(list.map(listed)) };
    },
  );

  app.get<{ Params: { id: string } }>(
    '/api/runs/:id',
    { schema: { summary: 'A run: status, result, counters', params: runParams } },
    async (req) => {
      return { run: await listed(await getRun(req.params.id)) };
    },
  );

  app.get<{ Params: { id: string }; Querystring: { after?: number; limit?: number } }>(
    '/api/runs/:id/events',
    {
      schema: {
        summary: 'Events of a run after a seq, in order',
        params: runParams,
        querystring: {
          type: 'object',
          properties: {
            after: { type: 'integer', minimum: 0, default: 0 },
            limit: { type: 'integer', minimum: 1, maximum: 10_000, default: 1000 },
          },
        },
      },
    },
    async (req) => {
      const r = await getRun(req.params.id);
      const events = store.readEvents(r.id, req.query.after ?? 0, req.query.limit ?? 1000);
      return { runId: r.id, status: r.status, events, lastSeq: events.at(-1)?.seq ?? req.query.after ?? 0 };
    },
  );

  app.get<{ Params: { id: string } }>(
    '/api/runs/:id/nodes',
    {
      schema: {
        summary:
          'Per-node counters of a run, from its log: status, turns, model calls, tokens, cost (priced models), time, failures',
        params: runParams,
      },
    },
    async (req) => {
      const r = await getRun(req.params.id);
      const spec = await store.readSpec(r.id).catch(() => undefined);
      const events = store.readEvents(r.id);
      const live = runs.isLive(r.id);
      // A live run's running nodes count time up to now; a finished one's, up to its last event.
      const nodes = summarizeNodes(events, spec?.flow.models ?? {}, live ? Date.now() : undefined);
      return { runId: r.id, status: r.status, lastSeq: events.at(-1)?.seq ?? 0, nodes };
    },
  );

  app.post<{ Params: { id: string } }>(
    '/api/runs/:id/commands',
    {
      schema: {
        summary: 'Send a command: pause, resume, cancel, step, inject, answer, breakpoint',
        params: runParams,
        body: { type: 'object', properties: { type: { type: 'string' } }, required: ['type'] },
      },
    },
    async (req, reply) => {
      const r = await getRun(req.params.id);
      const cmd = parseCommand(req.body);
      if (!runs.isLive(r.id) && !runs.hostedElsewhere(r.id)) {
        // A headless run's engine state lives in its process: this server holds only its log.
        if (r.attached)
          throw new HttpError(
            409,
            'run-detached',
            `run ${r.id} ran headless on ${r.attached.host} and is ${r.status}; it cannot be continued on this server (fork it to run it here)`,
          );
        // A run no process hosts (interrupted, or left by a crash) continues from its checkpoint.
        if (
          cmd.type === 'resume' &&
          (r.status === 'interrupted' || !['completed', 'failed', 'cancelled'].includes(r.status))
        ) {
          admit();
          const outcome = await runs.resumeStored(r.id, { allowInterrupted: true }).finally(() => starting--);
          if (outcome !== 'resumed')
            throw new HttpError(
              409,
              'not-resumable',
              `run ${r.id} cannot be resumed: ${catalog.data.runs[r.id]?.error?.message ?? outcome}`,
            );
          return reply.code(202).send({ ok: true, resumed: true });
        }
        throw new HttpError(409, 'not-live', new RunNotLiveError(r.id, r.status).message);
      }
      try {
        // A run on a worker answers once Redis has the command, or says it had ended.
        await runs.command(r.id, cmd);
      } catch (e) {
        // Still hosted, but its final event is out: the run is ending, not live.
        if (e instanceof RunNotLiveError) throw new HttpError(409, 'not-live', e.message);
        throw e;
      }
      return reply.code(202).send({ ok: true });
    },
  );
}
