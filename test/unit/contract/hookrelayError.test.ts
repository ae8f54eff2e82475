import { describe, expect, it } from 'vitest';
import * as hookrelay from '../../../src/entry/index.ts';
import * as queueEntry from '../../../src/entry/queue.ts';
import * as storeEntry from '../../../src/entry/store.ts';
import * as workerEntry from '../../../src/entry/worker.ts';
import { type AnyErrorClass, DEPRECATED_ALIAS, KEPT_NAME, samples } from './errorSamples.ts';

function exportedErrorClasses(entry: Record<string, unknown>): [string, AnyErrorClass][] {
  return Object.entries(entry).filter(
    (e): e is [string, AnyErrorClass] =>
      typeof e[1] === 'function' && e[1] !== hookrelay.HookrelayError && (e[1] as { prototype?: unknown }).prototype instanceof Error,
  );
}

describe('errors users can catch: HookrelayError with a stable code', () => {
  const classes = exportedErrorClasses(hookrelay);

  it('every error class the root entry exports has a sample here (so none escapes the checks below)', () => {
    expect(classes.map(([name]) => name).sort()).toEqual(Object.keys(samples).sort());
  });

  it.each(Object.keys(samples))('%s is a HookrelayError with a HOOKRELAY_* code and its own name', (name) => {
    const error = samples[name]!();
    expect(error).toBeInstanceOf(hookrelay.HookrelayError);
    expect(hookrelay.isHookrelayError(error)).toBe(true);
    expect(error).toBeInstanceOf((hookrelay as unknown as Record<string, AnyErrorClass>)[name]!);
    expect((error as { code?: unknown }).code).toMatch(/^HOOKRELAY_[A-Z_]+$/);
    expect(error.name).toBe(KEPT_NAME[name] ?? name);
  });

  it('codes are unique per class (a deprecated alias is the same class as its new name)', () => {
    const classes = new Map(Object.values(samples).map((make) => [make().constructor, (make() as unknown as { code: string }).code]));
    const codes = [...classes.values()];
    expect(new Set(codes).size).toBe(codes.length);
  });

  it.each(Object.entries(DEPRECATED_ALIAS))('%s is a deprecated alias of %s: the same class, so instanceof works with both names', (old, renamed) => {
    const entry = hookrelay as unknown as Record<string, AnyErrorClass>;
    expect(entry[old]).toBe(entry[renamed]);
    expect(samples[old]!()).toBeInstanceOf(entry[renamed]!);
    expect(samples[renamed]!()).toBeInstanceOf(entry[old]!);
  });

  it('D10: EventValidationError stays a TypeError while counting as a HookrelayError', () => {
    const error = new hookrelay.EventValidationError('bad');
    expect(error).toBeInstanceOf(TypeError);
    expect(error).toBeInstanceOf(hookrelay.HookrelayError);
  });

  it('a subclass check stays a prototype check: one hookrelay error is not another', () => {
    expect(new hookrelay.DeliveryConfigError('x')).not.toBeInstanceOf(hookrelay.SettingsError);
    expect(new hookrelay.EventValidationError('x')).not.toBeInstanceOf(hookrelay.HookConfigError);
    expect(new Error('plain')).not.toBeInstanceOf(hookrelay.HookrelayError);
    expect(new TypeError('plain')).not.toBeInstanceOf(hookrelay.HookrelayError);
    expect(hookrelay.isHookrelayError({ code: 'HOOKRELAY_FAKE' })).toBe(false);
  });

  it('the layer entries export only HookrelayError subclasses as errors', () => {
    for (const entry of [queueEntry, storeEntry, workerEntry] as Record<string, unknown>[]) {
      for (const [name, Cls] of exportedErrorClasses(entry)) {
        expect(samples[name], `${name} is exported by a layer entry but not by hookrelay`).toBeDefined();
        expect(Cls.prototype instanceof hookrelay.HookrelayError || name === 'EventValidationError').toBe(true);
      }
    }
  });
});
