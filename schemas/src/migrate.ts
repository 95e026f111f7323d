/**
 * Version-first reading. A flow names its format version; this module reads that number before
 * anything else, refuses versions newer than this build understands, and brings older documents
 * up to date through an explicit, numbered list of migrations — never by guessing the version
 * from the shape. Each change of format adds one migration here, with a fixture file of the old
 * version and a test.
 */
import { type Problem, problem, quote } from './codes.js';
import { FLOW_VERSION } from './flow.js';

/** One step of the format: turns a document of version `from` into version `to = from + 1`. */
export interface Migration {
  from: number;
  to: number;
  /** What changed, shown in the `migrated` warning. */
  description: string;
  /** Pure data transformation: gets a private copy, returns the new document (with `version: to`). */
  up(doc: Record<string, unknown>): Record<string, unknown>;
}

/**
 * The migrations of the flow format, oldest first. Version 1 is the first published format, so
 * the list is empty; version 2 will add `{ from: 1, to: 2, … }`.
 */
export const FLOW_MIGRATIONS: readonly Migration[] = [];

export interface MigrateOptions {
  /** Defaults to `FLOW_MIGRATIONS`; tests pass their own to exercise the mechanism. */
  migrations?: readonly Migration[];
  /** The version to reach. Default `FLOW_VERSION`. */
  target?: number;
}

export type MigrateResult =
  | { ok: true; doc: Record<string, unknown>; from: number; applied: Migration[] }
  | { ok: false; error: Problem };

/** Reads `version` first and migrates the document to `target`; the input is never modified. */
export function migrateFlow(doc: Record<string, unknown>, options: MigrateOptions = {}): MigrateResult {
  const migrations = options.migrations ?? FLOW_MIGRATIONS;
  const target = options.target ?? FLOW_VERSION;
  const refuse = (detail: string): MigrateResult => ({
    ok: false,
    error: problem('unsupported-version', '/version', detail),
  });
  if (!Object.hasOwn(doc, 'version'))
    return refuse(`the document has no "version"; a flow starts with "version": ${target}`);
  const v = doc.version;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0)
    return refuse(`${quote(v)} is not a version number; this Switchboard reads version ${target}`);
  if (v > target)
    return refuse(
      `version ${v} was written by a newer Switchboard; this one reads versions up to ${target}. Update Switchboard to open it`,
    );
  let current = doc;
  let version = v;
  const applied: Migration[] = [];
  while (version < target) {
    const step = migrations.find((m) => m.from === version);
    if (!step) return refuse(`there is no migration from version ${version} to ${target}`);
    const next = step.up(structuredClone(current));
    if (next.version !== step.to)
      throw new Error(`Migration ${step.from}→${step.to} returned version ${String(next.version)}`);
    current = next;
    version = step.to;
    applied.push(step);
  }
  return { ok: true, doc: current, from: v, applied };
}
