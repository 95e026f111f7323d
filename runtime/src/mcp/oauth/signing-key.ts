/**
 * The operator's key for `private_key_jwt` client authentication (RFC 7523): read once when the
 * operator configures it, checked against the algorithm, and kept as PKCS#8 PEM (what the
 * SDK's signer imports) in the operator's 0600 store, never in a flow.
 */
import { createPrivateKey, type KeyObject } from 'node:crypto';

export interface SigningKey {
  /** PKCS#8 PEM. */
  pem: string;
  /** JWS algorithm of the assertions (ES256, RS256, EdDSA…). */
  alg: string;
}

const CURVE_ALG: ReadonlyMap<string, string> = new Map([
  ['prime256v1', 'ES256'],
  ['secp384r1', 'ES384'],
  ['secp521r1', 'ES512'],
]);

/** The algorithms a key of this kind can sign with, the first being the default. */
function algsOf(key: KeyObject): string[] {
  switch (key.asymmetricKeyType) {
    case 'ec': {
      const alg = CURVE_ALG.get(String(key.asymmetricKeyDetails?.namedCurve));
      return alg ? [alg] : [];
    }
    case 'rsa':
      return ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'];
    case 'rsa-pss':
      return ['PS256', 'PS384', 'PS512'];
    case 'ed25519':
      return ['EdDSA'];
    default:
      return [];
  }
}

/**
 * Parses a private key (PKCS#8 or PKCS#1/SEC1 PEM) and settles its algorithm: the one given
 * when the key can sign with it, else the key's default. Throws an Error naming `where` (the
 * flag or file) and what is wrong.
 */
export function readSigningKey(text: string, where: string, alg?: string): SigningKey {
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: text, format: 'pem' });
  } catch (e) {
    throw new Error(`${where}: not a PEM private key (${(e as Error).message})`);
  }
  const algs = algsOf(key);
  if (algs.length === 0)
    throw new Error(
      `${where}: a ${key.asymmetricKeyType} key${key.asymmetricKeyDetails?.namedCurve ? ` on ${key.asymmetricKeyDetails.namedCurve}` : ''} cannot sign client assertions; use an EC P-256/384/521, RSA or Ed25519 key`,
    );
  if (alg !== undefined && !algs.includes(alg))
    throw new Error(`${where}: this ${key.asymmetricKeyType} key signs with ${algs.join(', ')}, not ${alg}`);
  return { pem: key.export({ type: 'pkcs8', format: 'pem' }).toString(), alg: alg ?? algs[0]! };
}
