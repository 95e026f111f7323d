/**
 * Flows: list, get, create, replace, delete, validate, import and export. Every write goes
 * through the one validator; an invalid write is refused with 400 and the validator's
 * problems, and the stored flow stays as it was.
 *
 * Co-editing rooms are saved to the same records (room-persistence.ts). Reads and writes of a
 * flow whose room is open first let the room save its pending changes, so an ETag names what
 * the editors see and `If-Match` catches a write that would undo their work; a write that goes
 * through is shown in the room to everyone editing it.
 *
 * Every write records who made it (`X-Switchboard-User`, flow-lifecycle.ts). A delete closes the
 * flow's room for everyone in it, saying who deleted it, and leaves a tombstone: the id answers
 * 410 and no room brings it back until someone deliberately writes that id again.
 */
import { validate } from '@switchboard/nodes';
import { type Flow, Id, MAX_ID_LENGTH, serializeFlow } from '@switchboard/schemas';
import type { FastifyInstance } from 'fastify';
import { validateOnce } from '../engine/validated.js';
import { HttpError } from './errors.js';
import { authorOf } from './flow-lifecycle.js';
import { type FlowRecords, goneError } from './flow-records.js';
import { FlowTemplates, newFlowId, TEMPLATE_ID } from './flow-templates.js';
import type { FlowRoomLink } from './room-persistence.js';

/** A flow id in a URL or a room name: the schema's own pattern and length limit. */
export const ID_PARAM = { type: 'string', pattern: Id.pattern, maxLength: MAX_ID_LENGTH } as const;
const idParams = { type: 'object', properties: { id: ID_PARAM }, required: ['id'] } as const;
const problems = { type: 'array', items: { type: 'object', additionalProperties: true } } as const;
const flowBody = { type: 'object', description: 'A flow document (flow.schema.json)' } as const;
const writeResult = {
  type: 'object',
  properties: { id: { type: 'string' }, rev: { type: 'integer' }, warnings: problems },
} as const;
const templateParams = {
  type: 'object',
  properties: { templateId: { type: 'string', pattern: TEMPLATE_ID.source } },
  required: ['templateId'],
} as const;

export function checkFlow(body: unknown): { flow: Flow; warnings: unknown[] } {
  // Once per flow object: runs of a stored flow (the catalog's object) skip the validator.
  const v = validateOnce(validate, body);
  if (!v.ok || !v.flow)
    throw new HttpError(400, 'invalid-flow', `the flow is invalid (${v.errors.length} problems)`, {
      errors: v.errors,
      warnings: v.warnings,
    });
  return { flow: v.flow, warnings: v.warnings };
}

/** The optional body of a from-template request: `{ "name": "…" }` names the new flow. */
function templateCopyName(body: unknown): string | undefined {
  if (body === undefined || body === null) return undefined;
  const name = (body as { name?: unknown }).name;
  if (typeof body !== 'object' || Array.isArray(body) || Object.keys(body).some((k) => k !== 'name'))
    throw new HttpError(400, 'bad-request', 'body: expected nothing or { "name": "…" }');
  if (name === undefined) return undefined;
  if (typeof name !== 'string' || !name.trim() || name.length > 200)
    throw new HttpError(400, 'bad-request', 'body/name: expected 1 to 200 characters');
  return name.trim();
}

/** Without co-editing rooms (tests of the routes alone): nothing to settle or show. */
const NO_ROOMS: FlowRoomLink = {
  settle: async () => {},
  stored: async () => {},
  deleted: async () => {},
  isOpen: () => false,
};

