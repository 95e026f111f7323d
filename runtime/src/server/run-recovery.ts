/**
 * Runs that no process hosts: resumed from their last checkpoint (after a crash, a restart, a
 * `resume` command, or by themselves once the disk that paused them takes writes again), or
 * marked interrupted when that is impossible, or failed by the storage error's name when the
 * disk stopped them before their first checkpoint. Their index entry follows their log.
 */
import type { RunEvent } from '@switchboard/schemas';
import type { RunCheckpoint, RunCommand, RunFlow } from '../engine/types.js';
import type { RunRecord } from '../store/catalog.js';
import { StoreError } from '../store/errors.js';
import type { EventLog } from '../store/event-log.js';
import type { GroupCommit } from '../store/group-commit.js';
import type { RunSpec } from '../store/run-files.js';
import { isStorageFault, StorageError } from '../store/storage-error.js';
import type { Store } from '../store/store.js';
import { applyEvent, FINAL, nowIso, pauseForStorage, recount } from './run-counters.js';

interface Logger {
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
}

/** What recovery needs of the run manager that hosts the runs. */
export interface RecoveryHost {
  store: Store;
  log: Logger;
  /** Whether the run is hosted in this process now. */
  hosted(runId: string): boolean;
  /** Shutting down, or not resuming by itself. */
  closing(): boolean;
  loadEngine(): Promise<RunFlow>;
  launch(runFlow: RunFlow, rec: RunRecord, spec: RunSpec, cp: RunCheckpoint): { send(cmd: RunCommand): void };
  /** Applies a run's durable events to its entry and publishes them. */
  watch(runId: string, commit: GroupCommit, rec: RunRecord): void;
}

export class RunRecovery {
  /** When each run the disk paused may next try to resume by itself, and how long it waited. */
  private readonly retryAt = new Map<string, { at: number; wait: number }>();

  constructor(private readonly h: RecoveryHost) {}

  /** A run hosted again has ended: its retry schedule goes. */
  forget(runId: string): void {
    this.retryAt.delete(runId);
  }

  /** Appends a final `run.interrupted` event to a run that cannot continue. */
  async interrupt(rec: RunRecord, reason: string): Promise<void> {
    let logOk = true;
    try {
      const { log, commit } = this.h.store.openLog(rec.id);
      const ev = {
        runId: rec.id,
        seq: log.lastSeq + 1,
        ts: Date.now(),
        type: 'run.interrupted',
        reason,
      } as RunEvent;
      this.h.watch(rec.id, commit, rec);
      commit.append(ev);
      await this.h.store.closeLog(rec.id);
      if (commit.failed) throw commit.failed;
    } catch (e) {
      if (isStorageFault(e)) throw this.h.store.health.report(e);
      // The log itself is damaged: it stays as it is for the operator; the index says why.
      logOk = false;
      this.h.log.error({ runId: rec.id, err: (e as Error).message }, 'run log is damaged; not touched');
      rec.status = 'interrupted';
      rec.error = { code: 'store-damaged', message: `${reason}; ${(e as Error).message}` };
      rec.endedAt = rec.updatedAt = nowIso();
    }
    if (logOk) rec.error = { code: 'interrupted', message: reason };
    this.h.log.warn({ runId: rec.id, reason }, 'run interrupted');
  }

  /**
   * Continues a run that is not hosted by any process from its last checkpoint, or marks it
   * interrupted when that is impossible. Returns what happened.
   */
  async resumeStored(
    runId: string,
    opts: { pause?: boolean; allowInterrupted?: boolean } = {},
  ): Promise<'resumed' | 'interrupted' | 'final'> {
    const rec = this.h.store.catalog.data.runs[runId];
    if (!rec) throw new Error(`no run ${runId}`);
    if (this.h.hosted(runId)) throw new Error(`run ${runId} is already live`);
    try {
      return await this.resumeFromDisk(rec, opts);
    } catch (e) {
      // The disk refused again: the run stays paused by it, nothing of it is lost.
      if (!isStorageFault(e)) throw e;
      await this.h.store.closeLog(runId).catch(() => {});
      const se = this.h.store.health.report(e);
      pauseForStorage(rec, se);
      throw se;
    }
  }

