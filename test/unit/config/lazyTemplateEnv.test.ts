import { afterEach, describe, expect, it } from 'vitest';
import { createHookProducer, createOperationStore } from '../../../src/entry/lazy.ts';

/** An environment that counts the reads of HOOKRELAY_TEMPLATE_ENV. */
function countingEnv(values: Record<string, string | undefined>): { env: Record<string, string | undefined>; reads: () => number } {
  let reads = 0;
  const env = new Proxy(values, {
    get(target, name) {
      if (name === 'HOOKRELAY_TEMPLATE_ENV') reads++;
      return target[name as string];
    },
  });
  return { env, reads: () => reads };
}

const originalEnv = process.env;
afterEach(() => {
  process.env = originalEnv;
});

describe('ARCH-config: the lazy entry resolves the template setting once', () => {
  it('ARCH-config createHookProducer: HOOKRELAY_TEMPLATE_ENV is read once, by the synchronous check, and the real factory takes that pattern', async () => {
    const { env, reads } = countingEnv({ HOOKRELAY_TEMPLATE_ENV: 'APP_*' });
    const producer = createHookProducer({ env });
    expect(reads()).toBe(1);
    await producer.close(); // waits for the real factory
    expect(reads()).toBe(1);
  });

  it('ARCH-config createHookProducer: a bad HOOKRELAY_TEMPLATE_ENV is still refused synchronously, naming the variable', () => {
    expect(() => createHookProducer({ env: { HOOKRELAY_TEMPLATE_ENV: 'HOOKRELAY_*' } })).toThrow(/HOOKRELAY_TEMPLATE_ENV/);
  });

  it('ARCH-config createOperationStore: HOOKRELAY_TEMPLATE_ENV is read once from the environment', async () => {
    const { env, reads } = countingEnv({ ...originalEnv, HOOKRELAY_TEMPLATE_ENV: 'APP_*' });
    process.env = env;
    const store = createOperationStore({});
    expect(reads()).toBe(1);
    await store.close(); // waits for the real factory
    expect(reads()).toBe(1);
  });
});
