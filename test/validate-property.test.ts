/**
 * Property tests of the validator and the serializer. CI runs a few hundred cases per property;
 * `pnpm test:full` (SWITCHBOARD_FULL=1) runs 10,000. The seed is logged; replay a failure with
 * SWITCHBOARD_SEED=<seed>.
 */
import { validate, validateText } from '@switchboard/nodes';
import {
  PROBLEM_CODES,
  type Problem,
  parseFlowText,
  pointerParts,
  serializeFlow,
  type ValidationResult,
} from '@switchboard/schemas';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyBytes, byteOp, mutate, mutation, validFlow } from './fixtures/arbitraries.js';

const FULL = process.env.SWITCHBOARD_FULL === '1';
const RUNS = FULL ? 10_000 : 300;
const SEED = process.env.SWITCHBOARD_SEED ? Number(process.env.SWITCHBOARD_SEED) : Date.now() % 2 ** 31;
console.log(`validator properties: seed ${SEED}, ${RUNS} runs each (replay: SWITCHBOARD_SEED=${SEED})`);
const params = (salt: number) => ({ seed: SEED + salt, numRuns: RUNS });
const timeout = FULL ? 600_000 : 120_000;

function resolves(doc: unknown, path: string): boolean {
  let cur = doc;
  for (const k of pointerParts(path)) {
    if (cur === null || typeof cur !== 'object' || !Object.hasOwn(cur, k)) return false;
    cur = (cur as Record<string, unknown>)[k];
  }
  return true;
}

const parentOf = (path: string) => path.slice(0, Math.max(0, path.lastIndexOf('/')));

/** Accepted with no errors, or rejected with errors that each carry a JSON pointer into the document. */
function checkVerdict(r: ValidationResult, doc: unknown) {
  expect(r.ok).toBe(r.errors.length === 0);
  for (const p of [...r.errors, ...r.warnings] as Problem[]) {
    expect(Object.hasOwn(PROBLEM_CODES, p.code)).toBe(true);
    expect(typeof p.message).toBe('string');
    expect(p.path === '' || p.path.startsWith('/')).toBe(true);
    // The path names a place of the document, or the object a missing property belongs in.
    if (doc !== undefined && p.code !== 'too-many-errors')
      expect(resolves(doc, p.path) || resolves(doc, parentOf(p.path)), `${p.code} at ${p.path}`).toBe(true);
  }
  if (r.ok) expect(r.flow).toBeDefined();
}

describe('validator properties', () => {
  it(
    'generated flows are valid, and survive serialize → parse → serialize unchanged',
    () => {
      fc.assert(
        fc.property(validFlow, (flow) => {
          const r = validate(flow);
          expect(r.errors).toEqual([]);
          expect(r.warnings).toEqual([]);
          const text = serializeFlow(flow);
          const parsed = parseFlowText(text);
          if (!parsed.ok) throw new Error(`serialized flow does not parse: ${parsed.errors[0]?.message}`);
          expect(parsed.value).toEqual(flow);
          const again = serializeFlow(parsed.value as typeof flow);
          expect(again).toBe(text);
          expect(validateText(text)).toMatchObject({ ok: true, errors: [], warnings: [] });
        }),
        params(1),
      );
    },
    timeout,
  );

  it(
    'mutated documents: never a throw; accepted, or rejected with errors that carry JSON paths',
    () => {
      const verdicts = { accepted: 0, rejected: 0 };
      fc.assert(
        fc.property(validFlow, fc.array(mutation, { minLength: 1, maxLength: 5 }), (flow, ms) => {
          let doc: unknown = flow;
          for (const m of ms) doc = mutate(doc, m);
          const r = validate(doc);
          checkVerdict(r, doc);
          verdicts[r.ok ? 'accepted' : 'rejected']++;
          // The same verdict through text, as the CLI and the API read it.
          const t = JSON.stringify(doc);
          if (t !== undefined) {
            const rt = validateText(t);
            expect(rt.ok).toBe(r.ok);
          }
        }),
        params(2),
      );
      console.log(`mutated documents: ${verdicts.accepted} accepted, ${verdicts.rejected} rejected`);
      expect(verdicts.rejected).toBeGreaterThan(0);
    },
    timeout,
  );

  it(
    'byte-level mutations of valid files: never a throw; accepted, or rejected with paths',
    () => {
      const verdicts = { accepted: 0, rejected: 0 };
      fc.assert(
        fc.property(validFlow, fc.array(byteOp, { minLength: 1, maxLength: 4 }), (flow, ops) => {
          const bytes = applyBytes(new TextEncoder().encode(serializeFlow(flow)), ops);
          const r = validateText(bytes);
          verdicts[r.ok ? 'accepted' : 'rejected']++;
          let doc: unknown;
          try {
            // As the validator reads it: UTF-8, a leading BOM dropped.
            doc = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
          } catch {
            doc = undefined; // not JSON: every problem is about the whole text
            for (const p of r.errors) expect(p.path).toBe('');
          }
          checkVerdict(r, doc);
          if (!r.ok) expect(r.errors.length).toBeGreaterThan(0);
        }),
        params(3),
      );
      console.log(`byte-level mutations: ${verdicts.accepted} accepted, ${verdicts.rejected} rejected`);
      expect(verdicts.rejected).toBeGreaterThan(0);
    },
    timeout,
  );
});