  private async resumeFromDisk(
    rec: RunRecord,
    opts: { pause?: boolean; allowInterrupted?: boolean },
  ): Promise<'resumed' | 'interrupted' | 'final'> {
    const runId = rec.id;
    let log: EventLog;
    let commit: GroupCommit;
    try {
      const opened = this.h.store.openLog(runId);
      log = opened.log;
      commit = opened.commit;
      if (opened.torn)
        this.h.log.warn(
          { runId, file: log.file, ...opened.torn },
          'cut a torn record at the end of the run log',
        );
    } catch (e) {
      if (isStorageFault(e) && !(e instanceof StoreError)) throw e;
      await this.interrupt(rec, `the run log cannot be read: ${(e as Error).message}`);
      await this.h.store.catalog.save();
      return 'interrupted';
    }
    // The entry follows the log: status, lastSeq and counters (a replayed turn counts once).
    recount(rec, log.events);
    rec.lastSeq = log.lastSeq;
    // The log is the truth: the process may have died after the final event but before the index.
    const finalRe = opts.allowInterrupted
      ? /^run\.(completed|failed|cancelled)$/
      : /^run\.(completed|failed|cancelled|interrupted)$/;
    const final = [...log.events].reverse().find((e) => e.runId === runId && finalRe.test(e.type));
    if (final) {
      for (const e of log.events.slice(-1)) applyEvent(rec, e);
      applyEvent(rec, final);
      delete rec.pausedBy;
      await this.h.store.closeLog(runId);
      await this.h.store.catalog.save();
      return 'final';
    }
    let spec: RunSpec | undefined;
    let cp: RunCheckpoint | undefined;
    let latest: RunCheckpoint | undefined;
    try {
      spec = await this.h.store.readSpec(runId);
      // The last checkpoint the log covers (after a power loss a later one may have survived
      // the log lines under it; it is skipped).
      latest = await this.h.store.readCheckpoint(runId);
      cp =
        latest && latest.seq <= log.lastSeq ? latest : await this.h.store.readCheckpoint(runId, log.lastSeq);
    } catch (e) {
      if (isStorageFault(e) && !(e instanceof StoreError)) throw e;
      this.h.log.error(
        { runId, file: (e as StoreError).file, err: (e as Error).message },
        'run file is damaged',
      );
      await this.interrupt(rec, `a run file is damaged: ${(e as Error).message}`);
      await this.h.store.catalog.save();
      return 'interrupted';
    }
    if (!spec || !cp) {
      if (rec.pausedBy && spec) {
        // Stopped by the disk before its first checkpoint: nothing to continue from. It fails
        // by the storage error's name.
        await this.failStored(rec, commit, rec.pausedBy);
        return 'final';
      }
      await this.interrupt(
        rec,
        !spec
          ? 'the run was never fully recorded'
          : latest
            ? `the checkpoint (seq ${latest.seq}) is ahead of the log (seq ${log.lastSeq})`
            : 'the process stopped before the first checkpoint',
      );
      await this.h.store.catalog.save();
      return 'interrupted';
    }
    const runFlow = await this.h.loadEngine();
    const stop = rec.pausedBy;
    if (stop) {
      // The log says why it stopped where it stops, then the engine says it resumed.
      this.h.watch(runId, commit, rec);
      commit.append({
        runId,
        seq: log.lastSeq + 1,
        ts: Date.parse(stop.at) || Date.now(),
        type: 'run.paused',
        reason: `${stop.code}: ${stop.message}`,
      } as RunEvent);
      await commit.durable();
      delete rec.pausedBy;
    }
    rec.resumes++;
    rec.status = 'running';
    rec.lastSeq = log.lastSeq;
    const a = this.h.launch(runFlow, rec, spec, cp);
    if (opts.pause) a.send({ type: 'pause' });
    await this.h.store.catalog.save().catch(() => {});
    this.h.log.info({ runId, fromSeq: cp.seq, logSeq: log.lastSeq }, 'run resumed from its checkpoint');
    return 'resumed';
  }

