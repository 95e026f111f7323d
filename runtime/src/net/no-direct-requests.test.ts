/**
 * DESIGN.md: "One module makes outbound HTTP". This test scans every module of runtime/src outside
 * runtime/src/net/ and fails when one makes network requests by itself instead of going through
 * `net/outbound.ts` (`outboundFetch`, `createGuardedFetch`).
 *
 * Excluded from the scan: `*.test.ts` files (tests act as clients of our own servers, e.g. a test
 * fetching the API it started) and `testing/` folders (test-support code such as fake servers,
 * never imported by product code). Listening servers are fine anywhere: only client usage counts.
 *
 * What counts as a client request (servers that listen are fine):
 * - importing an HTTP client library (`undici`, `node-fetch`, `axios`, `got`, `ky`, `cross-fetch`,
 *   `superagent`, `needle`) or `node:dgram`;
 * - using the client half of `node:http`, `node:https`, `node:http2`, `node:net`, `node:tls`:
 *   `request`, `get`, `Agent`, `globalAgent`, `ClientRequest`, `connect`, `createConnection`,
 *   `Socket` (whether imported by name or reached through a namespace/default import);
 * - calling `fetch(…)` / `globalThis.fetch(…)`, or constructing `WebSocket`, `EventSource`,
 *   `XMLHttpRequest` (a WebSocket *server* receives sockets; it never constructs one);
 * - constructing the openai client or an MCP HTTP client transport without a `fetch` option — those
 *   SDKs make requests with the global fetch unless given ours.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const CLIENT_LIBRARIES = new Set([
  'undici',
  'node-fetch',
  'axios',
  'got',
  'ky',
  'cross-fetch',
  'superagent',
  'needle',
  'dgram',
  'node:dgram',
]);
const CORE_NET = new Set(['http', 'https', 'http2', 'net', 'tls']);
const CLIENT_MEMBERS = new Set([
  'request',
  'get',
  'Agent',
  'globalAgent',
  'ClientRequest',
  'connect',
  'createConnection',
  'Socket',
]);
const CLIENT_CONSTRUCTORS = new Set(['WebSocket', 'EventSource', 'XMLHttpRequest']);
/** SDK clients that must be handed our fetch. */
const NEEDS_FETCH_OPTION: Record<string, number> = {
  OpenAI: 0,
  AzureOpenAI: 0,
  StreamableHTTPClientTransport: 1,
  SSEClientTransport: 1,
};

interface Violation {
  file: string;
  line: number;
  what: string;
}

const coreName = (spec: string) => spec.replace(/^node:/, '');

