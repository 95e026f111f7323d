/** Test helpers: validate every event against the published event.schema.json, collect runs. */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Flow, RunEvent } from '@switchboard/schemas';
import { Ajv } from 'ajv';
import { runFlow } from '../index.js';
import type { RunHandle, RunOptions, RunResult } from '../types.js';

const schemaPath = fileURLToPath(new URL('../../../../schemas/event.schema.json', import.meta.url));
let validateFn: ReturnType<Ajv['compile']> | undefined;

/** Throws naming the event when one does not match event.schema.json. */
export function assertEventsValid(events: readonly RunEvent[]): void {
  if (!validateFn) {
    const ajv = new Ajv({ strict: false, allErrors: false });
    validateFn = ajv.compile(JSON.parse(readFileSync(schemaPath, 'utf8')));
  }
  for (const e of events) {
    if (!validateFn(e))
      throw new Error(
        `event ${e.seq} (${e.type}) does not match event.schema.json: ${JSON.stringify(validateFn.errors?.slice(0, 3))}`,
      );
  }
}

/** Checks the envelope rules: seq strictly increasing from `from`+1 without gaps, one runId family. */
export function assertSeqContiguous(events: readonly RunEvent[], from = 0): void {
  let expected = from + 1;
  for (const e of events) {
    if (e.seq !== expected) throw new Error(`event seq ${e.seq} (${e.type}) where ${expected} was expected`);
    expected++;
  }
}

export interface Collected {
  handle: RunHandle;
  events: RunEvent[];
  result: RunResult;
}

/** Runs a flow to its end, collecting every event through onEvent and validating them all. */
export async function collectRun(
  flow: Flow,
  input: unknown,
  options: RunOptions = {},
  from = 0,
): Promise<Collected> {
  const events: RunEvent[] = [];
  const onEvent = options.onEvent;
  const handle = runFlow(flow, input, {
    ...options,
    onEvent: (e) => {
      events.push(e);
      onEvent?.(e);
    },
  });
  const result = await handle.result;
  assertEventsValid(events);
  assertSeqContiguous(events, from);
  return { handle, events, result };
}

/** Compact `type@node` strings for asserting event sequences. */
export function trace(events: readonly RunEvent[], types?: readonly string[]): string[] {
  return events
    .filter((e) => !types || types.includes(e.type))
    .map((e) => (e.nodeId ? `${e.type}@${e.nodeId}` : e.type));
}
