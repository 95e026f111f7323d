/**
 * The run history's rows: who started a run (a name the starter sent, shown as text, bounded;
 * else how it was started), and which rows a status and a search text keep. Pure.
 */
import type { RunSummary } from '../model/api.js';

/** Characters of a starter's name shown (the server keeps 40; an older or odd server may not). */
export const MAX_WHO = 40;

const SOURCES = new Map([
  ['api', 'REST'],
  ['cli', 'CLI'],
  ['mcp', 'MCP'],
  // `switchboard run --attach`: a headless run on someone's machine, streamed to this server.
  ['attach', 'CLI'],
]);

/** Who started the run: their name as sent (bounded), or how it was started ("REST", "CLI", "MCP"). */
export function startedByLabel(r: Pick<RunSummary, 'startedBy' | 'source'>): {
  text: string;
  named: boolean;
} {
  const name = typeof r.startedBy === 'string' ? [...r.startedBy.trim()].slice(0, MAX_WHO).join('') : '';
  if (name) return { text: name, named: true };
  const how = typeof r.source === 'string' ? SOURCES.get(r.source) : undefined;
  return { text: how ?? 'unknown', named: false };
}

/** The path a run took, as one line: `start → triage → … (+3)`. */
export function pathLabel(r: Pick<RunSummary, 'path' | 'pathMore'>): string {
  const p = Array.isArray(r.path) ? r.path : [];
  return `${p.join(' → ')}${r.pathMore ? ` → … (+${r.pathMore})` : ''}`;
}

/** Status filters: a status, `stale` (open but untouched for long), or `all`. */
export const HISTORY_FILTERS = [
  'all',
  'stale',
  'completed',
  'failed',
  'cancelled',
  'waiting',
  'paused',
  'running',
  'interrupted',
] as const;

/**
 * The rows a status filter and a search text keep. The text matches, case-insensitively, the
 * run's id, its status, who started it, the nodes of its path and its error.
 */
export function filterRuns(
  list: readonly RunSummary[],
  status: string,
  text: string,
  isStale: (r: RunSummary) => boolean,
): RunSummary[] {
  const q = text.trim().toLowerCase();
  return list.filter((r) => {
    if (status === 'stale' ? !isStale(r) : status !== 'all' && r.status !== status) return false;
    if (!q) return true;
    const hay = [r.id, r.status, startedByLabel(r).text, pathLabel(r), r.error?.message ?? '']
      .join('\n')
      .toLowerCase();
    return hay.includes(q);
  });
}
