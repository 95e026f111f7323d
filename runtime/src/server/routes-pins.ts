/**
 * Pins of a stored flow (see ../pins/ and pins-store.ts), over REST:
 *
 * - `GET /api/flows/:id/pins` — the pins, each with `stale` (the node's config changed since the
 *   pinned run; the pin still applies) and `problem` (why it cannot apply now, e.g. its node was
 *   deleted: runs are refused until it is unpinned).
 * - `PUT /api/flows/:id/pins/:nodeId {fromRun, turn?}` — pins the node's output from its turn
 *   `turn` (from 1; default its last) of run `fromRun`, which must be a run of this flow in which
 *   the node ran. Every refusal names what and where.
 * - `DELETE /api/flows/:id/pins/:nodeId` — unpins.
 *
 * Every change is sent to the editors watching the flow's runs (`{type: 'pins', flowId, pins}`
 * on /api/ws), so collaborators see the same pins. Runs started over REST use the flow's pins
 * unless the start says `"pins": false` (`runPins`).
 */
import { type Flow, isReservedName, type Pin, type PinsDocument, pinIsStale } from '@switchboard/schemas';
import type { FastifyInstance } from 'fastify';
import type { ForkPlan } from '../cassette/fork.js';
import { pinProblem } from '../pins/behavior.js';
import { PinError, pinFromRun } from '../pins/extract.js';
import { pinsOfEvents } from '../pins/file.js';
import { RUN_ID_RE, type Store } from '../store/store.js';
import { HttpError } from './errors.js';
import { type FlowRecords, goneError } from './flow-records.js';
import type { PinsStore } from './pins-store.js';
import { ID_PARAM } from './routes-flows.js';

export interface PinView extends Pin {
  stale: boolean;
  problem?: string;
}

export function pinViews(doc: PinsDocument, flow: Flow | undefined): PinView[] {
  return doc.pins.map((p) => {
    const node = flow?.nodes.find((n) => n.id === p.nodeId);
    const v: PinView = { ...p, stale: node !== undefined && pinIsStale(p, node.config) };
    const problem = flow ? pinProblem(p, flow) : undefined;
    if (problem) v.problem = problem;
    return v;
  });
}

const pinParams = {
  type: 'object',
  properties: { id: ID_PARAM, nodeId: ID_PARAM },
  required: ['id', 'nodeId'],
} as const;

export interface PinRoutesDeps {
  store: Store;
  records: FlowRecords;
  pins: PinsStore;
  settleFlow: (flowId: string) => Promise<void>;
  /** Tells the editors watching `flowId` its pins changed. */
  notify: (flowId: string, pins: PinView[]) => void;
}

