/**
 * Version-first reading: the version is read before anything else, newer versions are refused
 * clearly, and older ones go through numbered migrations. Version 1 is the first published
 * format, so the mechanism is shown with a test-only draft format 0 (fixture) and its migration.
 */
import { readFileSync } from 'node:fs';
import { validate, validateText } from '@switchboard/nodes';
import {
  FLOW_MIGRATIONS,
  FLOW_VERSION,
  type Migration,
  migrateFlow,
  serializeFlow,
} from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import { baseFlow } from './fixtures/build.js';

const v0Text = readFileSync(new URL('./fixtures/migrations/v0-draft.json', import.meta.url), 'utf8');

/** Draft 0 named a node's kind `type` and an edge's ends `from`/`to`. */
const draftToV1: Migration = {
  from: 0,
  to: 1,
  description: 'node "type" became "kind"; edge "from"/"to" became "source"/"target"',
  up(doc) {
    const nodes = (doc.nodes as Array<Record<string, unknown>>).map(({ type, ...n }) => ({
      ...n,
      kind: type,
    }));
    const edges = (doc.edges as Array<Record<string, unknown>>).map(({ from, to, ...e }) => ({
      ...e,
      source: from,
      target: to,
    }));
    return { ...doc, version: 1, nodes, edges };
  },
};

describe('flow format versions', () => {
  it('version 1 is current and needs no migration', () => {
    expect(FLOW_VERSION).toBe(1);
    expect(FLOW_MIGRATIONS).toEqual([]);
    const r = migrateFlow(baseFlow() as unknown as Record<string, unknown>);
    expect(r).toMatchObject({ ok: true, from: 1, applied: [] });
  });

  it('migrates an old document through the numbered steps, without touching the input', () => {
    const doc = JSON.parse(v0Text);
    const before = structuredClone(doc);
    const r = validate(doc, { migrations: [draftToV1] });
    expect(r.errors).toEqual([]);
    expect(r.ok).toBe(true);
    expect(r.warnings).toEqual([
      expect.objectContaining({
        code: 'migrated',
        path: '/version',
        message: expect.stringContaining('from version 0'),
      }),
    ]);
    expect(r.flow?.version).toBe(1);
    expect(r.flow?.nodes.map((n) => n.kind)).toEqual(['start', 'agent', 'end']);
    expect(r.flow?.edges[0]).toMatchObject({ source: 'start', target: 'writer' });
    expect(doc).toEqual(before);
    // Saving writes the current version.
    expect(JSON.parse(serializeFlow(r.flow!)).version).toBe(1);
  });

  it('refuses an old version it has no migration for', () => {
    const r = validateText(v0Text);
    expect(r.errors).toEqual([
      expect.objectContaining({
        code: 'unsupported-version',
        path: '/version',
        message: expect.stringContaining('no migration from version 0'),
      }),
    ]);
  });

  it('refuses a newer version clearly, before looking at the rest', () => {
    const r = validate({ version: 7, nodes: 'whatever the future holds' });
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toMatchObject({ code: 'unsupported-version', path: '/version' });
    expect(r.errors[0]!.message).toContain('version 7 was written by a newer Switchboard');
  });

  it.each([
    [{}, 'has no "version"'],
    [{ version: '1' }, '"1" is not a version number'],
    [{ version: 1.5 }, '"1.5" is not a version number'],
    [{ version: -1 }, '"-1" is not a version number'],
  ])('refuses %j', (doc, says) => {
    const r = validate(doc);
    expect(r.errors[0]).toMatchObject({ code: 'unsupported-version', path: '/version' });
    expect(r.errors[0]!.message).toContain(says);
  });

  it('a migration that does not produce its version is a programming error', () => {
    const broken: Migration = { ...draftToV1, up: (d) => ({ ...d }) };
    expect(() => migrateFlow(JSON.parse(v0Text), { migrations: [broken] })).toThrow(/returned version 0/);
  });
});
