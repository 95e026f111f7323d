/**
 * Finds writes that make data a key of an ordinary object: `o[k] = v` (and `??=`, `+=`, `++`,
 * `delete o[k]`, …) where `k` is typed `string` (not a literal the code chose) and `o` is neither
 * an array nor a `Dict` (the null-prototype table of `@switchboard/schemas`, made by `dict()`).
 * Also finds object literals handed to a `Dict` (`const d: Dict<T> = {}` has Object.prototype
 * again). Uses the TypeScript checker on each package's own tsconfig, so types decide, not names.
 */
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';

export interface Finding {
  file: string;
  line: number;
  /** The write as written, e.g. `byNode[node.id] = u`. */
  text: string;
  rule: 'data-key-write' | 'literal-as-dict';
}

const WRITE_OPS = new Set<ts.SyntaxKind>([
  ts.SyntaxKind.EqualsToken,
  ts.SyntaxKind.PlusEqualsToken,
  ts.SyntaxKind.MinusEqualsToken,
  ts.SyntaxKind.AsteriskEqualsToken,
  ts.SyntaxKind.SlashEqualsToken,
  ts.SyntaxKind.QuestionQuestionEqualsToken,
  ts.SyntaxKind.BarBarEqualsToken,
  ts.SyntaxKind.AmpersandAmpersandEqualsToken,
  ts.SyntaxKind.BarEqualsToken,
  ts.SyntaxKind.AmpersandEqualsToken,
]);

function isWriteTarget(node: ts.ElementAccessExpression): boolean {
  let cur: ts.Node = node;
  while (ts.isParenthesizedExpression(cur.parent) || ts.isNonNullExpression(cur.parent)) cur = cur.parent;
  const p = cur.parent;
  if (ts.isBinaryExpression(p) && p.left === cur && WRITE_OPS.has(p.operatorToken.kind)) return true;
  if (ts.isDeleteExpression(p)) return true;
  if (
    (ts.isPrefixUnaryExpression(p) || ts.isPostfixUnaryExpression(p)) &&
    (p.operator === ts.SyntaxKind.PlusPlusToken || p.operator === ts.SyntaxKind.MinusMinusToken)
  )
    return true;
  return false;
}

/** A key chosen by code: number, a string literal type or a union of them, a symbol, an enum. */
function isCodeKey(t: ts.Type): boolean {
  if (t.isUnion()) return t.types.every(isCodeKey);
  const f = t.flags;
  return !!(
    f &
    (ts.TypeFlags.NumberLike |
      ts.TypeFlags.StringLiteral |
      ts.TypeFlags.ESSymbolLike |
      ts.TypeFlags.EnumLike |
      ts.TypeFlags.Never |
      ts.TypeFlags.Undefined |
      ts.TypeFlags.Null)
  );
}

function isDict(t: ts.Type): boolean {
  if (t.aliasSymbol?.name === 'Dict') return true;
  if (t.isUnion())
    return t.types.every((x) => x.flags & (ts.TypeFlags.Null | ts.TypeFlags.Undefined) || isDict(x));
  return false;
}

function isArrayLike(checker: ts.TypeChecker, t: ts.Type): boolean {
  const n = checker.getNonNullableType(t);
  if (checker.isArrayType(n) || checker.isTupleType(n)) return true;
  const name = n.getSymbol()?.name ?? '';
  return /^(ReadonlyArray|Array|[A-Z][a-z0-9]*Array|Buffer)$/.test(name);
}

/** Scans the non-test sources of the package whose tsconfig is `tsconfigPath`. */
export function scanPackage(tsconfigPath: string, root: string): Finding[] {
  const cfg = ts.readConfigFile(tsconfigPath, ts.sys.readFile);
  if (cfg.error) throw new Error(ts.flattenDiagnosticMessageText(cfg.error.messageText, '\n'));
  const parsed = ts.parseJsonConfigFileContent(cfg.config, ts.sys, dirname(tsconfigPath));
  const own = parsed.fileNames.filter(
    (f) => /\/src\//.test(f) && !/\.test\.tsx?$/.test(f) && !/\/(testing|__fixtures__)\//.test(f),
  );
  const program = ts.createProgram({ rootNames: own, options: { ...parsed.options, noEmit: true } });
  const checker = program.getTypeChecker();
  const out: Finding[] = [];
  for (const file of own) {
    const sf = program.getSourceFile(file);
    if (!sf) continue;
    const report = (node: ts.Node, rule: Finding['rule']) => {
      const { line } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
      const stmt = ts.isExpressionStatement(node.parent) ? node.parent : node;
      out.push({ file: relative(root, file), line: line + 1, text: stmt.getText(sf).split('\n')[0]!, rule });
    };
    const visit = (node: ts.Node): void => {
      if (ts.isElementAccessExpression(node) && isWriteTarget(node)) {
        const keyType = checker.getTypeAtLocation(node.argumentExpression);
        const objType = checker.getTypeAtLocation(node.expression);
        if (!isCodeKey(keyType) && !isArrayLike(checker, objType) && !isDict(objType)) {
          let top: ts.Node = node;
          while (
            !ts.isExpressionStatement(top.parent) &&
            !ts.isBlock(top.parent) &&
            !ts.isSourceFile(top.parent) &&
            top.parent.pos === top.pos
          )
            top = top.parent;
          report(node.parent, 'data-key-write');
        }
      }
      if (ts.isObjectLiteralExpression(node)) {
        const ctx = checker.getContextualType(node);
        if (ctx && isDict(ctx)) report(node, 'literal-as-dict');
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return out;
}

export function scanAll(root: string): Finding[] {
  return ['schemas', 'nodes', 'runtime', 'editor'].flatMap((p) =>
    scanPackage(join(root, p, 'tsconfig.json'), root),
  );
}
