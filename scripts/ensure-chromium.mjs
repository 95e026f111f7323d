#!/usr/bin/env node
// Browser tests drive Debian's Chromium through playwright-core; nothing downloads a browser.
// Installs the Debian package when it is missing and we are root; otherwise says exactly how.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const BIN = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
if (existsSync(BIN)) process.exit(0);

const cmd = 'apt-get update && apt-get install -y --no-install-recommends chromium';
if (process.getuid?.() === 0) {
  console.error(`Chromium is missing at ${BIN}; installing Debian's package: ${cmd}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update'], { stdio: 'inherit', env });
  execFileSync('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], {
    stdio: 'inherit',
    env,
  });
  if (existsSync(BIN)) process.exit(0);
}
console.error(`Browser tests need Debian's Chromium at ${BIN}. Install it with:\n  sudo sh -c '${cmd}'`);
process.exit(1);
