/**
 * What an attached (headless) process may write into the run the server gave it: events that
 * match the event schema of their type, numbered contiguously from where the log stops, of
 * that run or of its nested runs only. The process names its run by its own local id; every
 * id is rewritten to the server's, so an attacher can never address another run's log.
 */
import { EventSchemas, type RunEvent } from '@switchboard/schemas';
import { Ajv, type ValidateFunction } from 'ajv';

/** A refusal of one message: its code, and a sentence naming the event and the field. */
export class AttachProtocolError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

let validators: Map<string, ValidateFunction> | undefined;

/** One compiled schema per event type, so an error names the field, not a union's 40 branches. */
function validatorFor(type: string): ValidateFunction | undefined {
  if (!validators) {
    const ajv = new Ajv({ strict: false, allErrors: false });
    validators = new Map();
    for (const s of EventSchemas) {
      const t = (s.properties.type as { const: string }).const;
      validators.set(t, ajv.compile(s));
    }
  }
  return validators.get(type);
}

/** Local run ids: what the engine makes (`run_…`, nested `…~N`), bounded. */
export const LOCAL_RUN_ID_RE = /^[A-Za-z0-9_-]{1,64}$/;

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Maps a local id (`local` or `local~N…`) to the server's, or undefined when it is neither. */
function rewriteId(id: unknown, local: string, server: string): string | undefined {
  if (typeof id !== 'string') return undefined;
  if (id === local) return server;
  if (id.startsWith(`${local}~`) && /^(~\d{1,9})+$/.test(id.slice(local.length)))
    return server + id.slice(local.length);
  return undefined;
}

const FINAL_TYPES = new Set(['run.completed', 'run.failed', 'run.cancelled', 'run.interrupted']);

export interface EventCursor {
  /** The process's own id for the run. */
  localRunId: string;
  /** The id the server gave the run. */
  runId: string;
  flowId: string;
  /** The seq the next event must carry. */
  nextSeq: number;
  /** Set once the run's own final event was taken: nothing may follow. */
  ended: boolean;
  /** The attached flow's node and edge ids: an event names only these. */
  nodes: ReadonlySet<string>;
  edges: ReadonlySet<string>;
}

/**
 * Checks a batch as a whole (nothing of a bad batch is written) and returns its events as the
 * server stores them. `where` names the batch position in errors: `events[3] (seq 7)`.
 */
export function admitEvents(batch: unknown, cur: EventCursor, maxEvents: number): RunEvent[] {
  if (!Array.isArray(batch) || batch.length === 0)
    throw new AttachProtocolError('bad-message', '"events" must be a non-empty array');
  if (batch.length > maxEvents)
    throw new AttachProtocolError(
      'too-large',
      `a message holds at most ${maxEvents} events, this one ${batch.length}`,
    );
  const out: RunEvent[] = [];
  let seq = cur.nextSeq;
  let ended = cur.ended;
  batch.forEach((raw, i) => {
    const where = `events[${i}]`;
    if (!isObj(raw)) throw new AttachProtocolError('bad-event', `${where}: expected an object`);
    if (ended)
      throw new AttachProtocolError(
        'run-ended',
        `${where}: run ${cur.runId} has ended; no event may follow its final one`,
      );
    const type = raw.type;
    const check = typeof type === 'string' ? validatorFor(type) : undefined;
    if (!check)
      throw new AttachProtocolError(
        'bad-event',
        `${where}: unknown event type ${JSON.stringify(type)?.slice(0, 60) ?? 'undefined'}`,
      );
    if (!check(raw)) {
      const e = check.errors?.[0];
      throw new AttachProtocolError(
        'bad-event',
        `${where} (${type}): ${e?.instancePath || '/'} ${e?.message ?? 'does not match event.schema.json'}`,
      );
    }
    for (const [field, ids] of [
      ['nodeId', cur.nodes],
      ['edgeId', cur.edges],
    ] as const) {
      const v = raw[field];
      if (v !== undefined && (typeof v !== 'string' || !ids.has(v)))
        throw new AttachProtocolError(
          'bad-event',
          `${where} (${type}): /${field} ${JSON.stringify(v).slice(0, 80)} is not ${field === 'nodeId' ? 'a node' : 'an edge'} of the attached flow`,
        );
    }
    if (raw.seq !== seq)
      throw new AttachProtocolError(
        'seq-gap',
        `${where} (${type}): seq ${String(raw.seq)} where ${seq} was expected (the server holds up to ${seq - 1})`,
      );
    const runId = rewriteId(raw.runId, cur.localRunId, cur.runId);
    if (runId === undefined)
      throw new AttachProtocolError(
        'not-your-run',
        `${where} (${type}): runId ${JSON.stringify(raw.runId).slice(0, 80)} is not this attachment's run (${cur.localRunId} or its nested runs)`,
      );
    const ev = { ...raw, runId } as Record<string, unknown>;
    if (raw.parentRunId !== undefined) {
      const parent = rewriteId(raw.parentRunId, cur.localRunId, cur.runId);
      if (parent === undefined)
        throw new AttachProtocolError(
          'not-your-run',
          `${where} (${type}): parentRunId ${JSON.stringify(raw.parentRunId).slice(0, 80)} is not this attachment's run`,
        );
      ev.parentRunId = parent;
    }
    if (type === 'run.started' && runId === cur.runId && raw.flowId !== cur.flowId)
      throw new AttachProtocolError(
        'bad-event',
        `${where} (run.started): flowId ${JSON.stringify(raw.flowId).slice(0, 80)} is not the attached flow's id "${cur.flowId}"`,
      );
    if (runId === cur.runId && FINAL_TYPES.has(type as string)) ended = true;
    out.push(ev as unknown as RunEvent);
    seq++;
  });
  return out;
}

/** The run's own final event (not a nested run's). */
export function isOwnFinal(ev: RunEvent, runId: string): boolean {
  return ev.runId === runId && FINAL_TYPES.has(ev.type);
}
