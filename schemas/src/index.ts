// The light half (`./core.js`, also published as `@switchboard/schemas/core`) plus the
// validator, which is the only module that loads Ajv.
export * from './core.js';
export * from './validate.js';
export * from './validate-flow-tests.js';