  /** Ends a stored run with `run.failed` naming a storage error. */
  private async failStored(
    rec: RunRecord,
    commit: GroupCommit,
    stop: NonNullable<RunRecord['pausedBy']>,
  ): Promise<void> {
    this.h.watch(rec.id, commit, rec);
    commit.append({
      runId: rec.id,
      seq: commit.log.lastSeq + 1,
      ts: Date.now(),
      type: 'run.failed',
      error: { code: stop.code, message: `${stop.message}; the run stopped before its first checkpoint` },
    } as RunEvent);
    await this.h.store.closeLog(rec.id);
    if (commit.failed) throw commit.failed;
    delete rec.pausedBy;
    await this.h.store.catalog.save();
  }

  /**
   * On start: every run the last process left live is resumed or marked interrupted; a run
   * whose start never completed (no spec, nothing logged) is removed, as are run folders the
   * catalog does not know; a run the disk paused resumes running. A disk that still refuses
   * leaves a run paused by it (`paused`).
   */
  async recover(): Promise<{ resumed: string[]; interrupted: string[]; final: string[]; paused: string[] }> {
    const out = {
      resumed: [] as string[],
      interrupted: [] as string[],
      final: [] as string[],
      paused: [] as string[],
    };
    const runs = this.h.store.catalog.data.runs;
    for (const rec of Object.values(runs)) {
      if (FINAL.has(rec.status) || this.h.hosted(rec.id)) continue;
      if (rec.status === 'pending' && rec.lastSeq === 0 && (await this.phantom(rec.id))) {
        delete runs[rec.id];
        await this.h.store.removeRun(rec.id);
        this.h.log.warn({ runId: rec.id }, 'removed a run whose start never completed');
        continue;
      }
      const wasPaused = rec.status === 'paused' && !rec.pausedBy;
      try {
        const r = await this.resumeStored(rec.id, { pause: wasPaused });
        out[r].push(rec.id);
      } catch (e) {
        if (e instanceof StorageError) {
          out.paused.push(rec.id);
          continue;
        }
        this.h.log.error({ runId: rec.id, err: (e as Error).message }, 'could not recover run');
        await this.interrupt(rec, `recovery failed: ${(e as Error).message}`).catch(() => {});
        out.interrupted.push(rec.id);
      }
    }
    await this.h.store.sweepUnrecorded();
    await this.h.store.catalog.save();
    return out;
  }

  /** Whether a run has neither a spec nor a logged event (its start never completed). */
  private async phantom(runId: string): Promise<boolean> {
    try {
      if (await this.h.store.readSpec(runId)) return false;
    } catch {
      return false;
    }
    return this.h.store.readEvents(runId, 0, 1).length === 0;
  }

  /** Resumes the runs the disk paused (writes succeed again); a run that fails again waits longer. */
  async resumeStoragePaused(): Promise<void> {
    if (this.h.closing()) return;
    for (const rec of Object.values(this.h.store.catalog.data.runs)) {
      if (!rec.pausedBy || this.h.hosted(rec.id) || FINAL.has(rec.status)) continue;
      const r = this.retryAt.get(rec.id);
      if (r && Date.now() < r.at) continue;
      const wait = Math.min((r?.wait ?? 500) * 2, 60_000);
      this.retryAt.set(rec.id, { at: Date.now() + wait, wait });
      try {
        const outcome = await this.resumeStored(rec.id);
        this.h.log.info({ runId: rec.id, outcome }, 'run paused by storage: resumed by itself');
      } catch (e) {
        this.h.log.warn(
          { runId: rec.id, err: (e as Error).message },
          'run paused by storage: not resumed yet',
        );
      }
    }
  }
}
