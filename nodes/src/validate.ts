/** The schemas validator, bound to a kind registry (the default one unless given). */
import {
  type ValidateOptions,
  type ValidationResult,
  validateFlow,
  validateFlowText,
} from '@switchboard/schemas';
import { defaultRegistry } from './builtin.js';

type Opts = Partial<ValidateOptions>;

export function validate(doc: unknown, options: Opts = {}): ValidationResult {
  return validateFlow(doc, { kinds: defaultRegistry, ...options });
}

export function validateText(text: string | Uint8Array, options: Opts = {}): ValidationResult {
  return validateFlowText(text, { kinds: defaultRegistry, ...options });
}
