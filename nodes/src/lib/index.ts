export { evaluateCondition, readPath } from './condition.js';
export { firstAfter, memoryView, messagesToSummarize, threadView, type ViewOptions } from './memory.js';
export { asText, getPath } from './path.js';
export { boundedTest, MAX_MATCH_INPUT, MAX_PATTERN_LENGTH, safeRegex, UnsafePatternError } from './regex.js';
export { renderTemplate, templateFields, templateHeads } from './template.js';
