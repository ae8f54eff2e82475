import { describe, expect, it } from 'vitest';
import { findUnstorableText, isStorableText, sanitizeStorableText } from '../../../src/contract/storableText.ts';
import { toStorageError } from '../../../src/contract/storageError.ts';
import { StorageError } from '../../../src/contract/errors.ts';
import { safeErrorSerializer } from '../../../src/observability/logger.ts';

describe('SEC-H3 storable text (pure checker)', () => {
  it('SEC-H3 finds NUL and lone surrogates in keys and values at any depth, naming the path', () => {
    expect(findUnstorableText({ a: [{ b: 'x\u0000y' }] })).toEqual({ path: 'a[0].b', in: 'value', problem: 'NUL character (\\u0000)' });
    expect(findUnstorableText({ a: { 'we\u0000ird': 1 } })?.path).toBe('a["we\\u0000ird"]');
    expect(findUnstorableText({ a: { 'we\u0000ird': 1 } })?.in).toBe('key');
    expect(findUnstorableText({ s: 'lone \ud800 high' })?.problem).toBe('unpaired UTF-16 surrogate');
    expect(findUnstorableText({ s: 'lone \udc00 low' })?.path).toBe('s');
    expect(findUnstorableText('\u0000')?.path).toBe('(root)');
    expect(findUnstorableText({ s: 'pair 😀 ok', n: 1, b: null, d: new Date(0) })).toBeUndefined();
    // The path never carries the bad text itself.
    expect(JSON.stringify(findUnstorableText({ ['\ud800']: 1 }))).not.toMatch(/[\ud800-\udfff]/);
  });

  it('SEC-H3 walks 100,000-deep and cyclic input without a RangeError', () => {
    let deep: unknown = 'end\u0000';
    for (let i = 0; i < 100_000; i += 1) deep = [deep];
    expect(findUnstorableText(deep)?.problem).toBe('NUL character (\\u0000)');
    const cyclic: Record<string, unknown> = { a: 'ok' };
    cyclic.self = cyclic;
    expect(findUnstorableText(cyclic)).toBeUndefined();
  });

  it('SEC-H3 sanitise: NUL and lone surrogates → U+FFFD, pairs kept', () => {
    expect(sanitizeStorableText('ok\u0000')).toBe('ok\uFFFD');
    expect(sanitizeStorableText('a\ud800b\udc00c😀')).toBe('a\uFFFDb\uFFFDc😀');
    expect(isStorableText(sanitizeStorableText('\u0000\ud800\udfff\udfff'))).toBe(true);
  });

  it("SEC-H3 drizzle's query error becomes a StorageError without parameters, also in log lines", () => {
    const pgError = Object.assign(new Error('unsupported Unicode escape sequence'), {
      code: '22P05',
      detail: 'tenant-a-secret',
      where: 'JSON data, line 1: tenant-a-secret',
    });
    const queryError = Object.assign(new Error('Failed query: insert ...\nparams: [{"secret":"tenant-a-secret"}]'), {
      query: 'insert',
      params: ['tenant-a-secret'],
      cause: pgError,
    });
    const storage = toStorageError(queryError, 'insert deliveries');
    expect(storage).toBeInstanceOf(StorageError);
    expect(storage.sqlState).toBe('22P05');
    expect(storage.message).toBe('insert deliveries failed (22P05): unsupported Unicode escape sequence');
    const logged = JSON.stringify(safeErrorSerializer(queryError));
    expect(logged).not.toContain('tenant-a-secret');
    expect(logged).toContain('22P05');
    // Data exceptions may quote the input in the primary message: quoted text is dropped.
    const quoted = toStorageError(Object.assign(new Error('invalid input syntax for type integer: "tenant-a-secret"'), { code: '22P02' }), 'x');
    expect(quoted.message).not.toContain('tenant-a-secret');
  });
});
