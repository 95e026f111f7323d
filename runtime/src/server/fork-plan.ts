/** `POST /api/runs {fromRun, at}`: where a served fork starts, from the past run's log. */
import { join } from 'node:path';
import { ForkError, type ForkPlan, parseForkAt, planFork } from '../cassette/fork.js';
import { readJournal } from '../cassette/stored.js';
import { RUN_ID_RE, type Store } from '../store/store.js';
import { HttpError } from './errors.js';

export async function servedForkPlan(store: Store, fromRun: unknown, at: unknown): Promise<ForkPlan> {
  if (typeof fromRun !== 'string' || !RUN_ID_RE.test(fromRun))
    throw new HttpError(400, 'bad-request', '"fromRun" must be a run id');
  if (typeof at !== 'string' || at.length === 0 || at.length > 300)
    throw new HttpError(400, 'bad-request', '"at" must be "NODE" or "NODE:TURN" with "fromRun"');
  if (!store.catalog.data.runs[fromRun]) throw new HttpError(404, 'not-found', `no run ${fromRun}`);
  const spec = await store.readSpec(fromRun);
  if (!spec) throw new HttpError(404, 'not-found', `run ${fromRun} has no spec`);
  try {
    const point = parseForkAt(at);
    return planFork(
      fromRun,
      {
        flow: spec.flow,
        input: spec.input,
        events: store.readEvents(fromRun),
        journal: readJournal(join(store.runDir(fromRun), 'tools.jsonl')),
      },
      point,
    );
  } catch (e) {
    if (e instanceof ForkError) throw new HttpError(400, 'bad-fork', e.message.replace(/^--at /, '"at" '));
    throw e;
  }
}