function scanSource(file: string, text: string): Violation[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const out: Violation[] = [];
  const report = (node: ts.Node, what: string) =>
    out.push({ file, line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1, what });
  /** Local names bound to a whole core-net module (namespace, default, or `require`). */
  const moduleAliases = new Set<string>();

  /** `const spec = './x.js'` — a specifier held in a constant is as checkable as a literal. */
  const constStrings = new Map<string, string>();
  const collect = (node: ts.Node) => {
    if (
      ts.isVariableDeclaration(node) &&
      ts.isIdentifier(node.name) &&
      node.initializer &&
      ts.isStringLiteralLike(node.initializer) &&
      ts.isVariableDeclarationList(node.parent) &&
      (node.parent.flags & ts.NodeFlags.Const) !== 0
    ) {
      constStrings.set(node.name.text, node.initializer.text);
    }
    ts.forEachChild(node, collect);
  };
  collect(sf);

  const checkSpecifier = (node: ts.Node, spec: string) => {
    if (CLIENT_LIBRARIES.has(spec)) report(node, `imports the HTTP client library ${spec}`);
  };

  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const spec = node.moduleSpecifier.text;
      const typeOnly = node.importClause?.isTypeOnly === true;
      if (!typeOnly) checkSpecifier(node, spec);
      if (!typeOnly && CORE_NET.has(coreName(spec)) && node.importClause) {
        const clause = node.importClause;
        if (clause.name) moduleAliases.add(clause.name.text);
        const bindings = clause.namedBindings;
        if (bindings && ts.isNamespaceImport(bindings)) moduleAliases.add(bindings.name.text);
        if (bindings && ts.isNamedImports(bindings)) {
          for (const el of bindings.elements) {
            const imported = (el.propertyName ?? el.name).text;
            if (!el.isTypeOnly && CLIENT_MEMBERS.has(imported)) {
              report(el, `imports the client API ${imported} from ${spec}`);
            }
          }
        }
      }
    } else if (
      ts.isExportDeclaration(node) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      if (!node.isTypeOnly) checkSpecifier(node, node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const arg0 = node.arguments[0];
      // import('undici'), require('node:http')
      if (
        (callee.kind === ts.SyntaxKind.ImportKeyword ||
          (ts.isIdentifier(callee) && callee.text === 'require')) &&
        arg0
      ) {
        const spec = ts.isStringLiteralLike(arg0)
          ? arg0.text
          : ts.isIdentifier(arg0)
            ? constStrings.get(arg0.text)
            : undefined;
        if (spec !== undefined) {
          checkSpecifier(node, spec);
          if (CORE_NET.has(coreName(spec))) {
            const parent = node.parent;
            const decl = ts.isAwaitExpression(parent) ? parent.parent : parent;
            if (ts.isVariableDeclaration(decl) && ts.isIdentifier(decl.name))
              moduleAliases.add(decl.name.text);
            else if (ts.isVariableDeclaration(decl) && ts.isObjectBindingPattern(decl.name)) {
              for (const el of decl.name.elements) {
                const imported = (el.propertyName ?? el.name).getText(sf);
                if (CLIENT_MEMBERS.has(imported)) report(el, `loads the client API ${imported} from ${spec}`);
              }
            }
          }
        } else {
          report(node, 'loads a module by a computed name (cannot be checked)');
        }
      }
      if (ts.isIdentifier(callee) && callee.text === 'fetch') report(node, 'calls the global fetch');
      if (
        ts.isPropertyAccessExpression(callee) &&
        callee.name.text === 'fetch' &&
        ts.isIdentifier(callee.expression) &&
        ['globalThis', 'global', 'window', 'self'].includes(callee.expression.text)
      ) {
        report(node, 'calls the global fetch');
      }
    } else if (ts.isNewExpression(node)) {
      const callee = node.expression;
      const name = ts.isIdentifier(callee)
        ? callee.text
        : ts.isPropertyAccessExpression(callee)
          ? callee.name.text
          : '';
      if (CLIENT_CONSTRUCTORS.has(name)) report(node, `constructs a ${name} client`);
      const optionIndex = NEEDS_FETCH_OPTION[name];
      if (optionIndex !== undefined) {
        const options = node.arguments?.[optionIndex];
        const hasFetch =
          options !== undefined &&
          ts.isObjectLiteralExpression(options) &&
          options.properties.some(
            (p) =>
              (ts.isPropertyAssignment(p) || ts.isShorthandPropertyAssignment(p)) &&
              p.name.getText(sf) === 'fetch',
          );
        if (!hasFetch)
          report(node, `constructs ${name} without a fetch option (it would use the global fetch)`);
      }
    } else if (
      ts.isPropertyAccessExpression(node) &&
      ts.isIdentifier(node.expression) &&
      moduleAliases.has(node.expression.text) &&
      CLIENT_MEMBERS.has(node.name.text)
    ) {
      report(node, `uses the client API ${node.expression.text}.${node.name.text}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

const SRC = fileURLToPath(new URL('..', import.meta.url));
const NET = path.join(SRC, 'net');

function productModules(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (full === NET || entry.name === 'testing' || entry.name === 'node_modules') continue;
      out.push(...productModules(full));
    } else if (/\.(ts|tsx|mts|cts|js|mjs)$/.test(entry.name) && !/\.test\.[a-z]+$/.test(entry.name)) {
      out.push(full);
    }
  }
  return out;
}

describe('one module makes outbound HTTP', () => {
  it('no runtime module outside net/ makes requests itself', () => {
    const files = productModules(SRC);
    expect(files.length).toBeGreaterThan(3);
    const violations = files.flatMap((f) => scanSource(path.relative(SRC, f), readFileSync(f, 'utf8')));
    const lines = violations.map((v) => `${v.file}:${v.line}: ${v.what} — use net/outbound.ts`);
    expect(lines).toEqual([]);
  });
});

describe('the scanner', () => {
  const flagged: Array<[string, string]> = [
    ['global fetch', `await fetch('http://x');`],
    ['globalThis.fetch', `await globalThis.fetch(url, {});`],
    ['http.request via default import', `import http from 'node:http';\nhttp.request({ host: 'x' });`],
    ['https.get via namespace', `import * as https from 'https';\nhttps.get('https://x');`],
    ['named request import', `import { request } from 'node:http';`],
    ['renamed get import', `import { get as g } from 'node:https';`],
    ['net.connect', `import net from 'node:net';\nnet.connect(80, 'x');`],
    ['tls.connect', `import { connect } from 'node:tls';`],
    ['createConnection', `import { createConnection } from 'node:net';`],
    ['http2 client', `import http2 from 'node:http2';\nhttp2.connect('https://x');`],
    ['undici', `import { request } from 'undici';`],
    ['undici dynamic', `const u = await import('undici');`],
    ['axios', `import axios from 'axios';`],
    ['require http', `const h = require('node:http');\nh.get('http://x');`],
    ['destructured require', `const { request } = require('http');`],
    ['dynamic http import', `const h = await import('node:http');\nh.request({});`],
    ['dgram', `import dgram from 'node:dgram';`],
    ['ws client', `import WebSocket from 'ws';\nnew WebSocket('ws://x');`],
    ['EventSource', `new EventSource('http://x');`],
    ['OpenAI without fetch', `new OpenAI({ apiKey: 'k' });`],
    ['MCP transport without fetch', `new StreamableHTTPClientTransport(new URL(u));`],
    ['computed module name', `await import(name);`],
    ['client library named by a constant', `const m = 'undici';\nawait import(m);`],
  ];
  it.each(flagged)('flags %s', (_label, code) => {
    expect(scanSource('x.ts', code).length).toBeGreaterThan(0);
  });

  const allowed: Array<[string, string]> = [
    ['http server', `import http from 'node:http';\nhttp.createServer(() => {}).listen(0);`],
    ['named server import', `import { createServer, type IncomingMessage } from 'node:http';`],
    ['type-only import', `import type { ClientRequest } from 'node:http';`],
    ['net helpers', `import { isIP } from 'node:net';`],
    ['ws server', `import { WebSocketServer } from 'ws';\nnew WebSocketServer({ noServer: true });`],
    ['OpenAI with our fetch', `new OpenAI({ apiKey: 'k', fetch: createGuardedFetch(p) });`],
    ['transport with shorthand fetch', `new StreamableHTTPClientTransport(url, { fetch });`],
    ['a method named fetch', `store.fetch(id); this.fetch();`],
    ['relative module named by a constant', `const spec = './openai.js';\nawait import(spec);`],
    ['fetch in a comment or string', `// fetch('x')\nconst s = "fetch('y')";`],
  ];
  it.each(allowed)('allows %s', (_label, code) => {
    expect(scanSource('x.ts', code)).toEqual([]);
  });
});
