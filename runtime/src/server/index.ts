export * from './create-server.js';
export * from './event-hub.js';
export * from './guard.js';
export * from './journaled-tools.js';
export * from './log-redaction.js';
export * from './run-manager.js';
export * from './security.js';
export * from './yjs-room.js';
