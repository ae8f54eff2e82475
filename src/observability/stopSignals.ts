/**
 * Q9: SIGINT and SIGTERM handled once, however many arrive. A terminal's Ctrl-C reaches every
 * process of the foreground group, and `npm start` / `npx` forward it to their child as well, so
 * the worker sees SIGINT twice; with `process.once` the second one found no listener and Node's
 * default ended the process (exit 130) in the middle of its clean stop.
 */
export type StopSignals = {
  /** Settles with the first signal. */
  first: Promise<NodeJS.Signals>;
  /** Removes the listeners (a signal after that gets Node's default again). */
  dispose(): void;
};

const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM'];

/**
 * A second copy of the first signal within this window is the same keystroke delivered twice
 * (the terminal's and npm's), not an operator pressing Ctrl-C again.
 */
export const SIGNAL_ECHO_MS = 1_000;

/** `echo`: the repeat is the first signal again within SIGNAL_ECHO_MS (one Ctrl-C under npm). */
export type RepeatedSignal = { signal: NodeJS.Signals; echo: boolean };

export function onStopSignals(onRepeat?: (repeat: RepeatedSignal) => void, now: () => number = Date.now): StopSignals {
  let received: { signal: NodeJS.Signals; at: number } | undefined;
  let resolveFirst: (signal: NodeJS.Signals) => void = () => undefined;
  const first = new Promise<NodeJS.Signals>((resolve) => (resolveFirst = resolve));
  const listener = (signal: NodeJS.Signals) => {
    if (received === undefined) {
      received = { signal, at: now() };
      resolveFirst(signal);
    } else onRepeat?.({ signal, echo: signal === received.signal && now() - received.at < SIGNAL_ECHO_MS });
  };
  for (const s of STOP_SIGNALS) process.on(s, listener);
  return {
    first,
    dispose() {
      for (const s of STOP_SIGNALS) process.off(s, listener);
    },
  };
}
