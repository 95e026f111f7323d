/**
 * `@switchboard/nodes/core`: the kinds, their behaviours, the registry and the helpers, without
 * the validator. `validate()` loads the schemas validator and with it Ajv (~10 MB resident in
 * Node), which the run engine needs only when a run asks for validation; the engine imports this
 * entry and loads `@switchboard/nodes` lazily for that. `@switchboard/nodes` is this plus
 * `validate` / `validateText`.
 */
export * from './builtin.js';
export * from './kind.js';
export {
  agentBehavior,
  buildMessages,
  buildSystemPrompt,
  checkToolCalls,
  parseJsonOutput,
} from './kinds/agent/behavior.js';
export { AgentConfig, AgentOutput, agentKind, PromptSegment } from './kinds/agent/index.js';
export { deciderBehavior, resolveTargets } from './kinds/decider/behavior.js';
export { DeciderConfig, DeciderRule, deciderKind } from './kinds/decider/index.js';
export { EndConfig, endKind } from './kinds/end/index.js';
export { humanBehavior, verdictOf } from './kinds/human/behavior.js';
export { HumanConfig, humanKind } from './kinds/human/index.js';
export { NoteConfig, noteKind } from './kinds/note/index.js';
export { guardViolation, observerBehavior } from './kinds/observer/behavior.js';
export { ObserverConfig, observerKind } from './kinds/observer/index.js';
export { StartConfig, startKind } from './kinds/start/index.js';
export { teamBehavior } from './kinds/team/behavior.js';
export { TeamConfig, Termination, teamKind } from './kinds/team/index.js';
export { ToolConfig, toolKind } from './kinds/tool/index.js';
export * from './lib/index.js';
export * from './registry.js';
export * from './runtime-api.js';
