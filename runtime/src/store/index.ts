export * from './atomic.js';
export * from './catalog.js';
export * from './errors.js';
export * from './event-log.js';
export * from './lock.js';
export * from './run-files.js';
export * from './store.js';
export * from './tool-journal.js';
