/**
 * The cassette of a stored run: its spec, its event log and its tool journal, read from a data
 * directory without taking its lock (a server may be running on it).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readStoredRun } from '../cli/stored-run.js';
import { resolveDataDir } from '../store/store.js';
import type { JournalCall, JournalEntry } from '../store/tool-journal.js';
import { cassetteFromLog, type LogCassette } from './from-log.js';

/** The calls of a tool journal file, read only; a torn last line (a call never made) is left out. */
export function readJournal(file: string): JournalCall[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  const calls: JournalCall[] = [];
  const byN = new Map<number, JournalCall>();
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    if (line === '') return;
    let e: JournalEntry;
    try {
      e = JSON.parse(line) as JournalEntry;
    } catch {
      if (i === lines.length - 1) return;
      throw new Error(`${file}: line ${i + 1} is not JSON`);
    }
    if (e.k === 'intent') {
      const c: JournalCall = { intent: e };
      calls.push(c);
      byN.set(e.n, c);
    } else if (e.k === 'done') {
      const c = byN.get(e.n);
      if (c) c.done = e;
    }
  });
  return calls;
}

/** The cassette of run `runId` in `dataDir` (default: the usual data directory). */
export async function cassetteOfStoredRun(runId: string, dataDir?: string): Promise<LogCassette> {
  const run = await readStoredRun(runId, dataDir);
  const journal = readJournal(join(resolveDataDir(dataDir), 'runs', runId, 'tools.jsonl'));
  return cassetteFromLog({ flow: run.spec.flow, input: run.spec.input, events: run.events, journal });
}
