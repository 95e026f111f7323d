/** Renders the committed JSON Schema files; a test compares them with what is on disk. */
import { RunEventSchema } from './events.js';
import { FlowDocument, toJsonSchema } from './flow.js';
import { FlowTestsDocument } from './flow-tests.js';

export function renderSchemaFiles(): Record<
  'flow.schema.json' | 'event.schema.json' | 'flow-tests.schema.json',
  string
> {
  const flow = { $schema: 'http://json-schema.org/draft-07/schema#', ...toJsonSchema(FlowDocument) };
  const event = { $schema: 'http://json-schema.org/draft-07/schema#', ...toJsonSchema(RunEventSchema) };
  const tests = { $schema: 'http://json-schema.org/draft-07/schema#', ...toJsonSchema(FlowTestsDocument) };
  return {
    'flow.schema.json': `${JSON.stringify(flow, null, 2)}\n`,
    'event.schema.json': `${JSON.stringify(event, null, 2)}\n`,
    'flow-tests.schema.json': `${JSON.stringify(tests, null, 2)}\n`,
  };
}
