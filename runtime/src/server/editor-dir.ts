/**
 * Where the editor's static build is. In the repository that is `editor/dist`, three levels up
 * from runtime/src/server and runtime/dist/server; the release package (scripts/release) ships it
 * as `<package>/editor/dist`, and there this code sits in `<package>/dist/` or a chunk under
 * `<package>/dist/chunks/`. So: the nearest ancestor (a few levels at most) with a package.json
 * and a built `editor/dist/index.html`; when there is none, the repository's place, where the server then
 * reports that the editor is not built.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const MAX_LEVELS = 4;

export function defaultEditorDir(moduleUrl: string = import.meta.url): string {
  let dir = dirname(fileURLToPath(moduleUrl));
  for (let i = 0; i < MAX_LEVELS; i++) {
    // Only next to a package.json (the repository's root, the release package's): never an
    // `editor` folder that merely sits somewhere above, such as another package in node_modules.
    const candidate = join(dir, 'editor', 'dist');
    if (existsSync(join(dir, 'package.json')) && existsSync(join(candidate, 'index.html'))) return candidate;
    dir = dirname(dir);
  }
  return fileURLToPath(new URL('../../../editor/dist', moduleUrl));
}

/**
 * Where the shipped example flows (the templates of "New from template") are: `flows/` next to
 * the same package root as the editor's build (the repository's, the release package's), found
 * the same way; the repository's place when there is none.
 */
export function defaultTemplatesDir(moduleUrl: string = import.meta.url): string {
  let dir = dirname(fileURLToPath(moduleUrl));
  for (let i = 0; i < MAX_LEVELS; i++) {
    const candidate = join(dir, 'flows');
    if (existsSync(join(dir, 'package.json')) && existsSync(join(candidate, 'support-triage.json')))
      return candidate;
    dir = dirname(dir);
  }
  return fileURLToPath(new URL('../../../flows', moduleUrl));
}
