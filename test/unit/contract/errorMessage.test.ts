/**
 * Issue 28 (LobeHub's CompletionLifecycle): a readable `errorMessage` from the error shapes an
 * agent runtime has — provider error bodies, SDK errors, `Error`, nested `body.error.message`,
 * `body.message`, `error.message`, a type name — never `[object Object]`; the raw error kept as
 * JSON in `errorDetail`. Pure functions: no I/O.
 */
import { describe, expect, it } from 'vitest';
import {
  errorDetailOf,
  errorTypeOf,
  humanizeTypeName,
  MAX_ERROR_MESSAGE_CHARS,
  readableErrorMessage,
  withReadableError,
} from '../../../src/util/errorMessage.ts';

describe('LH: readableErrorMessage — one test per error shape', () => {
  it('LH-error-insufficient-budget: a provider body with only a type reads as the humanized type', () => {
    const stateError = { type: 'InsufficientBudgetForModel', body: { provider: 'openai', model: 'gpt-4o' } };
    expect(readableErrorMessage(stateError)).toBe('Insufficient budget for model');
    expect(errorTypeOf(stateError)).toBe('InsufficientBudgetForModel');
  });

  it('LH-error-invalid-api-key: an invalid provider key error reads as its body message (OpenAI body shape)', () => {
    const stateError = {
      errorType: 'InvalidProviderAPIKey',
      body: { error: { message: 'Incorrect API key provided: sk-***abc.', type: 'invalid_request_error', code: 'invalid_api_key' } },
    };
    expect(readableErrorMessage(stateError)).toBe('Incorrect API key provided: sk-***abc.');
    expect(errorTypeOf(stateError)).toBe('InvalidProviderAPIKey');
    // Without a body message the type name is humanized, its acronym kept.
    expect(readableErrorMessage({ errorType: 'InvalidProviderAPIKey' })).toBe('Invalid provider API key');
  });

  it('LH-error-Error: an Error gives its message; an Error with an empty message gives its cause, else its name', () => {
    expect(readableErrorMessage(new Error('model overloaded'))).toBe('model overloaded');
    expect(readableErrorMessage(new Error('', { cause: new Error('socket hang up') }))).toBe('socket hang up');
    class RateLimitError extends Error {
      override name = 'RateLimitError';
    }
    expect(readableErrorMessage(new RateLimitError(''))).toBe('Rate limit error');
  });

  it('LH-error-body-error-message: nested body.error.message wins over the wrapper message', () => {
    const sdkError = Object.assign(new Error('400 status code (no body)'), { status: 400, body: { error: { message: 'context length exceeded' } } });
    expect(readableErrorMessage(sdkError)).toBe('context length exceeded');
  });

  it('LH-error-body-message: body.message when the body has no error object', () => {
    expect(readableErrorMessage({ body: { message: 'quota exhausted for this month' }, type: 'QuotaExceeded' })).toBe('quota exhausted for this month');
  });

  it('LH-error-error-message: an SDK error carrying the provider body as `error` reads error.message', () => {
    expect(readableErrorMessage({ status: 401, error: { message: 'Invalid x-api-key', type: 'authentication_error' } })).toBe('Invalid x-api-key');
    expect(readableErrorMessage({ error: 'upstream timed out' })).toBe('upstream timed out');
  });

  it('LH-error-type-name: only a type or code left → its humanized name (snake_case too)', () => {
    expect(readableErrorMessage({ code: 'insufficient_quota' })).toBe('Insufficient quota');
    expect(humanizeTypeName('AgentRuntimeError')).toBe('Agent runtime error');
    expect(humanizeTypeName('invalid_api_key')).toBe('Invalid api key');
  });

  it('LH-error-never-object-Object: no shape yields [object Object]; a message that is a JSON body is read as that body', () => {
    const shapes: unknown[] = [{}, { message: {} }, { message: '[object Object]' }, { body: {} }, [], Object.create(null), { error: {} }, String({})];
    for (const shape of shapes) {
      const text = readableErrorMessage(shape);
      expect(text).not.toContain('[object Object]');
      expect(text.length).toBeGreaterThan(0);
    }
    expect(readableErrorMessage('{"error":{"message":"Budget exceeded"}}')).toBe('Budget exceeded');
    expect(readableErrorMessage(undefined)).toBe('Unknown error');
    expect(readableErrorMessage(42)).toBe('42');
  });

  it('LH-error-hostile: cycles, throwing getters, huge and deep values stay bounded and never throw', () => {
    const cyclic: Record<string, unknown> = { type: 'Loop' };
    cyclic.cause = cyclic;
    cyclic.error = cyclic;
    expect(readableErrorMessage(cyclic)).toBe('Loop');
    const trap = Object.defineProperty({}, 'message', {
      get() {
        throw new Error('getter');
      },
      enumerable: true,
    });
    expect(readableErrorMessage(trap)).toBe('Unknown error');
    expect(errorDetailOf(trap)).toEqual({});
    expect(readableErrorMessage('x'.repeat(100_000))).toHaveLength(MAX_ERROR_MESSAGE_CHARS);
    let deep: Record<string, unknown> = { message: 'bottom' };
    for (let i = 0; i < 10_000; i += 1) deep = { cause: deep };
    expect(readableErrorMessage(deep)).toBe('Unknown error'); // 4 levels down at most
    expect(JSON.stringify(errorDetailOf(deep)).length).toBeLessThan(1_000);
  });
});

