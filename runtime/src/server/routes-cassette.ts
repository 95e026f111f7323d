/** `GET /api/runs/:id/cassette`: a stored run as a cassette that `switchboard replay` reads. */
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { cassetteFromLog } from '../cassette/from-log.js';
import { readJournal } from '../cassette/stored.js';
import { RUN_ID_RE, type Store } from '../store/store.js';
import { HttpError } from './errors.js';

export function registerCassetteRoute(app: FastifyInstance, store: Store): void {
  app.get<{ Params: { id: string } }>(
    '/api/runs/:id/cassette',
    {
      schema: {
        summary:
          'The run as a cassette: every model request with its reply, every tool call with its result, and the events (for `switchboard replay`)',
        params: {
          type: 'object',
          properties: { id: { type: 'string', pattern: RUN_ID_RE.source } },
          required: ['id'],
        },
      },
    },
    async (req, reply) => {
      const id = req.params.id;
      if (!store.catalog.data.runs[id]) throw new HttpError(404, 'not-found', `no run ${id}`);
      const spec = await store.readSpec(id);
      if (!spec) throw new HttpError(404, 'not-found', `run ${id} has no spec`);
      const events = store.readEvents(id);
      const journal = readJournal(join(store.runDir(id), 'tools.jsonl'));
      const { cassette, warnings } = cassetteFromLog({ flow: spec.flow, input: spec.input, events, journal });
      if (warnings.length > 0) reply.header('x-cassette-warnings', String(warnings.length));
      reply.header('content-disposition', `attachment; filename="${id}.cassette.json"`);
      return cassette;
    },
  );
}
