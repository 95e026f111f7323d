export * from './models/types.js';
export * from './tools/types.js';
