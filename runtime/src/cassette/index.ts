// Record and replay of runs at the model-provider and tool-host boundary.
export * from './canonical.js';
export * from './compare.js';
export * from './file.js';
export * from './play.js';
export * from './record.js';
export * from './replay-run.js';
