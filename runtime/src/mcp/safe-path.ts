/**
 * Confinement of tool-supplied paths to one root directory. Every file-touching operation of
 * the `documents`, `filesystem` and `shell` built-ins goes through `resolveInside`: a path is
 * refused when it is absolute, has a `..` segment, a NUL or a backslash, or when its real
 * location (after resolving symlinks of every existing ancestor) is outside the root's real
 * location. For targets that do not exist yet, the deepest existing ancestor is checked.
 */
import { lstat, mkdir, realpath } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { McpHostError } from './errors.js';

function refuse(userPath: string, why: string): never {
  throw new McpHostError(
    'mcp.path-refused',
    `path ${JSON.stringify(userPath.slice(0, 200))} refused: ${why}`,
  );
}

/** True when `child` is `parent` or below it (both absolute, normalised). */
export function isWithin(parent: string, child: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

/** Syntactic checks that need no file system. */
export function checkPathSyntax(userPath: string): string[] {
  if (typeof userPath !== 'string') refuse(String(userPath), 'not a string');
  if (userPath.length > 4096) refuse(userPath, 'longer than 4096 characters');
  if (userPath.includes('\0')) refuse(userPath, 'contains a NUL character');
  if (userPath.includes('\\')) refuse(userPath, 'contains a backslash');
  if (isAbsolute(userPath) || /^[A-Za-z]:/.test(userPath) || userPath.startsWith('~'))
    refuse(userPath, 'absolute paths are not allowed; use a path relative to the root');
  const segments = userPath.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.some((s) => s === '..')) refuse(userPath, '`..` segments are not allowed');
  return segments;
}

async function realOrUndefined(p: string, userPath: string): Promise<string | undefined> {
  try {
    return await realpath(p);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    if (code === 'ELOOP') refuse(userPath, 'goes through a symlink loop');
    if (code === 'ENAMETOOLONG') refuse(userPath, 'a name is too long');
    if (code === 'EACCES') refuse(userPath, 'permission denied');
    throw e;
  }
}

export interface ResolvedPath {
  /** The absolute path to operate on (inside the real root). */
  path: string;
  /** True when the target exists. */
  exists: boolean;
  /** The real root it was checked against. */
  root: string;
}

/**
 * Resolves `userPath` against `root` and proves the result stays inside. Throws
 * `mcp.path-refused` otherwise. The root must exist.
 */
export async function resolveInside(root: string, userPath: string): Promise<ResolvedPath> {
  const segments = checkPathSyntax(userPath);
  const realRoot = await realpath(resolve(root));
  const target = join(realRoot, ...segments);
  if (!isWithin(realRoot, target)) refuse(userPath, 'outside the root');
  // Walk up to the deepest existing ancestor and check where it really is.
  let probe = target;
  const rest: string[] = [];
  for (;;) {
    const real = await realOrUndefined(probe, userPath);
    if (real !== undefined) {
      if (!isWithin(realRoot, real)) refuse(userPath, 'resolves outside the root (symlink)');
      if (rest.length > 0) {
        // The existing ancestor must be a directory to hold the rest; a dangling symlink
        // further down is caught because lstat would find it while realpath does not.
        for (let i = rest.length; i > 0; i--) {
          const p = join(real, ...rest.slice(0, rest.length - i + 1));
          try {
            const st = await lstat(p);
            if (st.isSymbolicLink()) refuse(userPath, 'goes through a dangling symlink');
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code === 'ENOENT') break;
            throw e;
          }
        }
        return { path: join(real, ...rest), exists: false, root: realRoot };
      }
      return { path: real, exists: true, root: realRoot };
    }
    if (probe === realRoot) refuse(userPath, 'the root does not exist');
    rest.unshift(probe.slice(probe.lastIndexOf(sep) + 1));
    probe = probe.slice(0, probe.lastIndexOf(sep)) || sep;
  }
}

/** Creates the parent directories of a confined target (after `resolveInside`). */
export async function ensureParent(resolved: ResolvedPath): Promise<void> {
  const parent = resolved.path.slice(0, resolved.path.lastIndexOf(sep));
  if (!isWithin(resolved.root, parent)) refuse(resolved.path, 'outside the root');
  await mkdir(parent, { recursive: true });
  const real = await realpath(parent);
  if (!isWithin(resolved.root, real)) refuse(resolved.path, 'resolves outside the root (symlink)');
}