export function registerPinRoutes(app: FastifyInstance, d: PinRoutesDeps): void {
  /**
   * The stored flow; undefined for a flow the editor runs without having saved it (its runs
   * carry its id, and so do its pins); a deleted flow is gone (410).
   */
  const flowOf = async (id: string): Promise<Flow | undefined> => {
    await d.settleFlow(id);
    const rec = d.records.get(id);
    if (rec) return rec.flow as Flow;
    const tomb = d.records.deleted(id);
    if (tomb) throw goneError(tomb);
    return undefined;
  };
  const nodeParam = (nodeId: string): string => {
    if (isReservedName(nodeId)) throw new HttpError(400, 'bad-pin', `"${nodeId}" is not a usable node id`);
    return nodeId;
  };
  const changed = async (flowId: string, flow: Flow | undefined, doc: PinsDocument): Promise<PinView[]> => {
    const views = pinViews(doc, flow);
    d.notify(flowId, views);
    return views;
  };

  // A deleted flow's pins go with it: an id written again later starts with none.
  // Before the answer goes out, so that nothing read after the delete sees the old pins.
  app.addHook('onSend', async (req, reply, payload) => {
    if (req.method !== 'DELETE' || req.routeOptions.url !== '/api/flows/:id' || reply.statusCode >= 300)
      return payload;
    const id = (req.params as { id?: unknown }).id;
    if (typeof id === 'string')
      await d.pins
        .clear(id)
        .catch((e) => req.log.warn({ err: e }, 'clearing the pins of a deleted flow failed'));
    return payload;
  });

  app.get<{ Params: { id: string } }>(
    '/api/flows/:id/pins',
    {
      schema: {
        summary: 'The pins of a flow: nodes whose output runs take from a past run',
        params: { type: 'object', properties: { id: ID_PARAM }, required: ['id'] },
      },
    },
    async (req) => {
      // A deleted flow's pins went with it: an editor still showing it reads none (not an error
      // its console would report); pinning into it stays 410.
      await d.settleFlow(req.params.id);
      if (!d.records.get(req.params.id) && d.records.deleted(req.params.id)) return { pins: [] };
      const flow = await flowOf(req.params.id);
      return { pins: pinViews(await d.pins.get(req.params.id), flow) };
    },
  );

  app.put<{ Params: { id: string; nodeId: string }; Body: { fromRun: string; turn?: number } }>(
    '/api/flows/:id/pins/:nodeId',
    {
      schema: {
        summary: "Pin a node's output from one of its turns in a past run of this flow",
        params: pinParams,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['fromRun'],
          properties: {
            fromRun: {
              type: 'string',
              maxLength: 64,
              description: 'A run of this flow in which the node ran',
            },
            turn: {
              type: 'integer',
              minimum: 1,
              maximum: 1_000_000,
              description: "The node's turn, from 1 (default: its last)",
            },
          },
        },
      },
    },
    async (req) => {
      const { id } = req.params;
      const nodeId = nodeParam(req.params.nodeId);
      const { fromRun, turn } = req.body;
      const stored = await flowOf(id);
      if (stored && !stored.nodes.some((n) => n.id === nodeId))
        throw new HttpError(400, 'bad-pin', `flow ${id} has no node "${nodeId}"`);
      if (!RUN_ID_RE.test(fromRun))
        throw new HttpError(
          400,
          'bad-pin',
          `fromRun: ${JSON.stringify(fromRun).slice(0, 80)} is not a run id`,
        );
      const runs = d.store.catalog.data.runs;
      const run = Object.hasOwn(runs, fromRun) ? runs[fromRun] : undefined;
      if (!run) throw new HttpError(404, 'not-found', `no run ${fromRun}`);
      if (run.flowId !== id)
        throw new HttpError(
          400,
          'bad-pin',
          `run ${fromRun} is a run of flow "${run.flowId}", not of "${id}"`,
        );
      const spec = await d.store.readSpec(fromRun);
      if (!spec) throw new HttpError(404, 'not-found', `run ${fromRun} has no spec`);
      // Not saved on the server: the flow as that run ran it stands for it.
      const flow = stored ?? spec.flow;
      let pin: Pin;
      try {
        pin = pinFromRun(fromRun, { flow: spec.flow, events: d.store.readEvents(fromRun) }, nodeId, turn);
      } catch (e) {
        if (e instanceof PinError) throw new HttpError(400, 'bad-pin', e.message);
        throw e;
      }
      const problem = pinProblem(pin, flow);
      if (problem) throw new HttpError(400, 'bad-pin', problem);
      let doc: PinsDocument;
      try {
        doc = await d.pins.put(id, pin);
      } catch (e) {
        if (e instanceof PinError) throw new HttpError(400, 'bad-pin', e.message);
        throw e;
      }
      const views = await changed(id, flow, doc);
      return { pin: views.find((v) => v.nodeId === nodeId), pins: views };
    },
  );

  app.delete<{ Params: { id: string; nodeId: string } }>(
    '/api/flows/:id/pins/:nodeId',
    { schema: { summary: 'Unpin a node', params: pinParams } },
    async (req) => {
      const { id } = req.params;
      const nodeId = nodeParam(req.params.nodeId);
      const flow = await flowOf(id);
      const doc = await d.pins.get(id);
      if (!doc.pins.some((p) => p.nodeId === nodeId))
        throw new HttpError(404, 'not-found', `node "${nodeId}" of flow ${id} is not pinned`);
      return { pins: await changed(id, flow, await d.pins.remove(id, nodeId)) };
    },
  );
}

/**
 * The pins a run started over REST uses: those its fork's past run ran with (the recorded run
 * made no model call for them), then the flow's stored pins over them. A pin that cannot apply is
 * a 400 naming it (unpin it, or start with `"pins": false`).
 */
export async function runPins(
  flow: Flow,
  pins: PinsStore,
  fork: ForkPlan | undefined,
  store: Store,
): Promise<Pin[] | undefined> {
  const byNode = new Map<string, Pin>();
  if (fork) for (const p of pinsOfEvents(store.readEvents(fork.parentRunId)) ?? []) byNode.set(p.nodeId, p);
  for (const p of (await pins.get(flow.id)).pins) byNode.set(p.nodeId, p);
  // A pin of a node deleted since is left out (GET lists it with its problem); any other pin
  // that cannot apply refuses the start: running the node live instead would be a silent change.
  const out = [...byNode.values()].filter((p) => flow.nodes.some((n) => n.id === p.nodeId));
  for (const p of out) {
    const problem = pinProblem(p, flow);
    if (problem)
      throw new HttpError(400, 'bad-pin', `${problem} (unpin it, or start the run with "pins": false)`);
  }
  return out.length > 0 ? out : undefined;
}
