import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { commandLineOf, fingerprintOf, formatCommandLine } from './command-line.js';
import { defaultTrustPath, TrustStore } from './trust.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sb-trust-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('command lines', () => {
  it('show every part, quoting what a shell would not read literally', () => {
    const cl = commandLineOf({
      command: 'node',
      args: ['server.js', 'a b', "it's", 'x\u0007y'],
      env: { Z: '1', A: '${env:KEY}' },
      cwd: 'srv dir',
    });
    expect(formatCommandLine(cl)).toBe(
      `cwd='srv dir' A='\${env:KEY}' Z=1 node server.js 'a b' 'it'\\''s' 'x\\x07y'`,
    );
  });

  it('fingerprint every part: command, args, env keys and values, cwd', () => {
    const base = { command: 'node', args: ['s.js'], env: { A: '1' }, cwd: '/x' };
    const fp = fingerprintOf(commandLineOf(base));
    expect(fingerprintOf(commandLineOf({ ...base, env: { A: '1' } }))).toBe(fp);
    const variants: Array<Parameters<typeof commandLineOf>[0]> = [
      { ...base, command: 'nodejs' },
      { ...base, args: ['s.js', '-e'] },
      { ...base, args: [] },
      { ...base, env: { A: '2' } },
      { ...base, env: { A: '1', B: '1' } },
      { ...base, cwd: '/y' },
      { command: 'node', args: ['s.js'], env: { A: '1' } },
    ];
    for (const v of variants) expect(fingerprintOf(commandLineOf(v))).not.toBe(fp);
  });
});

describe('TrustStore', () => {
  it('records approvals and pins in a 0600 file that another store instance reads', () => {
    const path = join(dir, 'home', 'trust.json');
    const a = new TrustStore(path);
    const cl = commandLineOf({ command: 'node', args: ['s.js'] });
    expect(a.isApproved(cl)).toBe(false);
    a.approve(cl, 'flow1');
    a.setPin('stdio:x', 'echo', 'h1');
    const b = new TrustStore(path);
    expect(b.isApproved(cl)).toBe(true);
    expect(b.getPin('stdio:x', 'echo')?.hash).toBe('h1');
    expect(b.getPin('stdio:x', '__proto__')).toBeUndefined();
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(path, 'utf8')).commands[fingerprintOf(cl)].flows).toEqual(['flow1']);
    expect(b.revoke(fingerprintOf(cl))).toBe(true);
    expect(a.isApproved(cl)).toBe(false);
  });

  it('refuses a corrupt file instead of treating it as empty', () => {
    const path = join(dir, 'trust.json');
    writeFileSync(path, '{ not json');
    expect(() => new TrustStore(path).isApproved(commandLineOf({ command: 'x' }))).toThrow('not valid JSON');
  });

  it('lives under $SWITCHBOARD_HOME, else ~/.switchboard', () => {
    expect(defaultTrustPath({ SWITCHBOARD_HOME: '/srv/sb' })).toBe('/srv/sb/trust.json');
    expect(defaultTrustPath({})).toMatch(/\.switchboard\/trust\.json$/);
  });
});
