/**
 * DEP-7 (issue 50, Q9): one Ctrl-C under `npm start` reaches the worker twice (the terminal's
 * SIGINT and the one npm forwards): that copy is an echo, logged at debug, not `already stopping;
 * signal ignored`; a signal after the echo window, or another signal, is a real repeat.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { onStopSignals, type RepeatedSignal, SIGNAL_ECHO_MS, type StopSignals } from '../../../src/observability/stopSignals.ts';

let signals: StopSignals | undefined;
afterEach(() => signals?.dispose());

describe('DEP-7: stop signals', () => {
  it('DEP-7: the same signal again within the echo window is an echo; later, or a different signal, is a repeat', async () => {
    let clock = 1_000_000;
    const repeats: RepeatedSignal[] = [];
    signals = onStopSignals(
      (r) => repeats.push(r),
      () => clock,
    );
    process.emit('SIGINT', 'SIGINT');
    expect(await signals.first).toBe('SIGINT');
    clock += 50;
    process.emit('SIGINT', 'SIGINT'); // npm's copy of the same keystroke
    clock += 10;
    process.emit('SIGTERM', 'SIGTERM'); // another signal: said
    clock += SIGNAL_ECHO_MS;
    process.emit('SIGINT', 'SIGINT'); // the operator pressing Ctrl-C again: said
    expect(repeats).toEqual([
      { signal: 'SIGINT', echo: true },
      { signal: 'SIGTERM', echo: false },
      { signal: 'SIGINT', echo: false },
    ]);
  });

  it('DEP-7: dispose removes the listeners', () => {
    const before = process.listenerCount('SIGINT');
    signals = onStopSignals();
    expect(process.listenerCount('SIGINT')).toBe(before + 1);
    signals.dispose();
    expect(process.listenerCount('SIGINT')).toBe(before);
    signals = undefined;
  });
});
