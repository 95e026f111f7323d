/**
 * Shipped example flows as read-only templates: `POST /api/flows/from-template/:templateId`
 * copies one into a new flow with an id of its own, so nobody edits the example everyone starts
 * from. Templates are the `.json` files of one folder (the repository's `flows/` by default),
 * named by their file name; a name is a plain word, so it can never leave that folder.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

export const TEMPLATE_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

export { defaultTemplatesDir } from './editor-dir.js';

export class FlowTemplates {
  constructor(readonly dir: string | false) {}

  /** The template's text, or undefined when there is no such template. */
  async text(templateId: string): Promise<string | undefined> {
    if (!this.dir || !TEMPLATE_ID.test(templateId)) return undefined;
    try {
      return await readFile(join(this.dir, `${templateId}.json`), 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
  }
}

const ALPHABET = 'abcdefghijkmnpqrstuvwxyz23456789';

/** `<templateId>-` and four random letters or digits (as the editor names untitled flows). */
export function newFlowId(templateId: string, isFree: (id: string) => boolean): string {
  for (let len = 4; ; len++) {
    for (let attempt = 0; attempt < 20; attempt++) {
      const id = `${templateId}-${[...randomBytes(len)].map((b) => ALPHABET[b % 32]).join('')}`;
      if (isFree(id)) return id;
    }
  }
}
