// Test support for engine users: an in-memory ToolHost, flow builders and event assertions.
export { assertEventsValid, assertSeqContiguous, type Collected, collectRun, trace } from './events.js';
export { agent, chain, edge, flow, node } from './flows.js';
export { batteryFlow, FINAL_OUTPUT, parallelSlowFlow } from './kill-flows.js';
export { type MemoryTool, MemoryToolHost } from './memory-tools.js';
export { type RecordedRequest, recordingModels } from './recording.js';
