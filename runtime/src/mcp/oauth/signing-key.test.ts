import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { readSigningKey } from './signing-key.js';

const pem = (k: { privateKey: { export(o: object): string | Buffer } }, type: string) =>
  k.privateKey.export({ type, format: 'pem' }).toString();

describe('readSigningKey', () => {
  it("takes the key's own algorithm and keeps it as PKCS#8 whatever PEM it came in", () => {
    const p256 = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const sec1 = readSigningKey(pem(p256, 'sec1'), 'k.pem');
    expect(sec1.alg).toBe('ES256');
    expect(sec1.pem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(readSigningKey(pem(generateKeyPairSync('ec', { namedCurve: 'P-384' }), 'pkcs8'), 'k').alg).toBe(
      'ES384',
    );
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    expect(readSigningKey(pem(rsa, 'pkcs1'), 'k').alg).toBe('RS256');
    expect(readSigningKey(pem(rsa, 'pkcs8'), 'k', 'PS256').alg).toBe('PS256');
    expect(readSigningKey(pem(generateKeyPairSync('ed25519'), 'pkcs8'), 'k').alg).toBe('EdDSA');
  });

  it('refuses by name what cannot sign an assertion, naming where the key came from', () => {
    const p256 = pem(generateKeyPairSync('ec', { namedCurve: 'P-256' }), 'pkcs8');
    expect(() => readSigningKey(p256, '--private-key k.pem', 'RS256')).toThrow(
      '--private-key k.pem: this ec key signs with ES256, not RS256',
    );
    expect(() => readSigningKey('hello', '--private-key k.pem')).toThrow(
      /^--private-key k\.pem: not a PEM private key/,
    );
    const pub = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({
      type: 'spki',
      format: 'pem',
    });
    expect(() => readSigningKey(pub.toString(), 'k.pem')).toThrow(/^k\.pem: not a PEM private key/);
    const x25519 = pem(generateKeyPairSync('x25519'), 'pkcs8');
    expect(() => readSigningKey(x25519, 'k.pem')).toThrow(/a x25519 key cannot sign client assertions/);
  });
});
