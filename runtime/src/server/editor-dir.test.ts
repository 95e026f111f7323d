import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultEditorDir } from './editor-dir.js';

const root = mkdtempSync(join(tmpdir(), 'sb-editor-dir-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function touch(path: string): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, '{}');
}
const moduleIn = (dir: string) => pathToFileURL(join(dir, 'chunk.js')).href;

describe('defaultEditorDir', () => {
  it("finds the release package's editor from its bundle and from a chunk", () => {
    const pkg = join(root, 'lib/node_modules/switchboard');
    touch(join(pkg, 'package.json'));
    touch(join(pkg, 'editor/dist/index.html'));
    expect(defaultEditorDir(moduleIn(join(pkg, 'dist')))).toBe(join(pkg, 'editor/dist'));
    expect(defaultEditorDir(moduleIn(join(pkg, 'dist/chunks')))).toBe(join(pkg, 'editor/dist'));
  });

  it("finds the repository's editor from runtime/src/server and runtime/dist/server", () => {
    const repo = join(root, 'repo');
    touch(join(repo, 'package.json'));
    touch(join(repo, 'runtime/package.json'));
    touch(join(repo, 'editor/dist/index.html'));
    expect(defaultEditorDir(moduleIn(join(repo, 'runtime/src/server')))).toBe(join(repo, 'editor/dist'));
    expect(defaultEditorDir(moduleIn(join(repo, 'runtime/dist/server')))).toBe(join(repo, 'editor/dist'));
  });

  it('never takes an editor folder above that is not next to a package.json', () => {
    const parent = join(root, 'stray');
    touch(join(parent, 'editor/dist/index.html')); // e.g. a package named "editor" in node_modules
    const pkg = join(parent, 'switchboard');
    touch(join(pkg, 'package.json')); // its own editor is missing
    const found = defaultEditorDir(moduleIn(join(pkg, 'dist')));
    expect(found).not.toBe(join(parent, 'editor/dist'));
  });
});