export function registerFlowRoutes(
  app: FastifyInstance,
  records: FlowRecords,
  rooms = NO_ROOMS,
  templates = new FlowTemplates(false),
): void {
  async function put(flow: Flow, mode: 'create' | 'replace' | 'upsert', by: string) {
    await rooms.settle(flow.id);
    const r = await records.put(flow, mode, { by, revive: true });
    await rooms.stored(flow);
    return r;
  }

  /** The stored flow, or the reason there is none (410 when it was deleted). */
  function found(id: string) {
    const rec = records.get(id);
    if (rec) return rec;
    const tomb = records.deleted(id);
    if (tomb) throw goneError(tomb);
    throw new HttpError(404, 'not-found', `no flow ${id}`);
  }

  app.get(
    '/api/flows',
    {
      schema: {
        summary: 'List flows',
        response: {
          200: {
            type: 'object',
            properties: {
              flows: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    id: { type: 'string' },
                    name: { type: 'string' },
                    description: { type: 'string' },
                    rev: { type: 'integer' },
                    nodes: { type: 'integer' },
                    createdAt: { type: 'string' },
                    updatedAt: { type: 'string' },
                    updatedBy: { type: 'string' },
                  },
                },
              },
            },
          },
        },
      },
    },
    async () => ({
      flows: records
        .all()
        .map((r) => ({
          id: r.flow.id,
          name: r.flow.name,
          description: r.flow.description,
          rev: r.rev,
          nodes: r.flow.nodes.length,
          createdAt: r.createdAt,
          updatedAt: r.updatedAt,
          updatedBy: r.updatedBy,
        }))
        .sort((a, b) => a.id.localeCompare(b.id)),
    }),
  );

  app.get<{ Params: { id: string } }>(
    '/api/flows/:id',
    { schema: { summary: 'Get a flow document (ETag: its revision)', params: idParams } },
    async (req, reply) => {
      await rooms.settle(req.params.id);
      const rec = found(req.params.id);
      reply.header('etag', `"${rec.rev}"`);
      return rec.flow;
    },
  );

  app.post(
    '/api/flows',
    {
      schema: {
        summary: 'Create a flow (409 when the id exists)',
        body: flowBody,
        response: { 201: writeResult },
      },
    },
    async (req, reply) => {
      const { flow, warnings } = checkFlow(req.body);
      const { rec } = await put(flow, 'create', authorOf(req));
      reply.code(201).header('etag', `"${rec.rev}"`);
      return { id: flow.id, rev: rec.rev, warnings };
    },
  );

  app.post<{ Params: { templateId: string }; Body: unknown }>(
    '/api/flows/from-template/:templateId',
    {
      schema: {
        summary: 'Create a new flow (with an id of its own) from a shipped example; 404 for no such template',
        params: templateParams,
        response: {
          201: {
            type: 'object',
            properties: {
              id: { type: 'string' },
              rev: { type: 'integer' },
              name: { type: 'string' },
              template: { type: 'string' },
              warnings: problems,
            },
          },
        },
      },
    },
    async (req, reply) => {
      const { templateId } = req.params;
      const text = await templates.text(templateId);
      if (text === undefined) throw new HttpError(404, 'not-found', `no template ${templateId}`);
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch (e) {
        throw new HttpError(
          500,
          'bad-template',
          `template ${templateId} is not JSON: ${(e as Error).message}`,
        );
      }
      const id = newFlowId(templateId, (x) => records.isFree(x) && !rooms.isOpen(x));
      const name = templateCopyName(req.body);
      const { flow, warnings } = checkFlow({ ...(parsed as object), id, ...(name ? { name } : {}) });
      const { rec } = await records.put(flow, 'create', { by: authorOf(req) });
      reply.code(201).header('etag', `"${rec.rev}"`);
      return { id, rev: rec.rev, name: flow.name, template: templateId, warnings };
    },
  );

  app.put<{ Params: { id: string } }>(
    '/api/flows/:id',
    {
      schema: {
        summary: 'Replace or create a flow; If-Match: "rev" guards against lost updates',
        params: idParams,
        body: flowBody,
        response: { 200: writeResult, 201: writeResult },
      },
    },
    async (req, reply) => {
      const { flow, warnings } = checkFlow(req.body);
      if (flow.id !== req.params.id)
        throw new HttpError(
          400,
          'id-mismatch',
          `the body's id ${flow.id} differs from the URL's ${req.params.id}`,
        );
      const ifMatch = req.headers['if-match'];
      await rooms.settle(flow.id);
      const cur = records.get(flow.id);
      if (typeof ifMatch === 'string' && ifMatch !== '*' && ifMatch !== `"${cur?.rev ?? 0}"`)
        throw new HttpError(412, 'conflict', `the flow changed (now revision ${cur?.rev ?? 0})`);
      const { rec, created } = await put(flow, 'upsert', authorOf(req));
      reply.code(created ? 201 : 200).header('etag', `"${rec.rev}"`);
      return { id: flow.id, rev: rec.rev, warnings };
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/api/flows/:id',
    {
      schema: {
        summary: 'Delete a flow: its room closes for everyone in it, and the id stays deleted (410)',
        params: idParams,
      },
    },
    async (req, reply) => {
      const { id } = req.params;
      // A save in flight finishes first, so that nothing is written after the delete.
      await rooms.settle(id);
      const open = rooms.isOpen(id);
      if (!records.get(id) && !open) {
        const tomb = records.deleted(id);
        if (tomb) throw goneError(tomb);
        throw new HttpError(404, 'not-found', `no flow ${id}`);
      }
      // A room never saved (a new flow) is deleted too: the people in it asked for it.
      const tomb = await records.remove(id, authorOf(req), open);
      if (tomb) await rooms.deleted(id, tomb);
      return reply.code(204).send();
    },
  );

  app.post(
    '/api/flows/validate',
    {
      schema: {
        summary: 'Validate a flow without storing it',
        body: {},
        response: {
          200: {
            type: 'object',
            properties: { ok: { type: 'boolean' }, errors: problems, warnings: problems },
          },
        },
      },
    },
    async (req) => {
      const v = validate(req.body);
      return { ok: v.ok, errors: v.errors, warnings: v.warnings };
    },
  );

  app.post<{ Querystring: { overwrite?: boolean } }>(
    '/api/flows/import',
    {
      schema: {
        summary: 'Import a flow file (as exported); ?overwrite=true replaces an existing flow',
        body: flowBody,
        querystring: { type: 'object', properties: { overwrite: { type: 'boolean' } } },
        response: { 200: writeResult, 201: writeResult },
      },
    },
    async (req, reply) => {
      const { flow, warnings } = checkFlow(req.body);
      const { rec, created } = await put(flow, req.query.overwrite ? 'upsert' : 'create', authorOf(req));
      reply.code(created ? 201 : 200);
      return { id: flow.id, rev: rec.rev, warnings };
    },
  );

  app.get<{ Params: { id: string } }>(
    '/api/flows/:id/export',
    {
      schema: {
        summary: 'Export a flow as a .json file, byte-identical to the editor’s export',
        params: idParams,
      },
    },
    async (req, reply) => {
      await rooms.settle(req.params.id);
      const rec = found(req.params.id);
      reply
        .header('content-type', 'application/json; charset=utf-8')
        .header('content-disposition', `attachment; filename="${rec.flow.id}.json"`);
      return serializeFlow(rec.flow);
    },
  );
}
