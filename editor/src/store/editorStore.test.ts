import { defaultRegistry, validate } from '@switchboard/nodes';
import { serializeFlow } from '@switchboard/schemas';
import { afterEach, describe, expect, it } from 'vitest';
import { emptyFlow, richFlow } from '../testing/fixtures.js';
import { EditorStore } from './editorStore.js';

let store: EditorStore;
afterEach(() => store?.dispose());

function make(flow: unknown = richFlow()): EditorStore {
  store = new EditorStore({ registry: defaultRegistry, validateDelay: 1, validate });
  store.load(flow);
  return store;
}

describe('EditorStore', () => {
  it('the rich fixture is a valid flow', () => {
    expect(validate(richFlow()).errors).toEqual([]);
  });

  it('derives React Flow nodes with parents before children and edges with handles', () => {
    const s = make();
    const { nodes, edges } = s.getSnapshot();
    const idx = (id: string) => nodes.findIndex((n) => n.id === id);
    expect(idx('team1')).toBeLessThan(idx('writer'));
    expect(nodes.find((n) => n.id === 'writer')?.parentId).toBe('team1');
    expect(nodes.find((n) => n.id === 'team1')?.type).toBe('group');
    const tools = edges.find((e) => e.id === 'e6')!;
    expect([tools.sourceHandle, tools.targetHandle]).toEqual(['grant', 'tools']);
    expect(edges.find((e) => e.id === 'e3')?.data?.caption).toBe('last.json.ok = true');
    expect(edges.find((e) => e.id === 'e4')?.data?.caption).toBe('again — default');
    expect(edges.find((e) => e.id === 'e2')?.data?.caption).toBe('last 2');
    expect(s.links.get('writer')).toBe('1 tool');
    expect(s.links.get('sum')).toBe('observes Writers');
  });

  it('an edit rebuilds only the touched node; others keep their identity', () => {
    const s = make();
    const before = s.getSnapshot().nodes;
    s.applyNodeChanges([{ type: 'position', id: 'writer', position: { x: 5, y: 7 }, dragging: true }]);
    const after = s.getSnapshot().nodes;
    for (const n of after) {
      const old = before.find((b) => b.id === n.id);
      if (n.id === 'writer') expect(n).not.toBe(old);
      else expect(n).toBe(old);
    }
  });

  it('typing in a config leaves React Flow alone: only the node’s content entry changes', () => {
    const s = make();
    const snapshot = s.getSnapshot();
    let canvas = 0;
    s.subscribe(() => canvas++);
    const heard: string[] = [];
    for (const id of ['writer', 'planner']) s.content.subscribe(id, () => heard.push(id));
    const writerBefore = s.content.get('writer');
    for (const text of ['E', 'Ed', 'Edi', 'Edit']) s.setConfig({ node: 'writer' }, 'role', text, true);
    expect(s.getSnapshot()).toBe(snapshot);
    expect(canvas).toBe(0);
    expect(heard).toEqual(['writer', 'writer', 'writer', 'writer']);
    expect(s.content.get('writer')).not.toBe(writerBefore);
    expect(s.content.get('writer')?.config.role).toBe('Edit');
    expect(s.readNode('writer')?.config.role).toBe('Edit');
    // A change of frame (a move) does give React Flow a new node, with the current content.
    s.applyNodeChanges([{ type: 'position', id: 'writer', position: { x: 5, y: 7 }, dragging: true }]);
    expect(s.getSnapshot()).not.toBe(snapshot);
    expect(s.getSnapshot().nodes.find((n) => n.id === 'writer')?.data.config.role).toBe('Edit');
  });

  it('an edit that changes a caption gives React Flow that edge anew, and no other', () => {
    const s = make();
    const before = s.getSnapshot().edges;
    s.setConfig({ node: 'check' }, 'default', 'e3');
    const after = s.getSnapshot().edges;
    expect(after).not.toBe(before);
    for (const e of after) {
      const old = before.find((b) => b.id === e.id);
      if (e.id === 'e3' || e.id === 'e4') expect(e).not.toBe(old);
      else expect(e).toBe(old);
    }
    expect(after.find((e) => e.id === 'e4')?.data?.caption).not.toContain('default');
    // The same value again: nothing to draw anew.
    s.setConfig({ node: 'check' }, 'default', 'e3');
    expect(s.getSnapshot().edges).toBe(after);
  });

  it('a node not measured yet carries an estimated size and handles; a new document keeps measured sizes', () => {
    const s = make();
    const writer = () => s.getSnapshot().nodes.find((n) => n.id === 'writer')!;
    expect(writer().initialWidth).toBeGreaterThan(0);
    expect(
      writer()
        .handles?.map((h) => h.id)
        .sort(),
    ).toEqual(
      s
        .kindOf('writer')!
        .ports.map((p) => p.id)
        .sort(),
    );
    s.applyNodeChanges([{ type: 'dimensions', id: 'writer', dimensions: { width: 201, height: 47 } }]);
    expect(writer().measured).toEqual({ width: 201, height: 47 });
    expect(writer().handles).toBeUndefined();
    // React Flow keeps the element of a node whose id is in the next document, and measures it
    // again only if its size changes: the measured size must survive the load.
    s.load(richFlow());
    expect(writer().measured).toEqual({ width: 201, height: 47 });
  });

  it('serializes once per document version', () => {
    const s = make();
    const a = s.serialize();
    expect(s.serialize()).toBe(a);
    s.setConfig({ node: 'writer' }, 'role', 'Edits');
    const b = s.serialize();
    expect(b).not.toBe(a);
    expect(b).toBe(serializeFlow(s.toFlow()));
  });

  it('adds a node dropped into a team as a member with a relative position', () => {
    const s = make(emptyFlow());
    const team = s.addNode('team', { x: 100, y: 100 });
    const agent = s.addNode('agent', { x: 150, y: 180 });
    expect(s.readNode(agent)).toMatchObject({ parent: team, position: { x: 50, y: 80 } });
    expect(s.readNode(team)?.size).toEqual({ width: 520, height: 320 });
    expect([team, agent]).toEqual(['team1', 'agent1']);
  });

  it('drags a member out of its team and another one in, converting positions', () => {
    const s = make(emptyFlow());
    const team = s.addNode('team', { x: 100, y: 100 });
    const a = s.addNode('agent', { x: 150, y: 180 });
    // Out: to absolute (1000, 1000).
    s.applyNodeChanges([{ type: 'position', id: a, position: { x: 900, y: 900 }, dragging: true }]);
    s.commitDrag([a]);
    expect(s.readNode(a)).toMatchObject({ position: { x: 1000, y: 1000 } });
    expect(s.readNode(a)?.parent).toBeUndefined();
    // In again.
    s.applyNodeChanges([{ type: 'position', id: a, position: { x: 300, y: 200 }, dragging: true }]);
    s.commitDrag([a]);
    expect(s.readNode(a)).toMatchObject({ parent: team, position: { x: 200, y: 100 } });
  });

  it('a team grows to hold a member dropped across its border, members staying put on the canvas', () => {
    const s = make(emptyFlow());
    const team = s.addNode('team', { x: 100, y: 100 });
    expect(s.readNode(team)?.size).toEqual({ width: 520, height: 320 });
    const a = s.addNode('agent', { x: 900, y: 900 });
    const size = s.sizeOf(a);
    // Its centre inside the team's box, its corner beyond the bottom right.
    s.applyNodeChanges([{ type: 'position', id: a, position: { x: 500, y: 380 }, dragging: true }]);
    s.commitDrag([a]);
    expect(s.readNode(a)).toMatchObject({ parent: team, position: { x: 400, y: 280 } });
    expect(s.readNode(team)).toMatchObject({
      position: { x: 100, y: 100 },
      size: { width: 400 + size.width + 16, height: 280 + size.height + 16 },
    });
    // Across the top left: the team moves out, its members move in by as much.
    const b = s.addNode('agent', { x: 900, y: 1200 });
    s.applyNodeChanges([{ type: 'position', id: b, position: { x: 90, y: 120 }, dragging: true }]);
    s.commitDrag([b]);
    const t = s.readNode(team)!;
    expect(t.position).toEqual({ x: 100 - 26, y: 100 - 28 });
    expect(s.absolutePosition(b)).toEqual({ x: 90, y: 120 });
    expect(s.absolutePosition(a)).toEqual({ x: 500, y: 380 });
    expect(s.readNode(b)?.position).toEqual({ x: 16, y: 48 });
    // One undo step takes back the move and the growth together.
    s.undo();
    expect(s.readNode(team)?.position).toEqual({ x: 100, y: 100 });
    expect(s.readNode(b)?.parent).toBeUndefined();
  });

  it('a node added into a team makes the team grow around it', () => {
    const s = make(emptyFlow());
    const team = s.addNode('team', { x: 0, y: 0 });
    const a = s.addNode('agent', { x: 500, y: 300 });
    expect(s.readNode(a)?.parent).toBe(team);
    const box = s.readNode(team)!.size!;
    expect(box.width).toBeGreaterThanOrEqual(500 + s.sizeOf(a).width + 16);
    expect(box.height).toBeGreaterThanOrEqual(300 + s.sizeOf(a).height + 16);
  });

  it('connects by the shared rule and refuses with the reason', () => {
    const s = make(emptyFlow());
    const tool = s.addNode('tool', { x: 0, y: 300 });
    const r = s.connect(tool, 'grant', 'start', null);
    expect(r).toEqual({ reason: expect.stringContaining('incoming') });
    const agent = s.addNode('agent', { x: 300, y: 300 });
    expect(s.connect(tool, 'grant', agent, 'in')).toEqual({
      reason: expect.stringContaining('takes handover/delegate'),
    });
    expect(s.connect(tool, 'grant', agent, 'tools')).toEqual({ id: 'e1' });
    expect(s.readEdge('e1')).toEqual({ id: 'e1', kind: 'tools', source: tool, target: agent });
    expect(s.connect('end', null, 'start', null)).toHaveProperty('reason');
    expect(s.connect('start', 'out', 'end', 'in')).toEqual({ id: 'e2' });
    expect(s.connect('start', 'out', 'end', 'in')).toEqual({
      reason: expect.stringContaining('already joined'),
    });
  });

  it('undo and redo restore the exact document, one action per step', () => {
    const s = make(emptyFlow());
    const t0 = s.serialize();
    s.addNode('agent', { x: 300, y: 0 });
    const t1 = s.serialize();
    s.connect('start', 'out', 'agent1', 'in');
    const t2 = s.serialize();
    s.select({ nodes: ['end'] });
    s.deleteSelection();
    const t3 = s.serialize();
    expect(new Set([t0, t1, t2, t3]).size).toBe(4);
    s.undo();
    expect(s.serialize()).toBe(t2);
    s.undo();
    expect(s.serialize()).toBe(t1);
    s.undo();
    expect(s.serialize()).toBe(t0);
    s.redo();
    s.redo();
    s.redo();
    expect(s.serialize()).toBe(t3);
  });

  it('redo gives back the same bytes, config key order included', () => {
    const s = make(emptyFlow());
    s.addNode('agent', { x: 300, y: 0 });
    s.setConfig({ node: 'agent1' }, 'role', 'Reviewer');
    const t = s.serialize();
    s.undo();
    s.undo();
    s.redo();
    s.redo();
    expect(s.serialize()).toBe(t);
  });

  it('duplicates a team with its members and inner edges under new ids', () => {
    const s = make();
    s.select({ nodes: ['team1'] });
    const ids = s.duplicateSelection();
    expect(ids).toEqual(['team2', 'agent1', 'decider1']);
    const flow = s.toFlow();
    const team2 = flow.nodes.find((n) => n.id === 'team2')!;
    expect(team2.config.entry).toBe('agent1');
    expect(team2.position).toEqual({ x: 240, y: 0 });
    expect(flow.nodes.find((n) => n.id === 'agent1')).toMatchObject({
      parent: 'team2',
      position: { x: 20, y: 60 },
    });
    const inner = flow.edges.filter((e) => e.source === 'agent1' || e.source === 'decider1');
    expect(inner.map((e) => `${e.source}>${e.target}`).sort()).toEqual([
      'agent1>decider1',
      'decider1>agent1',
    ]);
    const back = inner.find((e) => e.source === 'decider1')!;
    expect(flow.nodes.find((n) => n.id === 'decider1')!.config.default).toBe(back.id);
    expect(s.selection.nodes).toEqual(['team2']);
  });

  it('deleting a team deletes its members and their edges', () => {
    const s = make();
    s.select({ nodes: ['team1'] });
    s.deleteSelection();
    const f = s.toFlow();
    expect(f.nodes.map((n) => n.id)).toEqual(['start', 'docs', 'sum', 'ask', 'end', 'n1']);
    expect(f.edges.map((e) => e.id)).toEqual(['e5']);
  });

  it('marks nodes with validation problems and clears them when fixed', () => {
    const s = make();
    s.setConfig({ node: 'writer' }, 'model', 'nope');
    s.validateNow();
    expect(s.marks.get('writer')).toMatch(/^error\n.*model reference/);
    expect(s.problems.errors[0]?.nodeId).toBe('writer');
    s.setConfig({ node: 'writer' }, 'model', 'big');
    s.validateNow();
    expect(s.marks.get('writer')).toBe('');
  });

  it('without a validator at hand, loads the shared one and validates with it', async () => {
    store = new EditorStore({ registry: defaultRegistry, validateDelay: 1 });
    store.load(richFlow());
    store.setConfig({ node: 'writer' }, 'model', 'nope');
    const set = await store.validated();
    expect(set.errors.map((p) => p.nodeId)).toEqual(validate(store.toFlow()).errors.map((p) => p.nodeId));
    expect(store.marks.get('writer')).toMatch(/^error\n.*model reference/);
  });

  it('a load and an export give the same bytes as serializeFlow', () => {
    const s = make();
    expect(s.serialize()).toBe(serializeFlow(richFlow()));
  });
});
