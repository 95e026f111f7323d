/**
 * Executes one run in a worker, with the run's state in Redis instead of a data directory:
 * events go to the run's stream, checkpoints and the tool journal to keys, every write fenced
 * by the BullMQ job lock (scripts.ts), and commands come from the run's command stream. A
 * worker that takes a run over continues from its last checkpoint exactly as a restarted
 * server does (run-manager.ts): after the last event in the stream, with the replayed turn's
 * repeats marked and its tool calls answered from the journal.
 *
 * Events before a run's first checkpoint are held back and written with it: a run taken over
 * before then has nothing in its stream and simply starts again.
 */
import { join } from 'node:path';
import type { Flow, RunEvent } from '@switchboard/schemas';
import type { Redis } from 'ioredis';
import type { RunCheckpoint, RunFlow, RunOptions, RunResult } from '../engine/types.js';
import { serverScriptsDir } from '../models/script-file.js';
import {
  type CallJournal,
  endsStepTurn,
  journaledTools,
  journalState,
  teamIds,
} from '../server/journaled-tools.js';
import { ReplayMarker } from '../server/run-counters.js';
import type { Logger } from '../server/run-manager.js';
import type { RunRecord } from '../store/catalog.js';
import type { JournalCall, JournalDone, JournalIntent } from '../store/tool-journal.js';
import type { ToolHost } from '../tools/types.js';
import type { RedisKeys } from './keys.js';
import {
  commandsAfter,
  eventsAfter,
  FINAL_TYPES,
  lastEvent,
  readJournal,
  readSpec,
  readStoredCheckpoint,
  wasPaused,
} from './run-state.js';
import type { RunScripts } from './scripts.js';

export interface ExecutorDeps {
  /** Shared connection for writes and reads (auto-pipelined). */
  redis: Redis & RunScripts;
  keys: RedisKeys;
  loadEngine: () => Promise<RunFlow>;
  /** The worker's own directory: run files (documents, workspaces) and scripts. */
  dataDir: string;
  models?: RunOptions['models'];
  tools?: (run: { runId: string; flow: Flow; source: RunRecord['source'] }) => ToolHost | undefined;
  env?: Record<string, string | undefined>;
  outbound?: RunOptions['outbound'];
  secrets?: RunOptions['secrets'];
  logger: Logger;
}

/** How a worker controls a run it executes. */
export interface Execution {
  /** Stops the run without writing anything more (shutdown: another worker continues it). */
  detach(): void;
  /** A command may have come for the run: read what came after the last one applied. */
  poke(): void;
  result: Promise<RunResult | 'ended'>;
}

/** A run ended on no worker: written once by whichever worker sees it (see scripts.ts FINISH). */
export async function finishRun(
  d: Pick<ExecutorDeps, 'redis' | 'keys'>,
  runId: string,
  error: { code: string; message: string },
): Promise<boolean> {
  const ev = { type: 'run.failed', runId, ts: Date.now(), error };
  const n = await d.redis.sbFinish(d.keys.events(runId), runId, d.keys.evChannel, JSON.stringify(ev));
  return n > 0;
}

class RedisJournal implements CallJournal {
  private next: number;
  constructor(
    readonly calls: JournalCall[],
    private readonly write: (entry: string) => Promise<unknown>,
  ) {
    this.next = (calls.at(-1)?.intent.n ?? 0) + 1;
  }
  async intent(tool: string, args: string, cp: number): Promise<JournalIntent> {
    const e: JournalIntent = { k: 'intent', n: this.next++, tool, args, cp };
    await this.write(JSON.stringify(e));
    this.calls.push({ intent: e });
    return e;
  }
  async done(n: number, result: JournalDone['result']): Promise<void> {
    const e: JournalDone = { k: 'done', n, result };
    await this.write(JSON.stringify(e));
    const c = this.calls.find((x) => x.intent.n === n);
    if (c) c.done = e;
  }
}

