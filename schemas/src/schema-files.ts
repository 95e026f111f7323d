/** Renders the committed JSON Schema files; a test compares them with what is on disk. */
import { RunEventSchema } from './events.js';
import { FlowDocument, toJsonSchema } from './flow.js';

export function renderSchemaFiles(): Record<'flow.schema.json' | 'event.schema.json', string> {
  const flow = { $schema: 'http://json-schema.org/draft-07/schema#', ...toJsonSchema(FlowDocument) };
  const event = { $schema: 'http://json-schema.org/draft-07/schema#', ...toJsonSchema(RunEventSchema) };
  return {
    'flow.schema.json': `${JSON.stringify(flow, null, 2)}\n`,
    'event.schema.json': `${JSON.stringify(event, null, 2)}\n`,
  };
}
