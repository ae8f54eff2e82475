/**
 * SEC-H4 (issue 24): matchers run in linear time (RE2 via re2js). The ReDoS reproduction
 * `^(a|aa)+$` against a 38-character tool identifier (8.3 s of blocked event loop on the old
 * RegExp) and a 10,000-character one; patterns RE2 refuses (backreferences, lookaround) are a
 * HookConfigError naming `matcher` at every entry; the RegExp semantics that both engines share
 * (unanchored search, anchors at the text's ends, no flags) are kept.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { HookConfigError } from '../../../src/contract/errors.ts';
import { MAX_MATCHER_LENGTH, matcherProblem, matchesHook } from '../../../src/contract/matcher.ts';
import { parseHookBatch, parseSerializedHooks } from '../../../src/contract/validate.ts';
import { HookDispatcher } from '../../../src/dispatch/hookDispatcher.ts';
import { quietLogger, toolContext } from '../dispatch/helpers.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const REDOS = '^(a|aa)+$';
/** 37 `a`s and the `/` the matcher input always has: the old engine explored ~fib(38) paths. */
const identifier38 = 'a'.repeat(38);
const tool = (identifier: string, apiName = 'x') => ({ identifier, apiName });

const dispatchers: HookDispatcher[] = [];
afterEach(async () => {
  await Promise.all(dispatchers.splice(0).map((d) => d.close()));
});

function hookConfigError(fn: () => unknown): HookConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(HookConfigError);
    return error as HookConfigError;
  }
  throw new Error('expected a HookConfigError');
}

/** How long the event loop was blocked while `fn` ran: a timer queued before it fires only after it. */
async function blockedMs(fn: () => unknown): Promise<{ blocked: number; result: unknown }> {
  const started = performance.now();
  const fired = new Promise<number>((resolve) => setTimeout(() => resolve(performance.now() - started), 0));
  const result = await fn();
  return { blocked: await fired, result };
}

