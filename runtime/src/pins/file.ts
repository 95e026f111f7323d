/**
 * Pins files beside a flow: `FLOW.pins.json` next to `FLOW.json` (or any file named with
 * `--pins`). Read with a size limit before parsing, keys that reach a prototype refused, and
 * checked with the one checker of `@switchboard/schemas`: a problem names the file and the JSON
 * path. Written atomically, so a crash never leaves half a file.
 */
import { readFile, stat } from 'node:fs/promises';
import {
  checkPinsDocument,
  emptyPins,
  MAX_PINS,
  MAX_PINS_BYTES,
  type Pin,
  type PinsDocument,
  parseFlowText,
  type RunEvent,
} from '@switchboard/schemas/core';
import { writeFileAtomic } from '../store/atomic.js';
import { PinError } from './extract.js';

/** `flows/x.json` → `flows/x.pins.json`. */
export function pinsPathFor(flowFile: string): string {
  return `${flowFile.replace(/\.json$/i, '')}.pins.json`;
}

/** Checks a pins document given as text; `what` names it in errors. */
export function parsePinsText(text: string, what: string): PinsDocument {
  const parsed = parseFlowText(text, { maxBytes: MAX_PINS_BYTES, maxValues: 1_000_000 });
  if (!parsed.ok) {
    const p = parsed.errors[0];
    throw new PinError(`${what} is unusable at ${p?.path || '/'}: ${p?.message ?? 'unreadable'}`);
  }
  const r = checkPinsDocument(parsed.value);
  if (!r.ok) throw new PinError(`${what} is invalid at ${r.problem.path}: ${r.problem.message}`);
  return r.doc;
}

/** The pins in `file`; an empty document when it does not exist and `missingOk`. */
export async function readPinsFile(file: string, missingOk = false): Promise<PinsDocument> {
  let size: number;
  try {
    size = (await stat(file)).size;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && missingOk) return emptyPins();
    throw new PinError(`the pins file ${file}: cannot read it (${code ?? (e as Error).message})`);
  }
  if (size > MAX_PINS_BYTES)
    throw new PinError(`the pins file ${file}: ${size} bytes is larger than the limit of ${MAX_PINS_BYTES}`);
  return parsePinsText(await readFile(file, 'utf8'), `the pins file ${file}`);
}

/**
 * Writes a pins document, refusing one that could not be read back (more pins, or more bytes,
 * than a pins file may hold): a PinError naming the limit, and the file is left as it was.
 */
export async function writePinsFile(file: string, doc: PinsDocument): Promise<void> {
  if (doc.pins.length > MAX_PINS) throw new PinError(`a flow has at most ${MAX_PINS} pins; unpin some first`);
  const text = `${JSON.stringify(doc, null, 2)}\n`;
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_PINS_BYTES)
    throw new PinError(
      `the pins would take ${bytes} bytes, more than the limit of ${MAX_PINS_BYTES}; unpin some (or a node with a very long output) first`,
    );
  await writeFileAtomic(file, text);
}

/** The pins a run started with (its `run.started` event), checked; undefined when none. */
export function pinsOfEvents(events: readonly RunEvent[]): Pin[] | undefined {
  const started = events.find((e) => e.type === 'run.started' && e.parentRunId === undefined);
  const pins = started?.type === 'run.started' ? started.pins : undefined;
  if (!pins || pins.length === 0) return undefined;
  const r = checkPinsDocument({ format: 'switchboard-pins', version: 1, pins });
  if (!r.ok)
    throw new PinError(`the run's recorded pins are invalid at ${r.problem.path}: ${r.problem.message}`);
  return r.doc.pins;
}
