// The pnpm workspace as the release build sees it: each package's name, folder and manifest,
// read from pnpm-workspace.yaml, so a package added there is picked up without editing this.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The `packages:` globs of pnpm-workspace.yaml (plain folder names; no wildcards are used). */
function workspaceFolders() {
  const yaml = readFileSync(join(ROOT, 'pnpm-workspace.yaml'), 'utf8');
  const folders = [];
  let inPackages = false;
  for (const line of yaml.split('\n')) {
    if (/^packages:\s*$/.test(line)) inPackages = true;
    else if (/^\S/.test(line)) inPackages = false;
    else if (inPackages) {
      const m = /^\s+-\s+['"]?([^'"#\s]+)['"]?/.exec(line);
      if (m) {
        if (m[1].includes('*')) throw new Error(`pnpm-workspace.yaml: glob ${m[1]} is not supported here`);
        folders.push(m[1]);
      }
    }
  }
  return folders;
}

/** Map of package name → { name, dir, manifest }. */
export function readWorkspace() {
  const packages = new Map();
  for (const folder of workspaceFolders()) {
    const file = join(ROOT, folder, 'package.json');
    if (!existsSync(file)) continue;
    const manifest = JSON.parse(readFileSync(file, 'utf8'));
    packages.set(manifest.name, { name: manifest.name, dir: join(ROOT, folder), manifest });
  }
  return packages;
}

/** The workspace package a file belongs to (the deepest package folder holding it), if any. */
export function packageOf(workspace, file) {
  let best;
  for (const p of workspace.values())
    if (file.startsWith(p.dir + sep) && (!best || p.dir.length > best.dir.length)) best = p;
  return best;
}

/** `@scope/name/sub/path` → `@scope/name`; `name/sub` → `name`. */
export function packageName(spec) {
  return spec
    .split('/')
    .slice(0, spec.startsWith('@') ? 2 : 1)
    .join('/');
}
