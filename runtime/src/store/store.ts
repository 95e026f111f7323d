/**
 * The data directory: lock, catalog, and one folder per run (spec, event log, checkpoint,
 * tool journal). One `Store` per process per directory.
 *
 *   DIR/lock                  pid of the owner
 *   DIR/catalog.json          lowdb catalog (flows, run index, settings)
 *   DIR/runs/<id>/run.json    what was started (flow, input)
 *   DIR/runs/<id>/events.jsonl
 *   DIR/runs/<id>/checkpoints.jsonl  (append-only; the last line the log covers is current)
 *   DIR/runs/<id>/tools.jsonl
 */
import { closeSync, fdatasyncSync, mkdirSync, openSync, readdirSync, statSync } from 'node:fs';
import { mkdir, open, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { RunEvent } from '@switchboard/schemas';
import { isReservedName } from '@switchboard/schemas/core';
import type { RunCheckpoint } from '../engine/types.js';
import { fsyncDir } from './atomic.js';
import { Catalog } from './catalog.js';
import { mkdirIn } from './catalog-files.js';
import { CheckpointLog, readCheckpointLog } from './checkpoint-log.js';
import { StoreError } from './errors.js';
import { EventLog, scanEventLog } from './event-log.js';
import { faultAsync } from './faults.js';
import type { SyncData } from './fd-io.js';
import { GroupCommit } from './group-commit.js';
import { acquireLock, type DirLock } from './lock.js';
import { checkCheckpoint, checkSpec, type RunSpec, readJsonStrict, writeJsonDurable } from './run-files.js';
import { StorageHealth, type StorageHealthOptions } from './storage-health.js';
import { ToolJournal } from './tool-journal.js';

function fdatasyncIfAny(file: string): void {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new StoreError('io', `cannot open ${file}: ${(e as Error).message}`, file);
  }
  try {
    fdatasyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Run ids become directory names: plain ASCII, no dots, bounded. */
export const RUN_ID_RE = /^[A-Za-z0-9_-]{1,64}$/;

export function resolveDataDir(explicit?: string, env: NodeJS.ProcessEnv = process.env): string {
  return resolve(explicit ?? env.SWITCHBOARD_DATA ?? './.switchboard');
}

export class Store {
  /** Open runs: their event log and the group commit that writes it and their checkpoints. */
  private readonly open = new Map<string, GroupCommit>();
  /** Events of a few closed logs, so paged catch-up reads do not rescan a file per page. */
  private readonly closedCache = new Map<string, RunEvent[]>();
  private closed = false;

  private constructor(
    readonly dir: string,
    readonly catalog: Catalog,
    private readonly lock: DirLock,
    /** fsync logs and checkpoints (in the background, see group-commit.ts) before events count (default). */
    readonly fsync: boolean,
    private readonly syncData?: SyncData,
    /** Whether writes succeed, the last storage error, free space. */
    readonly health: StorageHealth = new StorageHealth(dir),
  ) {
    catalog.onError = (e, file) => health.report(e, file);
  }

  /**
   * Locks and opens `dir` (created when missing). Throws StoreLockedError or StoreError.
   * `durability: 'os'` skips the fsync of logs and checkpoints: everything still survives the
   * process dying (kill -9), not a power loss. The catalog is always fsynced. `syncData`
   * replaces the fdatasync of run logs and checkpoint files (tests hold it to see what
   * happens before a sync ends).
   */
  static async open(
    dir: string,
    options: { durability?: 'fsync' | 'os'; syncData?: SyncData; health?: StorageHealthOptions } = {},
  ): Promise<Store> {
    const abs = resolve(dir);
    mkdirSync(join(abs, 'runs'), { recursive: true, mode: 0o700 });
    const lock = acquireLock(abs);
    try {
      const catalog = await Catalog.open(join(abs, 'catalog.json'));
      return new Store(
        abs,
        catalog,
        lock,
        options.durability !== 'os',
        options.syncData,
        new StorageHealth(abs, options.health),
      );
    } catch (e) {
      lock.release();
      throw e;
    }
  }

  /** Pid of the dead process whose stale lock was taken over, if any. */
  get tookOverFrom(): number | undefined {
    return this.lock.tookOver;
  }

  runDir(runId: string): string {
    if (!RUN_ID_RE.test(runId) || isReservedName(runId))
      throw new StoreError('io', `not a valid run id: ${JSON.stringify(runId)}`);
    return join(this.dir, 'runs', runId);
  }

  /**
   * Records a run: its spec, and its (empty) log, checkpoint and tool files, whose creation
   * the spec's directory fsync makes durable too — so the run's first fdatasync is an ordinary
   * one, not one that commits new files to the file system's journal while the run goes.
   */
  async writeSpec(spec: RunSpec): Promise<void> {
    const dir = this.runDir(spec.runId);
    await faultAsync('mkdir', dir);
    // Inside the existing runs/ only: a data directory that vanished is not made again.
    await mkdir(dir, { mode: 0o700 }).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== 'EEXIST') throw e;
    });
    for (const name of ['events.jsonl', 'checkpoints.jsonl', 'tools.jsonl']) {
      await faultAsync('open', join(dir, name));
      await (await open(join(dir, name), 'a', 0o600)).close();
    }
    await writeJsonDurable(join(dir, 'run.json'), spec);
    await fsyncDir(join(this.dir, 'runs'));
  }

  /**
   * Removes what a run that could not be started left (its folder, whatever part of it was
   * made); best effort: what stays is swept at the next open.
   */
  async removeRun(runId: string): Promise<void> {
    const commit = this.open.get(runId);
    if (commit) {
      this.open.delete(runId);
      await commit.close().catch(() => {});
    }
    this.closedCache.delete(runId);
    await rm(this.runDir(runId), { recursive: true, force: true }).catch(() => {});
  }

  /**
   * Run folders the catalog does not know and whose log is empty: a start that failed (or a
   * process that died) between making the folder and recording the run. Removed at open.
   */
  async sweepUnrecorded(): Promise<string[]> {
    const removed: string[] = [];
    let names: string[];
    try {
      names = readdirSync(join(this.dir, 'runs'));
    } catch {
      return removed;
    }
    for (const id of names) {
      if (!RUN_ID_RE.test(id) || Object.hasOwn(this.catalog.data.runs, id)) continue;
      let size = 0;
      try {
        size = statSync(join(this.dir, 'runs', id, 'events.jsonl')).size;
      } catch {}
      if (size > 0) continue;
      await this.removeRun(id);
      removed.push(id);
    }
    return removed;
  }

  readSpec(runId: string): Promise<RunSpec | undefined> {
    return readJsonStrict(join(this.runDir(runId), 'run.json'), checkSpec(runId));
  }

  /** The open log of a run and its group commit (opened on first use; a torn tail is cut and reported). */
  openLog(runId: string): { log: EventLog; commit: GroupCommit; torn?: { bytes: number; reason: string } } {
    const open = this.open.get(runId);
    if (open) return { log: open.log, commit: open };
    this.closedCache.delete(runId);
    mkdirIn(this.runDir(runId));
    const r = EventLog.open(join(this.runDir(runId), 'events.jsonl'), runId, {
      fsync: this.fsync,
      syncData: this.syncData,
    });
    const cpFile = join(this.runDir(runId), 'checkpoints.jsonl');
    // Like the log: a checkpoint a killed process left in the OS's cache is synced before a
    // resumed run's tool calls are journaled against it.
    if (this.fsync) fdatasyncIfAny(cpFile);
    const commit = new GroupCommit(
      r.log,
      () => new CheckpointLog(cpFile, this.fsync, undefined, this.syncData),
      this.fsync,
    );
    this.open.set(runId, commit);
    return { log: r.log, commit, ...(r.torn ? { torn: r.torn } : {}) };
  }

  openLogIfOpen(runId: string): EventLog | undefined {
    return this.open.get(runId)?.log;
  }

  /** Runs whose files are closing (close waits for them). */
  private readonly closing = new Set<Promise<void>>();
  /** Logs being closed: still read from memory until their last sync is done. */
  private readonly closingLogs = new Map<string, GroupCommit>();

  /** The close of each run whose files are closing (a second close waits for it). */
  private readonly closingDone = new Map<string, Promise<void>>();

  /** Writes what is pending, waits until it is durable and closes the run's files. */
  async closeLog(runId: string): Promise<void> {
    const commit = this.open.get(runId);
    if (!commit) {
      await this.closingDone.get(runId)?.catch(() => {});
      return;
    }
    this.open.delete(runId);
    this.closingLogs.set(runId, commit);
    const p = commit.close();
    this.closing.add(p);
    this.closingDone.set(runId, p);
    try {
      await p;
    } finally {
      this.closing.delete(p);
      if (this.closingDone.get(runId) === p) this.closingDone.delete(runId);
      if (this.closingLogs.get(runId) === commit) this.closingLogs.delete(runId);
    }
  }

  /** The log of a run open or closing in this process. */
  private liveLog(runId: string): EventLog | undefined {
    return (this.open.get(runId) ?? this.closingLogs.get(runId))?.log;
  }

  /**
   * Durable events with seq > after, from the open log or from the file; with `written`, also
   * those of an open log handed to the OS and not yet synced (a closed log is all durable).
   */
  readEvents(runId: string, after = 0, limit = Number.POSITIVE_INFINITY, written = false): RunEvent[] {
    const live = this.liveLog(runId);
    if (live) return live.after(after, limit, written);
    const events = this.closedEvents(runId);
    // Seqs are contiguous from 1, so the index is the seq.
    const start = Math.max(0, after);
    return events.slice(start, start + Math.min(limit, events.length));
  }

  /** The seq through which a run's log is durable (all of a closed log). */
  durableSeq(runId: string): number {
    const live = this.liveLog(runId);
    if (live) return live.durableSeq;
    return this.closedEvents(runId).at(-1)?.seq ?? 0;
  }

  /** The events of a closed log, from a small cache of the last ones read. */
  private closedEvents(runId: string): RunEvent[] {
    let events = this.closedCache.get(runId);
    if (!events) {
      events = scanEventLog(join(this.runDir(runId), 'events.jsonl'), runId).events;
      this.closedCache.set(runId, events);
      if (this.closedCache.size > 8) this.closedCache.delete(this.closedCache.keys().next().value!);
    }
    return events;
  }

  /**
   * Hands a checkpoint to the run's group commit (the run's log must be open) and resolves once
   * it is durable: written after the log lines under it, and synced with them when fsync.
   */
  writeCheckpoint(cp: RunCheckpoint): Promise<void> {
    const commit = this.open.get(cp.runId) ?? this.openLog(cp.runId).commit;
    commit.checkpoint(cp);
    return commit.durable();
  }

  /**
   * The checkpoint to resume from: the last one whose seq is at most `logSeq` (the run log's
   * last seq), so it never points past the log. A torn final line is skipped; anything else
   * damaged throws.
   */
  async readCheckpoint(runId: string, logSeq = Number.POSITIVE_INFINITY): Promise<RunCheckpoint | undefined> {
    return readCheckpointLog(join(this.runDir(runId), 'checkpoints.jsonl'), checkCheckpoint(runId), logSeq)
      .checkpoint;
  }

  openJournal(runId: string): ToolJournal {
    return ToolJournal.open(join(this.runDir(runId), 'tools.jsonl'));
  }

  /** Flushes and closes every log, waits for the catalog, releases the lock. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const id of [...this.open.keys()]) await this.closeLog(id);
    await Promise.allSettled([...this.closing]);
    await this.catalog.flush();
    this.health.close();
    this.lock.release();
  }
}
