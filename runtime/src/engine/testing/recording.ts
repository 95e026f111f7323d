/** A model factory that wraps the default one and records every request (messages, tools), for assertions. */
import { defaultModelFactory } from '../../models/factory.js';
import type { ModelFactory, ModelRequest } from '../../models/types.js';

export interface RecordedRequest {
  nodeId: string;
  messages: ModelRequest['messages'];
  tools: string[];
  jsonSchema: boolean;
}

export function recordingModels(): { factory: ModelFactory; requests: RecordedRequest[] } {
  const requests: RecordedRequest[] = [];
  const factory: ModelFactory = (name, config, ctx) => {
    const inner = defaultModelFactory(name, config, ctx);
    return {
      scripted: inner.scripted,
      complete(req) {
        requests.push({
          nodeId: req.nodeId,
          // Copied: the agent keeps appending to its own array during a turn.
          messages: req.messages.map((m) => ({ ...m })),
          tools: (req.tools ?? []).map((t) => t.name),
          jsonSchema: req.jsonSchema !== undefined,
        });
        return inner.complete(req);
      },
      ...({
        snapshot: () => (inner as unknown as { snapshot?: () => unknown }).snapshot?.(),
        restore: (s: unknown) => (inner as unknown as { restore?: (s: unknown) => void }).restore?.(s),
      } as object),
    };
  };
  return { factory, requests };
}