describe('LH: errorDetailOf and withReadableError — the raw detail in its own field', () => {
  it('LH-error-detail: an Error keeps name, message, its own fields and cause as JSON (JSON.stringify would give {})', () => {
    const err = Object.assign(new Error('boom', { cause: { code: 'ECONNRESET' } }), { status: 503, big: 10n, fn: () => 1 });
    expect(errorDetailOf(err)).toEqual({ name: 'Error', message: 'boom', status: 503, big: '10', cause: { code: 'ECONNRESET' } });
  });

  it('LH-error-event: an onError event gets errorMessage, errorDetail and errorType; a given string message is kept', () => {
    const event = withReadableError({ operationId: 'op', error: { type: 'InsufficientBudgetForModel', body: { budget: 0 } } });
    expect(event).toEqual({
      operationId: 'op',
      errorMessage: 'Insufficient budget for model',
      errorDetail: { type: 'InsufficientBudgetForModel', body: { budget: 0 } },
      errorType: 'InsufficientBudgetForModel',
    });
    expect(withReadableError({ operationId: 'op', errorMessage: 'already readable', errorDetail: { code: 'x' } })).toEqual({
      operationId: 'op',
      errorMessage: 'already readable',
      errorDetail: { code: 'x' },
      errorType: 'x',
    });
    // A runtime that put the object itself into errorMessage: readable text, the object moves to errorDetail.
    expect(withReadableError({ operationId: 'op', errorMessage: { message: 'tool crashed' } as unknown as string })).toEqual({
      operationId: 'op',
      errorMessage: 'tool crashed',
      errorDetail: { message: 'tool crashed' },
    });
  });
});

describe('LH-Q3: the placeholder message "error" and empty messages fall back to the type name (as LobeHub)', () => {
  it('LH-Q3 LH-error-placeholder: "error" (any case) and empty messages read as the humanized type name', () => {
    expect(readableErrorMessage({ message: 'error', type: 'ProviderBizError' })).toBe('Provider biz error');
    expect(readableErrorMessage({ message: ' Error ', errorType: 'InsufficientBudgetForModel' })).toBe('Insufficient budget for model');
    expect(readableErrorMessage({ message: '', code: 'invalid_api_key' })).toBe('Invalid api key');
    expect(readableErrorMessage(Object.assign(new Error('error'), { name: 'RateLimitError' }))).toBe('Rate limit error');
    expect(readableErrorMessage({ body: { error: { message: 'error', type: 'overloaded_error' } } })).toBe('Overloaded error');
    // Nothing but the placeholder: no type to read, so the generic text, never "error".
    expect(readableErrorMessage('error')).toBe('Unknown error');
    // A real message that merely contains the word is a message.
    expect(readableErrorMessage({ message: 'error: upstream closed', type: 'X' })).toBe('error: upstream closed');
  });

  it('LH-Q3 LH-error-placeholder-event: an onError event whose errorMessage is "error" gets the type name given beside it', () => {
    expect(withReadableError({ operationId: 'op', errorMessage: 'error', errorType: 'ModelTimeout' })).toMatchObject({ errorMessage: 'Model timeout' });
    expect(withReadableError({ operationId: 'op', errorMessage: '', error: { type: 'ContextTooLong' } })).toMatchObject({ errorMessage: 'Context too long' });
    expect(withReadableError({ operationId: 'op', errorMessage: 'error', error: { message: 'error', type: 'AgentRuntimeError' } })).toMatchObject({
      errorMessage: 'Agent runtime error',
      errorType: 'AgentRuntimeError',
    });
  });
});
