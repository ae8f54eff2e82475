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

export function onStopSignals(onRepeat?: (signal: NodeJS.Signals) => void): StopSignals {
  let received: NodeJS.Signals | undefined;
  let resolveFirst: (signal: NodeJS.Signals) => void = () => undefined;
  const first = new Promise<NodeJS.Signals>((resolve) => (resolveFirst = resolve));
  const listener = (signal: NodeJS.Signals) => {
    if (received === undefined) {
      received = signal;
      resolveFirst(signal);
    } else onRepeat?.(signal);
  };
  for (const s of STOP_SIGNALS) process.on(s, listener);
  return {
    first,
    dispose() {
      for (const s of STOP_SIGNALS) process.off(s, listener);
    },
  };
}
