/**
 * The version of Switchboard this code is: runtime/package.json's, which is also the release
 * package's (scripts/release/pack.mjs). A literal, so no module has to locate package.json
 * relative to itself (the bundles move code around); version.test.ts keeps the two equal.
 */
export const VERSION = '0.1.0';
