// Public library surface of @switchboard/runtime. Heavy parts (openai, MCP, server) stay
// behind lazy imports so that importing the library is cheap.

export type {
  Flow,
  ModelConfigT,
  Problem,
  RunEvent,
  ValidationResult,
} from '@switchboard/schemas';
export { FLOW_VERSION } from '@switchboard/schemas/core';
export * from './engine/index.js';
export * from './engine/types.js';
export {
  ConsentNeededError,
  FlowFileError,
  loadFlow,
  type ModelOverride,
  overrideModels,
  type RunFileOptions,
  runFlowFile,
  shutdownMcpServers,
  validateFlow,
} from './headless.js';
export { defaultModelFactory } from './models/factory.js';
export {
  createScriptedProvider,
  parseScript,
  type ScriptEntry,
  ScriptedProvider,
} from './models/scripted.js';
export * from './models/types.js';
export * from './tools/types.js';
export { VERSION } from './version.js';
