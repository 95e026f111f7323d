#!/usr/bin/env node
// The services the tests start for themselves come from Debian's packages, never a download:
// Chromium (browser tests drive it through playwright-core) and redis-server (the scale-out
// tests start their own instances on free ports). Installs what is missing when we are root;
// otherwise says exactly how.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const REDIS = process.env.REDIS_SERVER ?? '/usr/bin/redis-server';
const wanted = [
  { what: "Debian's Chromium", bin: CHROMIUM, pkg: 'chromium' },
  { what: "Debian's redis-server", bin: REDIS, pkg: 'redis-server' },
].filter((s) => !existsSync(s.bin));
if (wanted.length === 0) process.exit(0);

const pkgs = wanted.map((s) => s.pkg);
const cmd = `apt-get update && apt-get install -y --no-install-recommends ${pkgs.join(' ')}`;
if (process.getuid?.() === 0) {
  console.error(`${wanted.map((s) => `${s.what} is missing at ${s.bin}`).join('; ')}; installing: ${cmd}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update'], { stdio: 'inherit', env });
  execFileSync('apt-get', ['install', '-y', '--no-install-recommends', ...pkgs], { stdio: 'inherit', env });
  if (wanted.every((s) => existsSync(s.bin))) process.exit(0);
}
console.error(
  `The tests need ${wanted.map((s) => `${s.what} at ${s.bin}`).join(' and ')}. Install with:\n  sudo sh -c '${cmd}'`,
);
process.exit(1);
