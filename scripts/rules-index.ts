/**
 * Keeps docs/rules.md honest: every rule id (D6, R5-order, Q3, SEC-H2, …) that the code and the
 * docs cite, with the tests that prove it. The ids and their one-line statements are written by
 * hand in the tables of docs/rules.md; this script rewrites only the "proved by" cell of each
 * table row, from the titles of `it` / `test` / `describe` calls under test/ that name the id.
 * `npm run rules` after moving or renaming tests; test/unit/docs/rules.test.ts fails when the
 * page is stale, when a cited id has no row, or when a listed test file does not exist.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';

export const ROOT = path.resolve(import.meta.dirname, '..');
export const RULES_FILE = 'docs/rules.md';
export const NO_TEST = '*no test names this id*';

/**
 * Rule-id syntax: a family letter, a number, an optional `a`–`d` sub-rule or `-order`; or `SEC-H<n>`.
 * Never right after a `-`: test prefixes such as `SEC-T4` or `LH-Q1` name an issue's item, not rule T4 or Q1.
 */
const ID_SOURCE = String.raw`\b(?:SEC-H\d{1,2}|(?<!-)[ABDEILMNPQRTW]\d{1,2}(?:[a-d]|-order)?)\b`;
const idPattern = (): RegExp => new RegExp(ID_SOURCE, 'g');
/** A table row whose first cell is an id: `| D6 | rule | proved by |`. */
const ROW = /^\|\s*([A-Z][A-Za-z0-9-]*)\s*\|(.*)\|\s*$/;
const TEST_ROOTS = new Set(['it', 'test', 'describe', 'suite']);
const CODE_EXT = /\.(?:[cm]?ts|tsx|[cm]?js)$/;

interface TestRef {
  file: string;
  title: string;
}

interface RuleRow {
  id: string;
  rule: string;
  provedBy: string;
  line: number;
}

/** Every rule id mentioned in a piece of text, in order of first appearance. */
export function idsIn(text: string): string[] {
  return [...new Set(text.match(idPattern()) ?? [])];
}

function walk(dir: string, keep: (file: string) => boolean): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) out.push(...walk(rel, keep));
    else if (keep(rel)) out.push(rel);
  }
  return out.sort();
}

function parse(file: string, text = readFileSync(path.join(ROOT, file), 'utf8')): ts.SourceFile {
  return ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
}

/** `it`, `it.each(t)`, `describe.skipIf(c)`, `test.concurrent` … → the identifier at the root. */
function calleeRoot(expr: ts.Expression): string | undefined {
  let e = expr;
  for (;;) {
    if (ts.isIdentifier(e)) return e.text;
    if (ts.isPropertyAccessExpression(e)) e = e.expression;
    else if (ts.isCallExpression(e)) e = e.expression;
    else return undefined;
  }
}

/** The title as written: literal text, with `${…}` kept for substitutions. */
function titleText(node: ts.Expression): string | undefined {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isTemplateExpression(node)) {
    return node.head.text + node.templateSpans.map((s) => `\${${s.expression.getText()}}${s.literal.text}`).join('');
  }
  if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken) {
    const left = titleText(node.left);
    const right = titleText(node.right);
    return left === undefined || right === undefined ? undefined : left + right;
  }
  if (ts.isParenthesizedExpression(node)) return titleText(node.expression);
  return undefined;
}

/** Test and suite titles of one file (read from disk unless `text` is given), whitespace collapsed. */
export function testTitles(file: string, text?: string): string[] {
  const titles: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && node.arguments.length > 0) {
      const root = calleeRoot(node.expression);
      const title = root && TEST_ROOTS.has(root) ? titleText(node.arguments[0]!) : undefined;
      if (title !== undefined) titles.push(title.replace(/\s+/g, ' ').trim());
    }
    ts.forEachChild(node, visit);
  };
  visit(parse(file, text));
  return titles;
}

/** id → the tests whose own title names it (files under test/ ending in `.test.ts`). */
export function testsById(): Map<string, TestRef[]> {
  const byId = new Map<string, TestRef[]>();
  for (const file of walk('test', (f) => f.endsWith('.test.ts'))) {
    for (const title of testTitles(file)) {
      for (const id of idsIn(title)) {
        const refs = byId.get(id) ?? [];
        if (!refs.some((r) => r.file === file && r.title === title)) refs.push({ file, title });
        byId.set(id, refs);
      }
    }
  }
  return byId;
}

