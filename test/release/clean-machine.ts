/**
 * What the release test needs to act as a clean machine: an environment with none of the
 * workspace's variables and only Node, npm and the install prefix on PATH; a process runner; the
 * install-time scripts found in an installed tree; a one-node flow.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Flow } from '@switchboard/schemas';

/** start → one scripted agent → end. */
export const oneNode = (): Flow => ({
  version: 1,
  id: 'one-node',
  name: 'One node',
  models: { default: { provider: 'scripted', script: [{ fallback: true, text: 'scripted answer' }] } },
  nodes: [
    { id: 'start', kind: 'start', position: { x: 0, y: 0 }, config: {} },
    {
      id: 'writer',
      kind: 'agent',
      position: { x: 200, y: 0 },
      config: { role: 'Writer', model: 'default', prompt: [{ text: 'Task: {{task}}' }] },
    },
    { id: 'end', kind: 'end', position: { x: 400, y: 0 }, config: {} },
  ],
  edges: [
    { id: 'e1', kind: 'handover', source: 'start', target: 'writer' },
    { id: 'e2', kind: 'handover', source: 'writer', target: 'end' },
  ],
});

export interface Exec {
  code: number | null;
  out: string;
  err: string;
}

/** The environment of a clean machine: Node, npm, the prefix; none of the workspace's variables. */
export function cleanMachineEnv(prefix: string, home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined) continue;
    if (/^(npm_config_)/i.test(k) && !/^npm_config_(registry|cache)$/i.test(k)) continue;
    if (/^(npm_package_|npm_lifecycle_|pnpm_|vitest|node_path$|node_options$|node_env$|init_cwd$)/i.test(k))
      continue;
    env[k] = v;
  }
  env.PATH = [join(prefix, 'bin'), dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(':');
  env.SWITCHBOARD_HOME = home;
  return env;
}

export function run(
  env: NodeJS.ProcessEnv,
  command: string,
  args: string[],
  cwd: string,
  timeoutMs = 120_000,
): Promise<Exec> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      err += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

/** `name: hook: command` for every package under `nodeModules` with an install-time script. */
export function installScripts(nodeModules: string): string[] {
  const scripts: string[] = [];
  const walk = (dir: string) => {
    if (!existsSync(dir)) return;
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (!e.isDirectory()) continue;
      const p = join(dir, e.name);
      if (e.name.startsWith('@')) walk(p);
      else {
        const manifest = join(p, 'package.json');
        if (existsSync(manifest)) {
          const s = JSON.parse(readFileSync(manifest, 'utf8')).scripts ?? {};
          for (const k of ['preinstall', 'install', 'postinstall'])
            if (s[k]) scripts.push(`${e.name}: ${k}: ${s[k]}`);
        }
        walk(join(p, 'node_modules'));
      }
    }
  };
  walk(nodeModules);
  return scripts;
}
