/**
 * A refusal a console handler means to give: its status, the one line the visitor reads, and
 * headers it needs (Retry-After). Not a HookrelayError and not in contract/errors.ts: it is the
 * console's answer, not an error of the library; errorMapping.ts turns it into the response and
 * it never leaves the console, so it has no `code`.
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}
