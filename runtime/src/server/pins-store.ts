/**
 * The pins of stored flows, beside them in the data directory (`pins/<hash of the flow id>.json`),
 * never in the flow document: a pin is one person's debugging choice about runs, not an edit of
 * the shared drawing. The file name is a hash, so no flow id ever becomes a path; the flow id is
 * kept inside and checked on read. Writes of one flow's pins are serialized and atomic.
 */
import { createHash } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { emptyPins, type Pin, type PinsDocument, withoutPin, withPin } from '@switchboard/schemas/core';
import { PinError } from '../pins/extract.js';
import { readPinsFile, writePinsFile } from '../pins/file.js';

export class PinsStore {
  private readonly cache = new Map<string, PinsDocument>();
  private readonly chains = new Map<string, Promise<unknown>>();

  constructor(private readonly dir: string) {}

  private file(flowId: string): string {
    return join(this.dir, `${createHash('sha256').update(flowId).digest('hex').slice(0, 40)}.json`);
  }

  async get(flowId: string): Promise<PinsDocument> {
    const hit = this.cache.get(flowId);
    if (hit) return hit;
    const file = this.file(flowId);
    const doc = (await readPinsFile(file, true)) as PinsDocument & { flowId?: unknown };
    if (doc.flowId !== undefined && doc.flowId !== flowId)
      throw new PinError(
        `the pins file ${file} belongs to flow ${JSON.stringify(doc.flowId)}, not "${flowId}"`,
      );
    const clean: PinsDocument = { format: doc.format, version: doc.version, pins: doc.pins };
    this.cache.set(flowId, clean);
    return clean;
  }

  /** Runs `change` on the flow's pins after any change already under way, and writes the result. */
  private update(flowId: string, change: (d: PinsDocument) => PinsDocument): Promise<PinsDocument> {
    const prior = this.chains.get(flowId) ?? Promise.resolve();
    const next = prior
      .catch(() => {})
      .then(async () => {
        const doc = change(await this.get(flowId));
        await mkdir(this.dir, { recursive: true });
        await writePinsFile(this.file(flowId), { ...doc, flowId } as PinsDocument);
        this.cache.set(flowId, doc);
        return doc;
      });
    this.chains.set(flowId, next);
    const done = () => {
      if (this.chains.get(flowId) === next) this.chains.delete(flowId);
    };
    // Both ways: a refused change is the caller's error, not an unhandled one here.
    next.then(done, done);
    return next;
  }

  put(flowId: string, pin: Pin): Promise<PinsDocument> {
    return this.update(flowId, (d) => withPin(d, pin));
  }

  remove(flowId: string, nodeId: string): Promise<PinsDocument> {
    return this.update(flowId, (d) => withoutPin(d, nodeId));
  }

  /** Forgets the flow's pins (a flow with none is left without a file). */
  async clear(flowId: string): Promise<void> {
    if ((await this.get(flowId)).pins.length > 0) await this.update(flowId, () => emptyPins());
  }
}
