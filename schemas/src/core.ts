/**
 * `@switchboard/schemas/core`: everything in this package except the validator. The validator
 * loads Ajv (about 70 modules, ~10 MB of resident memory in Node), and code that only needs the
 * document types, the kind catalog, conditions, parsing or serializing — node kinds and the run
 * engine's hot path — should not pay for it. `@switchboard/schemas` is this plus `validate.ts`.
 */
export * from './codes.js';
export * from './condition.js';
export * from './edges.js';
export * from './events.js';
export * from './flow.js';
export * from './flow-tests.js';
export * from './json-schema.js';
export * from './kinds.js';
export * from './limits.js';
export * from './migrate.js';
export * from './model-request.js';
export * from './names.js';
export * from './node-summary.js';
export * from './parse.js';
export * from './pins.js';
export * from './script-path.js';
export * from './serialize.js';
