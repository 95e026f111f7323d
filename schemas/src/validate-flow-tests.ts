/**
 * Shape check of a `*.tests.json` document, with the flow validator's style: bounded parsing,
 * reserved keys refused, every problem named by its JSON pointer.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import { explainErrors } from './explain.js';
import { type FlowTests, FlowTestsDocument } from './flow-tests.js';
import { parseFlowText } from './parse.js';

export interface TestsProblem {
  /** JSON pointer into the tests document, e.g. `/cases/2/expect/output`; `''` is the whole document. */
  path: string;
  message: string;
}

export type TestsValidation = { ok: true; tests: FlowTests } | { ok: false; errors: TestsProblem[] };

const ajv = new Ajv({ allErrors: true, strict: false, $data: false, validateFormats: false, verbose: true });
let fn: ValidateFunction | undefined;

export function validateFlowTests(doc: unknown): TestsValidation {
  fn ??= ajv.compile(FlowTestsDocument);
  if (fn(doc)) return { ok: true, tests: doc as FlowTests };
  const errors = explainErrors(ajv, fn.errors ?? [])
    .slice(0, 50)
    .map((x) => ({ path: x.path, message: x.detail }));
  return { ok: false, errors };
}

export function validateFlowTestsText(text: string | Uint8Array): TestsValidation {
  const r = parseFlowText(text);
  if (!r.ok) return { ok: false, errors: r.errors.map((p) => ({ path: p.path, message: p.message })) };
  return validateFlowTests(r.value);
}
