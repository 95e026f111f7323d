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

const use = (args: string[]) => {
  const commandLine = commandLineOf({ command: 'node', args });
  return {
    kind: 'mcp-server' as const,
    name: 's',
    commandLine,
    display: formatCommandLine(commandLine),
    fingerprint: fingerprintOf(commandLine),
  };
};

describe('TrustStore', () => {
  it('records approvals per flow and pins in a 0600 file that another store instance reads', () => {
    const path = join(dir, 'home', 'trust.json');
    const a = new TrustStore(path);
    expect(a.flowApproval('flow1')).toBeUndefined();
    a.approveUses('flow1', 'h1', [use(['s.js'])]);
    a.setPin('stdio:x', 'echo', 'h1');
    a.setPin('stdio:x', '__proto__', 'h2');
    const b = new TrustStore(path);
    expect(b.flowApproval('flow1')?.uses.map((u) => u.display)).toEqual(['node s.js']);
    expect(b.flowApproval('flow2')).toBeUndefined();
    expect(b.getPin('stdio:x', 'echo')?.hash).toBe('h1');
    expect(b.getPin('stdio:x', '__proto__')?.hash).toBe('h2');
    expect(({} as Record<string, unknown>).hash).toBeUndefined();
    expect(statSync(path).mode & 0o777).toBe(0o600);
    // Another hash replaces the approval instead of extending it.
    a.approveUses('flow1', 'h2', [use(['t.js'])]);
    expect(b.flowApproval('flow1')?.uses.map((u) => u.display)).toEqual(['node t.js']);
    expect(b.listFlows().map((f) => f.flowId)).toEqual(['flow1']);
    expect(b.revokeFlow('flow1')).toBe(true);
    expect(a.flowApproval('flow1')).toBeUndefined();
    expect(b.revokeFlow('flow1')).toBe(false);
  });

  it('drops the command approvals of a version 1 file (they held for every flow), keeps its pins', () => {
    const path = join(dir, 'trust.json');
    writeFileSync(
      path,
      JSON.stringify({
        version: 1,
        commands: { abc: { commandLine: { command: 'node', args: [], env: {} }, flows: ['rawko'] } },
        pins: { 'stdio:x': { echo: { hash: 'h', approvedAt: 'then' } } },
      }),
    );
    const t = new TrustStore(path);
    expect(t.listFlows()).toEqual([]);
    expect(t.read().droppedLegacy).toBe(1);
    expect(t.getPin('stdio:x', 'echo')?.hash).toBe('h');
    t.approveUses('rawko', 'h', []);
    expect(JSON.parse(readFileSync(path, 'utf8')).version).toBe(2);
  });

  it('refuses a corrupt file instead of treating it as empty', () => {
    const path = join(dir, 'trust.json');
    writeFileSync(path, '{ not json');
    expect(() => new TrustStore(path).flowApproval('x')).toThrow('not valid JSON');
    writeFileSync(path, JSON.stringify({ version: 2, flows: {} }));
    expect(() => new TrustStore(path).flowApproval('x')).toThrow('"flows" is not a list');
  });

  it('lives under $SWITCHBOARD_HOME, else ~/.switchboard', () => {
    expect(defaultTrustPath({ SWITCHBOARD_HOME: '/srv/sb' })).toBe('/srv/sb/trust.json');
    expect(defaultTrustPath({})).toMatch(/\.switchboard\/trust\.json$/);
  });
});
