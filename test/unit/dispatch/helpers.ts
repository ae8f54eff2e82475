/** Shared helpers for the dispatcher / control tests (unit and integration). */
import type { DestinationStream } from 'pino';
import { createLogger, type Logger } from '../../../src/observability/logger.ts';
import type { ToolCallHookContext } from '../../../src/contract/toolContext.ts';
import type { DispatchProducer } from '../../../src/dispatch/hookDispatcher.ts';

/** A logger at debug level whose JSON lines are collected (secret-leak checks). */
export function captureLogger(): { logger: Logger; lines: string[]; text: () => string } {
  const lines: string[] = [];
  // pino writes each line synchronously to any object with write(), so lines are there at once.
  const destination = { write: (line: string) => lines.push(line) } as unknown as DestinationStream;
  const logger = createLogger({ destination, level: 'debug' });
  return { logger, lines, text: () => lines.join('') };
}

export function quietLogger(): Logger {
  return createLogger({ destination: { write: () => true } as unknown as DestinationStream, level: 'silent' });
}

export function toolContext(overrides: Partial<ToolCallHookContext> = {}): ToolCallHookContext {
  return {
    toolCallId: 'call_1',
    assistantMessageId: 'msg_1',
    identifier: 'web-browsing',
    apiName: 'search',
    args: { q: 'hello' },
    callIndex: 0,
    stepIndex: 0,
    operationId: 'op_1',
    executor: 'server',
    userId: 'user_1',
    ...overrides,
  };
}

export type EnqueueCall = Parameters<DispatchProducer['enqueue']>[0];

/** A producer that records what queue mode hands it (D3/D8). */
export function recordingProducer(fail?: () => Error): DispatchProducer & { calls: EnqueueCall[] } {
  const calls: EnqueueCall[] = [];
  return {
    calls,
    enqueue: async (input) => {
      calls.push(input);
      if (fail) throw fail();
      return { deliveryIds: input.hooks.map((_, i) => `dlv_01J0000000000000000000000${i}`), queued: true };
    },
  };
}

/** The error a promise rejects with (fails the test if it resolves). */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

export function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}