/** The text of every comment in a source file. */
function commentText(file: string): string {
  const source = parse(file);
  const text = source.getFullText();
  const seen = new Set<number>();
  const parts: string[] = [];
  const collect = (ranges: ts.CommentRange[] | undefined): void => {
    for (const r of ranges ?? []) {
      if (seen.has(r.pos)) continue;
      seen.add(r.pos);
      parts.push(text.slice(r.pos, r.end));
    }
  };
  const visit = (node: ts.Node): void => {
    collect(ts.getLeadingCommentRanges(text, node.getFullStart()));
    collect(ts.getTrailingCommentRanges(text, node.getEnd()));
    ts.forEachChild(node, visit);
  };
  visit(source);
  collect(ts.getLeadingCommentRanges(text, source.endOfFileToken.getFullStart()));
  return parts.join('\n');
}

/** id → the files that cite it: comments under src/, and the markdown pages under docs/ (this page excluded). */
export function citedIds(): Map<string, string[]> {
  const byId = new Map<string, string[]>();
  const add = (file: string, text: string): void => {
    for (const id of idsIn(text)) byId.set(id, [...(byId.get(id) ?? []), file]);
  };
  for (const file of walk('src', (f) => CODE_EXT.test(f) && !f.endsWith('.d.ts'))) add(file, commentText(file));
  for (const file of walk('docs', (f) => f.endsWith('.md') && f !== RULES_FILE)) add(file, readFileSync(path.join(ROOT, file), 'utf8'));
  return byId;
}

/** Splits a table row on the pipes that are not escaped as `\|`. */
function cells(inner: string): string[] {
  return inner.split(/(?<!\\)\|/).map((c) => c.trim());
}

/** The id rows of the page's tables. */
export function parseRules(markdown: string): RuleRow[] {
  const rows: RuleRow[] = [];
  markdown.split('\n').forEach((text, i) => {
    const match = ROW.exec(text);
    if (!match || idsIn(match[1]!).join() !== match[1]) return;
    const [rule = '', provedBy = ''] = cells(match[2]!);
    rows.push({ id: match[1]!, rule, provedBy, line: i + 1 });
  });
  return rows;
}

/** Plain text safe inside a table cell (no markup, no cell break). */
function escapeCell(text: string): string {
  return text.replace(/[\\`*[\]<>|]/g, (c) => `\\${c}`);
}

export function provedByCell(refs: readonly TestRef[] | undefined): string {
  if (!refs || refs.length === 0) return NO_TEST;
  const byFile = new Map<string, string[]>();
  for (const r of refs) byFile.set(r.file, [...(byFile.get(r.file) ?? []), escapeCell(r.title)]);
  return [...byFile.keys()]
    .sort()
    .map((file) => `\`${file}\`: ${byFile.get(file)!.join(' · ')}`)
    .join('<br>');
}

/** The page with every id row's "proved by" cell regenerated; everything else kept as written. */
export function renderRules(markdown: string, tests: Map<string, TestRef[]> = testsById()): string {
  return markdown
    .split('\n')
    .map((text) => {
      const match = ROW.exec(text);
      if (!match || idsIn(match[1]!).join() !== match[1]) return text;
      const [rule = ''] = cells(match[2]!);
      return `| ${match[1]} | ${rule} | ${provedByCell(tests.get(match[1]!))} |`;
    })
    .join('\n');
}

/** Test files named in the "proved by" cells. */
export function referencedFiles(rows: readonly RuleRow[]): string[] {
  return [...new Set(rows.flatMap((r) => [...r.provedBy.matchAll(/(?:^|<br>)`([^`]+)`:/g)].map((m) => m[1]!)))];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const file = path.join(ROOT, RULES_FILE);
  const tests = testsById();
  const next = renderRules(readFileSync(file, 'utf8'), tests);
  writeFileSync(file, next);
  const rows = parseRules(next);
  const listed = new Set(rows.map((r) => r.id));
  const untested = rows.filter((r) => r.provedBy === NO_TEST).map((r) => r.id);
  const missing = [...citedIds()].filter(([id]) => !listed.has(id));
  const unknownInTests = [...tests.keys()].filter((id) => !listed.has(id));
  process.stdout.write(`${RULES_FILE}: ${rows.length} ids, ${rows.length - untested.length} named by tests\n`);
  if (untested.length) process.stdout.write(`no test names: ${untested.join(' ')}\n`);
  for (const id of unknownInTests) process.stdout.write(`warning: tests name ${id}, which ${RULES_FILE} does not list\n`);
  for (const [id, files] of missing) process.stderr.write(`error: ${id} is cited in ${[...new Set(files)].join(', ')} but has no row in ${RULES_FILE}\n`);
  if (missing.length) process.exitCode = 1;
}
