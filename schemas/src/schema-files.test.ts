import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { EVENT_SCHEMA_ID, FLOW_SCHEMA_ID, FLOW_TESTS_SCHEMA_ID } from './index.js';
import { renderSchemaFiles } from './schema-files.js';

describe('committed JSON Schema files', () => {
  it.each(Object.entries(renderSchemaFiles()))(
    '%s matches the TypeBox source (run `pnpm --filter @switchboard/schemas gen`)',
    (name, text) => {
      const onDisk = readFileSync(fileURLToPath(new URL(`../${name}`, import.meta.url)), 'utf8');
      expect(onDisk).toBe(text);
    },
  );

  it('carry their $ids', () => {
    const files = renderSchemaFiles();
    expect(JSON.parse(files['flow.schema.json']).$id).toBe(FLOW_SCHEMA_ID);
    expect(JSON.parse(files['event.schema.json']).$id).toBe(EVENT_SCHEMA_ID);
    expect(JSON.parse(files['flow-tests.schema.json']).$id).toBe(FLOW_TESTS_SCHEMA_ID);
  });
});
