// The light half (`./core.js`, also published as `@switchboard/nodes/core`) plus the validator
// bound to the default registry, the only part that loads Ajv.
export * from './core.js';
export { validate, validateText } from './validate.js';
