import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  citedIds,
  idsIn,
  NO_TEST,
  parseRules,
  provedByCell,
  referencedFiles,
  renderRules,
  ROOT,
  RULES_FILE,
  testsById,
  testTitles,
} from '../../../scripts/rules-index.ts';

const page = (): string => readFileSync(path.join(ROOT, RULES_FILE), 'utf8');

describe('docs/rules.md: every cited rule id resolves to a line and the tests that prove it', () => {
  it('is up to date (run `npm run rules` after adding, moving or renaming tests)', () => {
    const current = page();
    const generated = renderRules(current);
    const stale = parseRules(generated).filter((row, i) => row.provedBy !== parseRules(current)[i]?.provedBy);
    expect(
      stale.map((r) => r.id),
      'rows whose "proved by" cell differs from the test titles',
    ).toEqual([]);
    expect(current).toBe(generated);
  });

  it('lists every id cited in source comments under src/ and in the pages under docs/', () => {
    const listed = new Set(parseRules(page()).map((r) => r.id));
    const missing = [...citedIds()].filter(([id]) => !listed.has(id)).map(([id, files]) => `${id} (${[...new Set(files)].join(', ')})`);
    expect(missing).toEqual([]);
  });

  it('lists every id that a test title names', () => {
    const listed = new Set(parseRules(page()).map((r) => r.id));
    expect([...testsById().keys()].filter((id) => !listed.has(id))).toEqual([]);
  });

  it('names only test files that exist', () => {
    const files = referencedFiles(parseRules(page()));
    expect(files.length).toBeGreaterThan(0);
    expect(files.filter((file) => !file.startsWith('test/') || !existsSync(path.join(ROOT, file)))).toEqual([]);
  });

  it('has one row per id, each with a one-line rule', () => {
    const rows = parseRules(page());
    const ids = rows.map((r) => r.id);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
    expect(rows.filter((r) => r.rule.length < 10).map((r) => r.id)).toEqual([]);
    for (const id of ['D6', 'R5-order', 'Q3', 'W2', 'Q1a', 'SEC-H2']) expect(ids).toContain(id);
  });
});

describe('scripts/rules-index.ts: the generator', () => {
  it('recognizes the id syntax and nothing around it', () => {
    expect(idsIn('D6/D7: R5-order, Q1a and SEC-H2; §14, UTF-8, SHA-1, E2E, I18n, C0, Q3s')).toEqual(['D6', 'D7', 'R5-order', 'Q1a', 'SEC-H2']);
  });

  it('rewrites only the "proved by" cell, keeping the hand-written rule and every other line', () => {
    const before = [
      '# Title',
      'prose naming D6',
      '',
      '| id | rule | proved by |',
      '|---|---|---|',
      '| D6 | critical failures are thrown \\| after the round | old text |',
      '| Z9 | not an id row | kept |',
      '| Q3 | retries | |',
      '',
    ].join('\n');
    const tests = new Map([
      [
        'D6',
        [
          { file: 'test/b.test.ts', title: 'D6: a | b `c`' },
          { file: 'test/a.test.ts', title: 'D6 one' },
          { file: 'test/a.test.ts', title: 'D6 two' },
        ],
      ],
    ]);
    const after = renderRules(before, tests).split('\n');
    expect(after[5]).toBe(
      '| D6 | critical failures are thrown \\| after the round | `test/a.test.ts`: D6 one · D6 two<br>`test/b.test.ts`: D6: a \\| b \\`c\\` |',
    );
    expect(after[7]).toBe(`| Q3 | retries | ${NO_TEST} |`);
    expect(after.filter((_, i) => i !== 5 && i !== 7)).toEqual(before.split('\n').filter((_, i) => i !== 5 && i !== 7));
    const rows = parseRules(after.join('\n'));
    expect(rows.map((r) => [r.id, r.rule])).toEqual([
      ['D6', 'critical failures are thrown \\| after the round'],
      ['Q3', 'retries'],
    ]);
    expect(referencedFiles(rows)).toEqual(['test/a.test.ts', 'test/b.test.ts']);
    expect(renderRules(after.join('\n'), tests)).toBe(after.join('\n'));
  });

  it('reads titles written as strings, templates and concatenations, under it/test/describe and their modifiers', () => {
    const source = [
      "describe('Q3 retries', () => {",
      "  it('D6: plain', () => {});",
      '  it(`R5-order ${N} bytes`, () => {});',
      "  it.each([1])('W2 each %s', () => {});",
      "  describe.skipIf(x)('SEC-H2 ' +",
      "    'split title', () => {});",
      '  test.concurrent("Q1a   spaced\\n title", () => {});',
      "  expect('D7 not a title').toBe('D7');",
      '});',
    ].join('\n');
    expect(testTitles('fixture.test.ts', source)).toEqual([
      'Q3 retries',
      'D6: plain',
      'R5-order ${N} bytes',
      'W2 each %s',
      'SEC-H2 split title',
      'Q1a spaced title',
    ]);
    expect(provedByCell(undefined)).toBe(NO_TEST);
  });
});