/** `retry`: the run's job was taken before (its worker died or failed it). */
export async function executeRun(
  d: ExecutorDeps,
  runId: string,
  token: string,
  retry = false,
): Promise<Execution> {
  const { redis, keys } = d;
  const spec = await readSpec(redis, keys, runId);
  if (!spec) throw new Error(`run_spec_missing: run ${runId} has no spec at ${keys.spec(runId)}`);
  const last = await lastEvent(redis, keys, runId);
  if (last && FINAL_TYPES.has(last.type)) return { detach() {}, poke() {}, result: Promise.resolve('ended') };
  const stored = await readStoredCheckpoint(redis, keys, runId);
  const lastSeq = last?.seq ?? 0;
  if (lastSeq > 0 && !stored) {
    // Cannot happen with events held back until the first checkpoint; said by name if it does.
    await finishRun(d, runId, {
      code: 'run_unresumable',
      message: `run ${runId} has events up to seq ${lastSeq} and no checkpoint to continue from`,
    });
    return { detach() {}, poke() {}, result: Promise.resolve('ended') };
  }
  const tail = stored ? await eventsAfter(redis, keys, runId, stored.cp.seq, 100_000) : [];
  const calls = await readJournal(redis, keys, runId);
  const paused = stored ? await wasPaused(redis, keys, runId) : false;
  const runFlow = await d.loadEngine();

  const lock = keys.lock(runId);
  const evKey = keys.events(runId);
  const cpKey = keys.checkpoint(runId);
  let detached = false;
  let failure: Error | undefined;
  const abort = new AbortController();
  const fail = (e: unknown) => {
    if (failure) return;
    failure = e instanceof Error ? e : new Error(String(e));
    d.logger.warn({ runId, err: failure.message }, 'run stopped on this worker');
    detached = true;
    abort.abort(failure);
  };

  let pending: RunEvent[] = [];
  let held = stored === undefined;
  let lastWrite: Promise<void> = Promise.resolve();
  let flushScheduled = false;
  let lastCmd = stored?.cmd ?? '0';
  const flush = (cp = ''): Promise<void> => {
    flushScheduled = false;
    if (detached) return new Promise<void>(() => {});
    if (pending.length === 0 && cp === '') return lastWrite;
    const args: (string | number)[] = [lock, evKey, cpKey, token, runId, keys.evChannel, cp];
    for (const ev of pending) args.push(ev.seq, JSON.stringify(ev));
    pending = [];
    const p = redis.sbAppend(...args).then(
      () => {},
      (e: unknown) => {
        fail(e);
        throw e;
      },
    );
    p.catch(() => {});
    lastWrite = p;
    return p;
  };

  const replay = stored ? new ReplayMarker(tail, stored.cp.seq) : undefined;
  const teams = teamIds(spec.flow);
  /** A turn of a step ended since the last checkpoint; `called`: a tool was called. */
  let turned = false;
  let called = false;
  let nextSeq = lastSeq + 1;
  const onEvent = (engineEvent: RunEvent) => {
    if (detached) return;
    const ev = replay?.pending ? replay.mark(engineEvent) : engineEvent;
    if (ev.seq !== nextSeq) {
      d.logger.error(
        { runId, seq: ev.seq, expected: nextSeq },
        'engine emitted an out-of-order seq; dropped',
      );
      return;
    }
    nextSeq++;
    if (endsStepTurn(ev, runId, teams)) turned = true;
    pending.push(ev);
    if (!held && !flushScheduled) {
      flushScheduled = true;
      setImmediate(flush);
    }
  };

  const js = journalState(
    new RedisJournal(calls, (entry) =>
      redis.sbJournal(lock, keys.journal(runId), token, runId, entry).catch((e: unknown) => {
        fail(e);
        throw e;
      }),
    ),
    stored?.cp.seq,
  );
  js.durable = () => lastWrite;
  js.onCall = () => {
    called = true;
  };
  // Every checkpoint is written (a Redis write is cheap): the calls one names all belong to one
  // turn. But not while a taken-over run has not yet replayed the step its checkpoint was cut
  // in (a resumed paused run pauses first, at the step before): the journal answers that step's
  // calls only for a resume from the checkpoint they name, which must stay the one stored.
  const checkpoint = (c: RunCheckpoint): Promise<void> => {
    if (detached) return new Promise<void>(() => {});
    // The replayed step is over (every checkpoint is written, so it is the first one after the
    // stored checkpoint); what it did not match is not replayed later.
    if (called || turned) js.replay = [];
    called = false;
    turned = false;
    if (js.replay.length > 0) return flush();
    held = false;
    const p = flush(JSON.stringify({ cp: c, cmd: lastCmd }));
    js.checkpointSeq = c.seq;
    return p;
  };

  const grantsTools = spec.flow.edges.some((e) => e.kind === 'tools');
  const inner = grantsTools ? d.tools?.({ runId, flow: spec.flow, source: 'api' }) : undefined;
  const runDir = join(d.dataDir, 'runs', runId);
  const options: RunOptions = {
    runId,
    onEvent,
    checkpoint,
    signal: abort.signal,
    dataDir: runDir,
    baseDir: serverScriptsDir(d.dataDir),
    humanInput: 'wait',
  };
  if (inner) options.tools = journaledTools(inner, js);
  if (d.models) options.models = d.models;
  if (d.env) options.env = d.env;
  if (d.outbound) options.outbound = d.outbound;
  if (d.secrets) options.secrets = d.secrets;
  if (spec.answers) options.answers = spec.answers;
  if (spec.pins) options.pins = spec.pins;
  if (stored) options.resume = { ...stored.cp, seq: lastSeq };
  if (stored) d.logger.info({ runId, fromSeq: stored.cp.seq, logSeq: lastSeq }, 'run taken over');
  else if (retry) d.logger.info({ runId }, 'run started again');

  const handle = runFlow(spec.flow, spec.input, options);
  // Paused when its worker stopped: paused again, as a restarted server does (run-recovery.ts).
  if (paused) handle.send({ type: 'pause' });

  // Commands, in order, from where the checkpoint left them (a replayed turn gets them again).
  // Read when the worker is told one came (`poke`, from its one subscription) and on a timer.
  let reading = true;
  let pulling = false;
  let again = false;
  const pullCommands = async (): Promise<void> => {
    if (pulling) {
      again = true;
      return;
    }
    pulling = true;
    try {
      do {
        again = false;
        const got = await commandsAfter(redis, keys, runId, lastCmd);
        for (const { id, cmd } of got) {
          if (!reading) return;
          lastCmd = id;
          handle.send(cmd);
        }
        if (got.length === 100) again = true;
      } while (again && reading);
    } catch (e) {
      if (reading) d.logger.warn({ runId, err: String(e) }, 'command read failed; retrying');
    } finally {
      pulling = false;
    }
  };
  const poke = () => {
    if (reading) void pullCommands();
  };
  poke();

  const result = (async (): Promise<RunResult | 'ended'> => {
    let r: RunResult;
    try {
      r = await handle.result;
    } catch (e) {
      r = { runId, status: 'failed', error: { code: 'engine', message: String(e) } };
    }
    held = false;
    if (!detached) await flush();
    reading = false;
    if (failure) throw failure;
    return r;
  })();
  return {
    poke,
    detach() {
      detached = true;
      abort.abort(new Error('worker shutting down: the run continues on another worker'));
    },
    result,
  };
}
