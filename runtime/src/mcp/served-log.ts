/**
 * Run events of a served flow as MCP log messages (`notifications/message`), filtered by the
 * level the client set with `logging/setLevel` (info until it sets one): nodes starting and
 * completing, handovers and decisions at info, tool calls and turns at debug, a human asked at
 * notice, retries and warnings at warning, failures at error. The data is an object naming the
 * event, the run, the node and a one-line text.
 */
import type { LoggingLevel } from '@modelcontextprotocol/sdk/types.js';
import type { RunEvent } from '@switchboard/schemas';

const SEVERITY: ReadonlyMap<LoggingLevel, number> = new Map<LoggingLevel, number>([
  ['debug', 0],
  ['info', 1],
  ['notice', 2],
  ['warning', 3],
  ['error', 4],
  ['critical', 5],
  ['alert', 6],
  ['emergency', 7],
]);

export const DEFAULT_LOG_LEVEL: LoggingLevel = 'info';

export function atOrAbove(level: LoggingLevel, threshold: LoggingLevel): boolean {
  return (SEVERITY.get(level) ?? 0) >= (SEVERITY.get(threshold) ?? 0);
}

/** The engine's `log` event levels (free text) on MCP's syslog levels. */
function mcpLevelOf(level: string): LoggingLevel {
  switch (level) {
    case 'debug':
    case 'trace':
      return 'debug';
    case 'warn':
    case 'warning':
      return 'warning';
    case 'error':
      return 'error';
    default:
      return 'info';
  }
}

export interface LogLine {
  level: LoggingLevel;
  data: { event: string; runId: string; nodeId?: string; text: string };
}

export function logLineOf(e: RunEvent): LogLine | undefined {
  const on = e.nodeId ? ` ${e.nodeId}` : '';
  let level: LoggingLevel;
  let text: string;
  switch (e.type) {
    case 'run.started':
    case 'run.completed':
    case 'node.started':
    case 'node.completed':
    case 'handover':
      level = 'info';
      text = `${e.type}${on}`;
      break;
    case 'decision':
      level = 'info';
      text = `decision${on}: ${String((e as { choice?: unknown }).choice ?? '')}`;
      break;
    case 'turn.started':
      level = 'debug';
      text = `turn.started${on}`;
      break;
    case 'tool.called':
      level = 'debug';
      text = `tool.called${on}: ${e.tool}`;
      break;
    case 'input.requested':
      level = 'notice';
      text = `input.requested${on}: ${String((e as { question?: unknown }).question ?? '').slice(0, 200)}`;
      break;
    case 'run.cancelled':
      level = 'warning';
      text = 'run.cancelled';
      break;
    case 'node.failed':
    case 'run.failed':
      level = 'error';
      text = `${e.type}${on}: ${e.error.code}: ${e.error.message}`;
      break;
    case 'log':
      level = mcpLevelOf(e.level);
      text = e.text;
      break;
    default:
      return undefined;
  }
  const data: LogLine['data'] = { event: e.type, runId: e.runId, text };
  if (e.nodeId !== undefined) data.nodeId = e.nodeId;
  return { level, data };
}
