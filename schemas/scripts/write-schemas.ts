/** Writes flow.schema.json and event.schema.json from the TypeBox definitions. */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderSchemaFiles } from '../src/schema-files.js';

for (const [name, text] of Object.entries(renderSchemaFiles())) {
  writeFileSync(fileURLToPath(new URL(`../${name}`, import.meta.url)), text);
  console.log(`wrote ${name}`);
}
