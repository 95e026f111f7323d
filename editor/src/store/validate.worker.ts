/**
 * Validates flows off the main thread: on a flow of a thousand nodes the validator takes tens of
 * milliseconds, which typing in the inspector would otherwise feel. Answers each request with its
 * id; the store keeps only the answer to its latest request.
 */
import { validate } from '@switchboard/nodes';
import type { Flow } from '@switchboard/schemas';

export interface ValidateRequest {
  id: number;
  flow: Flow;
}

self.onmessage = (e: MessageEvent<ValidateRequest>) => {
  const { id, flow } = e.data;
  try {
    const r = validate(flow);
    self.postMessage({ id, errors: r.errors, warnings: r.warnings });
  } catch (err) {
    self.postMessage({ id, failed: String(err) });
  }
};
