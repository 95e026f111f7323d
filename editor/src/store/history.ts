/**
 * Undo and redo of this editor's own edits (a co-editor's changes are never tracked). Typing
 * merges into one step (the manager's capture timeout); every other action is a step of its own.
 */
import * as Y from 'yjs';
import { LOCAL } from '../model/flowDoc.js';
import type { DocParts } from './document.js';

export class History {
  private undo_: Y.UndoManager;

  constructor(p: DocParts) {
    this.undo_ = History.managerOf(p);
  }

  private static managerOf(p: DocParts): Y.UndoManager {
    return new Y.UndoManager([p.meta, p.nodes, p.edges, p.nodeOrder, p.edgeOrder], {
      trackedOrigins: new Set([LOCAL]),
      captureTimeout: 500,
    });
  }

  get manager(): Y.UndoManager {
    return this.undo_;
  }

  /** Starts afresh on another document. */
  replace(p: DocParts): void {
    this.undo_.destroy();
    this.undo_ = History.managerOf(p);
  }

  /** Runs one discrete user action as its own undo step. */
  step(fn: () => void): void {
    this.undo_.stopCapturing();
    fn();
    this.undo_.stopCapturing();
  }

  clear(): void {
    this.undo_.clear();
  }

  undo(): void {
    this.undo_.undo();
  }

  redo(): void {
    this.undo_.redo();
  }

  dispose(): void {
    this.undo_.destroy();
  }
}
