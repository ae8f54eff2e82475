/** The console's errors: a visitor's bad input (400) and a refusal a handler means to give (its status). */
import { HookrelayError } from '../contract/hookrelayError.ts';

/** A value a visitor put in a URL or a form that the console refuses (queryInput.ts): answered with 400 and the message. */
export class ConsoleInputError extends HookrelayError {
  readonly code = 'HOOKRELAY_CONSOLE_INPUT_INVALID' as const;
  constructor(message: string) {
    super(message);
    this.name = 'ConsoleInputError';
  }
}

/** A refusal a handler means to give: its status, the one line the visitor reads, and headers it needs (Retry-After). */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}
