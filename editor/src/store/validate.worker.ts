/**
 * Validates and serializes flows off the main thread (see offThread.ts). Answers each request
 * with its id; the store keeps only the answer to its latest request.
 */
import { validate } from '@switchboard/nodes';
import { type Flow, serializeFlow } from '@switchboard/schemas';

export interface ValidateRequest {
  id: number;
  flow: Flow;
}

self.onmessage = (e: MessageEvent<ValidateRequest>) => {
  const { id, flow } = e.data;
  try {
    const r = validate(flow);
    self.postMessage({ id, errors: r.errors, warnings: r.warnings, text: serializeFlow(flow) });
  } catch (err) {
    self.postMessage({ id, failed: String(err) });
  }
};
