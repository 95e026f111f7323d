import { copyFileSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { McpHostError } from '../errors.js';
import { canonicalServerUrl, McpAuthStore } from './store.js';

let root: string;
let store: McpAuthStore;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'sb-auth-store-'));
  store = new McpAuthStore(join(root, 'mcp-auth'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('the OAuth store: the server URL is hostile data', () => {
  it('names files by a hash, whatever the URL holds; entries stay inside the directory', () => {
    const hostile = [
      'http://evil.example/../../../etc/passwd',
      'https://a.example/__proto__?constructor=prototype',
      'https://b.example/%2e%2e%2f%2e%2e%2fx',
      'https://c.example/mcp#fragment/../../x',
    ];
    for (const u of hostile) {
      expect(store.fileOf(u).startsWith(join(root, 'mcp-auth'))).toBe(true);
      store.write(u, { tokens: { access_token: 'secret', token_type: 'bearer' } });
    }
    const names = readdirSync(join(root, 'mcp-auth'));
    expect(names).toHaveLength(hostile.length);
    for (const n of names) expect(n).toMatch(/^[0-9a-f]{64}\.json$/);
    expect(store.read(hostile[1]!)?.tokens?.access_token).toBe('secret');
    expect(Object.getPrototypeOf(store.read(hostile[1]!))).toBe(Object.prototype);
    expect(statSync(join(root, 'mcp-auth')).mode & 0o777).toBe(0o700);
    for (const n of names) expect(statSync(join(root, 'mcp-auth', n)).mode & 0o777).toBe(0o600);
  });

  it('a fragment does not make another server; credentials in the URL and other schemes are refused', () => {
    expect(canonicalServerUrl('https://x.example/mcp#a')).toBe('https://x.example/mcp');
    expect(() => canonicalServerUrl('https://user:pw@x.example/mcp')).toThrow(McpHostError);
    expect(() => canonicalServerUrl('file:///etc/passwd')).toThrow(/http\(s\)/);
    expect(() => canonicalServerUrl('not a url')).toThrow(/not a valid server URL/);
  });

  it('an entry copied under another server’s name is not used for it', () => {
    store.write('https://a.example/mcp', { tokens: { access_token: 'for-a', token_type: 'bearer' } });
    copyFileSync(store.fileOf('https://a.example/mcp'), store.fileOf('https://b.example/mcp'));
    expect(store.read('https://b.example/mcp')).toBeUndefined();
  });

  it('lists logins without their secrets', () => {
    store.write('https://a.example/mcp', {
      tokens: { access_token: 'tok', token_type: 'bearer', expires_in: 60 },
      tokensSavedAt: 1000,
    });
    expect(store.list()).toEqual([
      { serverUrl: 'https://a.example/mcp', grant: 'authorization_code', hasTokens: true, expiresAt: 61_000 },
    ]);
    expect(JSON.stringify(store.list())).not.toContain('tok"');
  });
});
