/**
 * Validation against JSON Schemas that come from flows (agent output schemas, guard schemas).
 * Those schemas are data from a document, so they are interpreted, never compiled to code.
 */
import { Validator } from '@cfworker/json-schema';

export interface SchemaCheck {
  valid: boolean;
  /** Human-readable problems, each naming its location in the checked value. */
  errors: string[];
}

const cache = new WeakMap<object, Validator>();

export function checkAgainstSchema(schema: object, value: unknown): SchemaCheck {
  let v = cache.get(schema);
  if (!v) {
    v = new Validator(schema as never, '2020-12', false);
    cache.set(schema, v);
  }
  const r = v.validate(value);
  return {
    valid: r.valid,
    errors: r.errors.slice(0, 20).map((e) => `${e.instanceLocation.replace(/^#/, '') || '/'}: ${e.error}`),
  };
}