describe('SEC-H4 matchers in linear time', () => {
  it('SEC-H4 ReDoS: ^(a|aa)+$ against a 38-character tool identifier returns; the event loop is not blocked for 1 s', async () => {
    const { blocked, result } = await blockedMs(() => matchesHook({ type: 'beforeToolCall', matcher: REDOS }, tool(identifier38)));
    expect(result).toBe(false);
    expect(blocked).toBeLessThan(1_000);
  });

  it('SEC-H4 ReDoS: the same through a real dispatch (register, dispatch afterToolCall): the handler is skipped, the loop stays free', async () => {
    const d = new HookDispatcher({ env: {}, logger: quietLogger() });
    dispatchers.push(d);
    let ran = 0;
    d.register('op', [
      { id: 'redos', type: 'afterToolCall', matcher: REDOS, handler: () => void ran++ },
      { id: 'plain', type: 'afterToolCall', matcher: '^a+/x$', handler: () => void (ran += 10) },
    ]);
    const { blocked } = await blockedMs(() =>
      d.dispatch('op', 'afterToolCall', {
        ...toolContext({ identifier: identifier38, apiName: 'x', operationId: 'op' }),
        result: { content: 'ok', success: true },
      }),
    );
    expect(ran).toBe(10); // only the plain matcher matched `aaa…a/x`
    expect(blocked).toBeLessThan(1_000);
  });

  it('SEC-H4 ReDoS: a 10,000-character identifier in a separate process finishes well within its 20 s budget (the old engine never would)', async () => {
    // A child process, so a backtracking engine fails this test by its timeout instead of hanging the suite.
    const script = `
      const { matchesHook } = await import(${JSON.stringify(path.join(ROOT, 'src/contract/matcher.ts'))});
      const out = {};
      for (const n of [38, 10000]) {
        const started = performance.now();
        const lag = new Promise((resolve) => setTimeout(() => resolve(performance.now() - started), 0));
        const matched = matchesHook({ type: 'beforeToolCall', matcher: ${JSON.stringify(REDOS)} }, { identifier: 'a'.repeat(n), apiName: 'x' });
        const whole = matchesHook({ type: 'beforeToolCall', matcher: '^(a|aa)+/x$' }, { identifier: 'a'.repeat(n), apiName: 'x' });
        out[n] = { matched, whole, blocked: await lag };
      }
      console.log(JSON.stringify(out));
    `;
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, timeout: 20_000 });
    const out = JSON.parse(stdout) as Record<string, { matched: boolean; whole: boolean; blocked: number }>;
    for (const n of ['38', '10000']) {
      expect(out[n]).toMatchObject({ matched: false, whole: true });
      expect(out[n]!.blocked).toBeLessThan(1_000);
    }
  });

  it.each([
    ['a backreference', '(a)\\1'],
    ['a named backreference', '(?<n>a)\\k<n>'],
    ['a lookahead', '^(?=.*secret)'],
    ['a negative lookahead', '^(?!shell/)'],
    ['a lookbehind', '(?<=files/)write'],
    ['a negative lookbehind', '(?<!safe_)delete'],
    ['a nested repeat beyond RE2 limits', '(a{1000}){1000}'],
  ])('SEC-H4 refused: %s (%j) is a HookConfigError naming matcher at register and for restored/job hooks', (_label, matcher) => {
    expect(matcherProblem(matcher)).toMatch(/linear-time matcher engine/);
    const registered = hookConfigError(() => parseHookBatch([{ id: 'bad', type: 'beforeToolCall', matcher, handler: () => undefined }]));
    expect(registered.hookId).toBe('bad');
    expect(registered.issues.map((i) => i.path)).toEqual(['matcher']);
    const restored = hookConfigError(() =>
      parseSerializedHooks([{ id: 'bad', type: 'afterToolCall', matcher, webhook: { url: 'https://hooks.example.com/x' } }]),
    );
    expect(restored.issues.map((i) => i.path)).toEqual(['matcher']);
    const d = new HookDispatcher({ env: {}, logger: quietLogger() });
    dispatchers.push(d);
    expect(() => d.register('op', [{ id: 'bad', type: 'onToolCallError', matcher, handler: () => undefined }])).toThrow(HookConfigError);
  });

  it('SEC-H4 refused: a matcher longer than the limit, or one compiling to a huge program, names matcher', () => {
    expect(matcherProblem('a'.repeat(MAX_MATCHER_LENGTH + 1))).toMatch(/longer than/);
    expect(matcherProblem('[\\s\\S]{1000}'.repeat(6))).toMatch(/instructions/);
    expect(matcherProblem(`^(${Array.from({ length: 100 }, (_, i) => `tool_${i}/get`).join('|')})$`)).toBeUndefined();
  });

  it('SEC-H4 refusal messages quote no pattern text', () => {
    const problem = matcherProblem('(?=SECRET_LOOKING_TEXT)')!;
    expect(problem).not.toContain('SECRET_LOOKING_TEXT');
  });

  it('SEC-H4 semantics kept: for patterns both engines accept, RE2 answers as the RegExp did (unanchored, anchors, classes, alternation, no flags)', () => {
    const patterns = [
      '^search/',
      'search',
      '/crawl$',
      '^(calendar|web-browsing)/',
      '^web-browsing/search$',
      'mcp__.+/.*',
      '^files/(write|delete)$',
      '^[a-z_]+/get\\w*$',
      '\\d{2,}',
      '^a.b$',
      'Search',
      '^(a|aa)+/x$',
    ];
    const inputs = [
      'search/web',
      'web-browsing/search',
      'calendar/list',
      'site/crawl',
      'files/write',
      'files/writes',
      'mcp__gh/issue',
      'tools/getAll',
      'v12/x',
      'a\nb/x',
      'axb/x',
      'Search/x',
      'aaaa/x',
      'x/search',
    ];
    for (const matcher of patterns) {
      const re = new RegExp(matcher);
      for (const input of inputs) {
        const [identifier, apiName] = [input.slice(0, input.indexOf('/')), input.slice(input.indexOf('/') + 1)];
        expect(matchesHook({ type: 'afterToolCall', matcher }, { identifier, apiName }), `${matcher} on ${JSON.stringify(input)}`).toBe(re.test(input));
      }
    }
    // Unchanged rules around the engine: '' and '*' match everything; non-tool events and missing fields never match.
    expect(matchesHook({ type: 'beforeToolCall', matcher: '*' }, {})).toBe(true);
    expect(matchesHook({ type: 'beforeToolCall', matcher: '^x' }, { identifier: 'x' })).toBe(false);
  });
});
