/**
 * The data directory: lock, catalog, and one folder per run (spec, event log, checkpoint,
 * tool journal). One `Store` per process per directory.
 *
 *   DIR/lock                  pid of the owner
 *   DIR/catalog.json          lowdb catalog (flows, run index, settings)
 *   DIR/runs/<id>/run.json    what was started (flow, input)
 *   DIR/runs/<id>/events.jsonl
 *   DIR/runs/<id>/checkpoints.jsonl  (append-only; the last line is current)
 *   DIR/runs/<id>/tools.jsonl
 */
import { mkdirSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { RunEvent } from '@switchboard/schemas';
import type { RunCheckpoint } from '../engine/types.js';
import { fsyncDir } from './atomic.js';
import { Catalog } from './catalog.js';
import { CheckpointLog, readCheckpointLog } from './checkpoint-log.js';
import { StoreError } from './errors.js';
import { EventLog, scanEventLog } from './event-log.js';
import { acquireLock, type DirLock } from './lock.js';
import { checkCheckpoint, checkSpec, type RunSpec, readJsonStrict, writeJsonDurable } from './run-files.js';
import { ToolJournal } from './tool-journal.js';

/** Run ids become directory names: plain ASCII, no dots, bounded. */
export const RUN_ID_RE = /^[A-Za-z0-9_-]{1,64}$/;

export function resolveDataDir(explicit?: string, env: NodeJS.ProcessEnv = process.env): string {
  return resolve(explicit ?? env.SWITCHBOARD_DATA ?? './.switchboard');
}

export class Store {
  private readonly logs = new Map<string, EventLog>();
  private readonly cpLogs = new Map<string, CheckpointLog>();
  /** Events of a few closed logs, so paged catch-up reads do not rescan a file per page. */
  private readonly closedCache = new Map<string, RunEvent[]>();
  private closed = false;

  private constructor(
    readonly dir: string,
    readonly catalog: Catalog,
    private readonly lock: DirLock,
    /** fsync logs and checkpoints at every turn boundary (default). */
    readonly fsync: boolean,
  ) {}

  /**
   * Locks and opens `dir` (created when missing). Throws StoreLockedError or StoreError.
   * `durability: 'os'` skips the per-turn fsync: everything still survives the process dying
   * (kill -9), not a power loss. The catalog is always fsynced.
   */
  static async open(dir: string, options: { durability?: 'fsync' | 'os' } = {}): Promise<Store> {
    const abs = resolve(dir);
    mkdirSync(join(abs, 'runs'), { recursive: true, mode: 0o700 });
    const lock = acquireLock(abs);
    try {
      const catalog = await Catalog.open(join(abs, 'catalog.json'));
      return new Store(abs, catalog, lock, options.durability !== 'os');
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
    if (!RUN_ID_RE.test(runId)) throw new StoreError('io', `not a valid run id: ${JSON.stringify(runId)}`);
    return join(this.dir, 'runs', runId);
  }

  async writeSpec(spec: RunSpec): Promise<void> {
    const dir = this.runDir(spec.runId);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await writeJsonDurable(join(dir, 'run.json'), spec);
    await fsyncDir(join(this.dir, 'runs'));
  }

  readSpec(runId: string): Promise<RunSpec | undefined> {
    return readJsonStrict(join(this.runDir(runId), 'run.json'), checkSpec(runId));
  }

  /** The open log of a run (opened on first use; a torn tail is cut and reported). */
  openLog(runId: string): { log: EventLog; torn?: { bytes: number; reason: string } } {
    const open = this.logs.get(runId);
    if (open) return { log: open };
    this.closedCache.delete(runId);
    mkdirSync(this.runDir(runId), { recursive: true, mode: 0o700 });
    const r = EventLog.open(join(this.runDir(runId), 'events.jsonl'), runId, { fsync: this.fsync });
    this.logs.set(runId, r.log);
    return r;
  }

  openLogIfOpen(runId: string): EventLog | undefined {
    return this.logs.get(runId);
  }

  async closeLog(runId: string): Promise<void> {
    this.cpLogs.get(runId)?.close();
    this.cpLogs.delete(runId);
    const log = this.logs.get(runId);
    if (!log) return;
    this.logs.delete(runId);
    await log.close();
  }

  /** Events with seq > after, from the open log or from the file. */
  readEvents(runId: string, after = 0, limit = Number.POSITIVE_INFINITY): RunEvent[] {
    const open = this.logs.get(runId);
    if (open) return open.after(after, limit);
    let events = this.closedCache.get(runId);
    if (!events) {
      events = scanEventLog(join(this.runDir(runId), 'events.jsonl'), runId).events;
      this.closedCache.set(runId, events);
      if (this.closedCache.size > 8) this.closedCache.delete(this.closedCache.keys().next().value!);
    }
    // Seqs are contiguous from 1, so the index is the seq.
    const start = Math.max(0, after);
    return events.slice(start, start + Math.min(limit, events.length));
  }

  /**
   * Durable checkpoint: the event log is flushed (and fsynced) first, then the checkpoint is
   * appended to the run's checkpoint log (and fsynced): a checkpoint never points past the log.
   */
  async writeCheckpoint(cp: RunCheckpoint): Promise<void> {
    // Serialised at once: the engine's snapshot is only valid until its next step.
    const line = `${JSON.stringify(cp)}\n`;
    const log = this.logs.get(cp.runId);
    if (log) {
      if (this.fsync) await log.sync();
      else log.flush();
    }
    let cpl = this.cpLogs.get(cp.runId);
    if (!cpl) {
      cpl = new CheckpointLog(join(this.runDir(cp.runId), 'checkpoints.jsonl'), this.fsync);
      this.cpLogs.set(cp.runId, cpl);
    }
    cpl.append(line);
  }

  /** The last checkpoint of a run (a torn final line is skipped; anything else damaged throws). */
  async readCheckpoint(runId: string): Promise<RunCheckpoint | undefined> {
    return readCheckpointLog(join(this.runDir(runId), 'checkpoints.jsonl'), checkCheckpoint(runId))
      .checkpoint;
  }

  openJournal(runId: string): ToolJournal {
    return ToolJournal.open(join(this.runDir(runId), 'tools.jsonl'));
  }

  /** Flushes and closes every log, waits for the catalog, releases the lock. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const id of [...this.logs.keys()]) await this.closeLog(id);
    await this.catalog.flush();
    this.lock.release();
  }
}
