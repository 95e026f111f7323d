import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  loadSecretsPolicy,
  redact,
  redactDeep,
  SecretRefusedError,
  SecretsConfigError,
  SecretsPolicy,
} from './secrets.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sb-secrets-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('the secrets policy', () => {
  it('binds the well-known keys to their vendor by default, and nothing else', () => {
    const p = new SecretsPolicy();
    expect(() =>
      p.check('OPENAI_API_KEY', 'https://api.openai.com/v1', 'models.default.apiKey'),
    ).not.toThrow();
    expect(() => p.check('OPENAI_API_KEY', 'https://evil.example/v1', 'models.default.apiKey')).toThrow(
      'models.default.apiKey: the environment variable OPENAI_API_KEY may not be sent to evil.example; the operator binds it to api.openai.com',
    );
    expect(() => p.check('AWS_SECRET_ACCESS_KEY', 'https://api.openai.com/v1', 'x')).toThrow(
      SecretRefusedError,
    );
    expect(() => p.check('SWITCHBOARD_TOKEN', 'https://api.openai.com/v1', 'x')).toThrow(
      'never sent anywhere',
    );
    expect(() => p.check('OPENAI_API_KEY', 'http://api.openai.com:8080/', 'x')).not.toThrow();
    const ported = new SecretsPolicy([['K', ['127.0.0.1:11434', '*.corp.example']]]);
    expect(() => ported.check('K', 'http://127.0.0.1:11434/v1', 'x')).not.toThrow();
    expect(() => ported.check('K', 'http://127.0.0.1:11435/v1', 'x')).toThrow('127.0.0.1:11435');
    expect(() => ported.check('K', 'https://llm.corp.example/v1', 'x')).not.toThrow();
    expect(() => ported.check('K', 'https://corp.example.evil/v1', 'x')).toThrow();
  });

  it('reads DATA/secrets.json, --secrets-config and --allow-secret; a bad entry names the file and path', () => {
    writeFileSync(join(dir, 'secrets.json'), JSON.stringify({ secrets: { LOCAL_KEY: ['127.0.0.1:8000'] } }));
    const other = join(dir, 'other.json');
    writeFileSync(other, JSON.stringify({ defaults: false, secrets: { B: 'b.example' } }));
    const p = loadSecretsPolicy({ dataDir: dir, configFile: other, allow: ['C=c.example,d.example'] });
    expect(p.hostsFor('LOCAL_KEY')).toEqual(['127.0.0.1:8000']);
    expect(p.hostsFor('B')).toEqual(['b.example']);
    expect(p.hostsFor('C')).toEqual(['c.example', 'd.example']);
    expect(p.hostsFor('OPENAI_API_KEY')).toBeUndefined(); // defaults: false
    writeFileSync(other, JSON.stringify({ secrets: { B: ['not a host'] } }));
    expect(() => loadSecretsPolicy({ configFile: other })).toThrow(
      `${other}: /secrets/B/0: "not a host" is not a host`,
    );
    writeFileSync(other, JSON.stringify({ secrets: { SWITCHBOARD_TOKEN: ['x.example'] } }));
    expect(() => loadSecretsPolicy({ configFile: other })).toThrow(SecretsConfigError);
    expect(() => loadSecretsPolicy({ allow: ['NOHOST'] })).toThrow(
      '--allow-secret NOHOST: expected NAME=HOST[,HOST]',
    );
    expect(() => loadSecretsPolicy({ configFile: join(dir, 'missing.json') })).toThrow('ENOENT');
  });

  it('redacts every bound value from text and JSON', () => {
    const s = [{ name: 'K', value: 'sk-canary-123', hosts: [] }];
    expect(redact('Bearer sk-canary-123 and sk-canary-123', s)).toBe('Bearer [secret K] and [secret K]');
    expect(redactDeep({ a: ['x sk-canary-123'], b: 1 }, s)).toEqual({ a: ['x [secret K]'], b: 1 });
    expect(
      new SecretsPolicy().boundSecrets({
        OPENAI_API_KEY: 'sk-abcdef',
        SWITCHBOARD_TOKEN: 'tok-123456',
        OTHER: 'x',
      }),
    ).toEqual([
      { name: 'OPENAI_API_KEY', value: 'sk-abcdef', hosts: ['api.openai.com'] },
      { name: 'SWITCHBOARD_TOKEN', value: 'tok-123456', hosts: [] },
    ]);
  });
});
