/**
 * Finds where and why JSON text is malformed, for the `not-json` message. Runs only after
 * `JSON.parse` has failed (whose messages differ between Node versions and may omit the
 * position), on text whose nesting depth is already bounded, so recursion is safe here.
 */
import { quote } from './codes.js';

class SyntaxStop {
  constructor(readonly reason: string) {}
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const ESCAPES = new Set(['"', '\\', '/', 'b', 'f', 'n', 'r', 't']);

export interface JsonSyntaxError {
  offset: number;
  line: number;
  column: number;
  reason: string;
}

/** Returns the first syntax error of `text`, or undefined when it is valid JSON. */
export function findJsonSyntaxError(text: string): JsonSyntaxError | undefined {
  let i = 0;
  const fail = (reason: string): never => {
    const atEnd = i >= text.length && !reason.startsWith('unexpected end');
    throw new SyntaxStop(atEnd ? `unexpected end of the document (${reason})` : reason);
  };
  const ws = () => {
    for (let c = text.charCodeAt(i); c === 32 || c === 9 || c === 10 || c === 13; c = text.charCodeAt(++i));
  };
  const unexpected = () =>
    fail(i >= text.length ? 'unexpected end of the document' : `unexpected character ${quote(text[i])}`);
  const string = () => {
    i++; // opening quote
    for (;;) {
      if (i >= text.length) fail('unterminated string');
      const c = text.charCodeAt(i);
      if (c === 34) {
        i++;
        return;
      }
      if (c < 0x20) fail('a control character inside a string must be escaped');
      if (c === 92) {
        const e = text[i + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) fail('invalid \\u escape');
          i += 6;
        } else if (e !== undefined && ESCAPES.has(e)) i += 2;
        else fail('invalid escape in a string');
      } else i++;
    }
  };
  const value = (): void => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      ws();
      if (text[i] === '}') {
        i++;
        return;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail('expected a property name in double quotes');
        string();
        ws();
        if (text[i] !== ':') fail('expected ":" after a property name');
        i++;
        value();
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === '}') {
          i++;
          return;
        } else fail('expected "," or "}"');
      }
    }
    if (c === '[') {
      i++;
      ws();
      if (text[i] === ']') {
        i++;
        return;
      }
      for (;;) {
        value();
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === ']') {
          i++;
          return;
        } else fail('expected "," or "]"');
      }
    }
    if (c === '"') {
      string();
      return;
    }
    for (const lit of ['true', 'false', 'null'])
      if (text.startsWith(lit, i)) {
        i += lit.length;
        return;
      }
    NUMBER.lastIndex = i;
    if (NUMBER.test(text)) {
      i = NUMBER.lastIndex;
      return;
    }
    unexpected();
  };
  try {
    value();
    ws();
    if (i < text.length) fail('unexpected text after the end of the document');
    return undefined;
  } catch (e) {
    if (!(e instanceof SyntaxStop)) throw e;
    const before = text.slice(0, i);
    const line = before.split('\n').length;
    return { offset: i, line, column: i - before.lastIndexOf('\n'), reason: e.reason };
  }
}
