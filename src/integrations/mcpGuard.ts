import type { JsonObject, JsonValue } from '../contract/agentHooks.ts';
import { AgentHooksInstallError, AgentRunStateError, ToolError, UninterceptedToolError } from '../contract/errors.ts';
import { jsonEqual } from '../intercept/json/jsonEqual.ts';
import { isObject } from '../util/isObject.ts';
import {
  classify,
  createdTaskId,
  deniedResult,
  errorResponse,
  idKey,
  isInputRequired,
  isRetryLeg,
  judgedValue,
  type McpCallToolResult,
  PASSED_NOTIFICATIONS,
  PASSED_REQUESTS,
  type RequestId,
  resultOf,
  resultResponse,
  responseId,
  snapshotMessage,
  type WireMessage,
} from './mcpWire.ts';
import type { BridgedToolResult } from './runBridge.ts';

/**
 * The seam every MCP tool call passes: the client's transport. The guard replaces the
 * transport's `send` and `onmessage` in place, so whichever API made a message — `callTool`,
 * `request`, `requestStream`, `experimental.tasks.*`, `transport.send` itself, the original client
 * object — it is judged here, on a snapshot, before it is written:
 * - `tools/call` (plain, streamed, task-augmented, a 2026-07-28 retried leg): `pre_tool_call` over
 *   the arguments, then `post_tool_call` over the tool's output — the response, or for a task the
 *   result `tasks/result` fetches, whichever request fetches it; a deny answers in the server's
 *   stead and the call never reaches it, or its output is withheld;
 * - `tasks/result` for a task no judged call created: refused;
 * - a method the guard does not know: refused with `UninterceptedToolError` unless allowed by name.
 * Everything else (listing, resources, prompts, the server's own requests and their answers)
 * passes as it was.
 */

/** What the guard needs of a run: the bridge's tool call. */
export type GuardedRun = {
  toolCall(call: { name: string; args: Record<string, unknown> }, exec: (args: Record<string, unknown>) => unknown): Promise<BridgedToolResult>;
};

type Send = (message: WireMessage, options?: unknown) => Promise<void>;
type Receive = (message: unknown, extra?: unknown) => void;

/** A task a judged `tools/call` created: its result is judged once, then every fetch gets the judged answer. */
type Task = {
  /** Resolves with the first `tasks/result` answer from the server (the tool's output). */
  arrived: Promise<WireMessage>;
  arrive: (response: WireMessage) => void;
  fail: (error: Error) => void;
  /** The `tasks/result` requests waiting for the judged answer. */
  waiters: RequestId[];
  /** The judged answer, without its id, once `post_tool_call` decided. */
  final?: (id: RequestId) => WireMessage;
};

/** A judged call waiting for its next 2026-07-28 leg (`input_required` answered, the client retries). */
type Leg = { name: string; args: JsonObject; next: (id: RequestId) => Promise<WireMessage> };

/** A connection's binding: the open run judging it and the methods let through unjudged. Shared by the transports one client connects. */
export class McpSeam {
  #run: GuardedRun | undefined;
  #allow: ReadonlySet<string> = new Set();
  readonly #guards = new Set<McpTransportGuard>();

  bind(run: GuardedRun, allow: ReadonlySet<string>): void {
    if (this.#run !== undefined && this.#run !== run)
      throw new AgentHooksInstallError(
        'this MCP client is already judged by another open hookrelay run: end that run first (run.end()) — one run (one AGENT-HOOKS-0.1 bundle) judges a connection at a time',
      );
    this.#run = run;
    this.#allow = allow;
  }

  /** The run ended: calls in flight settle (their output withheld), later calls are refused until another run binds. */
  async release(run: GuardedRun): Promise<void> {
    if (this.#run !== run) return;
    await Promise.all([...this.#guards].map((g) => g.settle()));
    this.#run = undefined;
  }

  get run(): GuardedRun | undefined {
    return this.#run;
  }

  get allow(): ReadonlySet<string> {
    return this.#allow;
  }

  attach(guard: McpTransportGuard): void {
    this.#guards.add(guard);
  }
}

const guards = new WeakMap<object, McpTransportGuard>();

/** Installs the guard on a transport once (a second call returns it); the seam decides which run judges. */
export function guardTransport(transport: object, seam: McpSeam): McpTransportGuard {
  const known = guards.get(transport);
  if (known !== undefined) {
    if (known.seam !== seam)
      throw new AgentHooksInstallError('this MCP transport is already guarded for another client: connect each client over its own transport');
    return known;
  }
  const t = transport as { send?: unknown; onmessage?: unknown };
  if (typeof t.send !== 'function') throw new TypeError('wrapClient(client): client.transport must be an MCP Transport (an object with send)');
  const guard = new McpTransportGuard(seam, (t.send as Send).bind(transport), t.onmessage as Receive | undefined);
  // Both in place, non-configurable: every path that writes to this connection goes through the guard, and nothing can swap it back.
  Object.defineProperty(transport, 'send', {
    value: (message: unknown, options?: unknown) => guard.send(message, options),
    writable: false,
    configurable: false,
  });
  Object.defineProperty(transport, 'onmessage', {
    get: () => guard.receive,
    set: (inner: Receive | undefined) => guard.setInner(inner),
    enumerable: true,
    configurable: false,
  });
  guards.set(transport, guard);
  seam.attach(guard);
  return guard;
}

export class McpTransportGuard {
  readonly seam: McpSeam;
  readonly #send: Send;
  #inner: Receive | undefined;
  /** Responses a judged flow waits for, by request id; they reach the protocol only as the verdict leaves them. */
  readonly #awaiting = new Map<string, (response: WireMessage) => void>();
  readonly #tasks = new Map<string, Task>();
  readonly #legs = new Set<Leg>();
  /** Flows in progress, with how to cut them short when the run ends. */
  readonly #flows = new Map<Promise<unknown>, () => void>();
  /**
   * Messages on their way to the protocol: a protocol that connects after the guard chains the
   * handler it found — this guard's `receive` — before its own, so the message comes back here once.
   */
  readonly #delivering = new Set<unknown>();

  constructor(seam: McpSeam, send: Send, inner: Receive | undefined) {
    this.seam = seam;
    this.#send = send;
    this.#inner = inner;
  }

  setInner(inner: Receive | undefined): void {
    this.#inner = inner;
  }

  /** Incoming: a response a judged flow waits for goes to it; everything else to the protocol as it came. */
  readonly receive: Receive = (message, extra) => {
    if (this.#delivering.has(message)) return;
    const id = responseId(message);
    const waiting = id === undefined ? undefined : this.#awaiting.get(idKey(id));
    if (waiting !== undefined && id !== undefined) {
      this.#awaiting.delete(idKey(id));
      waiting(structuredClone(message) as WireMessage);
      return;
    }
    this.#toProtocol(message, extra);
  };

  #toProtocol(message: unknown, extra?: unknown): void {
    this.#delivering.add(message);
    try {
      this.#inner?.(message, extra);
    } finally {
      this.#delivering.delete(message);
    }
  }

  async send(message: unknown, options?: unknown): Promise<void> {
    const m = snapshotMessage(message);
    const c = classify(m);
    if (c.kind === 'response') return this.#send(m, options);
    if (c.kind === 'notification') {
      if (PASSED_NOTIFICATIONS.has(c.method) || this.seam.allow.has(c.method)) return this.#send(m, options);
      throw refused(c.method);
    }
    if (c.kind === 'invalid') throw new UninterceptedToolError('mcp', c.what, 'mcp_method', 'only JSON-RPC requests, notifications and responses are sent');
    if (c.method === 'tools/call') return this.#toolCall(m, c.id, c.params, options);
    if (c.method === 'tasks/result') return this.#taskResult(m, c.id, c.params, options);
    if (PASSED_REQUESTS.has(c.method) || this.seam.allow.has(c.method)) return this.#send(m, options);
    throw refused(c.method);
  }

  /** Cut short every flow in progress (the run is ending): the tool's output is withheld, the requests are answered with an error. */
  async settle(): Promise<void> {
    for (const stop of this.#flows.values()) stop();
    await Promise.allSettled([...this.#flows.keys()]);
  }

  #run(): GuardedRun {
    const run = this.seam.run;
    if (run === undefined)
      throw new AgentRunStateError('no open hookrelay run judges this MCP client: start a run and wrapClient(client) with it before calling tools');
    return run;
  }

  #deliver(message: WireMessage): void {
    this.#toProtocol(message);
  }

  /** The next response to `id`, however long it takes (a flow cut short rejects it). */
  #expect(id: RequestId): Promise<WireMessage> {
    return new Promise((resolve) => this.#awaiting.set(idKey(id), resolve));
  }

  async #toolCall(m: WireMessage, id: RequestId, params: Record<string, unknown>, options: unknown): Promise<void> {
    const run = this.#run();
    const name = params.name;
    if (typeof name !== 'string' || name === '') throw new TypeError('callTool(params): params.name must be the tool name (a non-empty string)');
    if (params.arguments !== undefined && !isObject(params.arguments)) throw new TypeError('callTool(params): params.arguments must be an object');
    const args = (params.arguments ?? {}) as JsonObject;
    if (isRetryLeg(params)) {
      const leg = [...this.#legs].find((l) => l.name === name && jsonEqual(l.args, args));
      // A retried leg of a call already judged continues it; any other is a call of its own.
      if (leg !== undefined) {
        this.#legs.delete(leg);
        void leg.next(id);
        return this.#send(m, options);
      }
    }
    const task = isObject(params.task);
    /** Where the judged answer goes: this request, or (a task) every `tasks/result` waiting for it. */
    let answerTo: RequestId = id;
    let taskEntry: Task | undefined;
    let original: McpCallToolResult | undefined;
    let failure: WireMessage | undefined;
    let sendError: unknown;
    let wasWritten = false;
    let stop: (error: Error) => void = () => undefined;
    let sent!: () => void;
    const written = new Promise<void>((resolve) => (sent = resolve));
    const outcome = run.toolCall({ name, args }, async (admitted) => {
      const out = { ...m, params: { ...params, arguments: admitted } };
      let response = this.#cutShort(this.#expect(id), (cut) => (stop = cut));
      try {
        await this.#send(out, options);
        wasWritten = true;
      } catch (err) {
        this.#awaiting.delete(idKey(id));
        sendError = err;
        throw err;
      } finally {
        sent();
      }
      let r = await response;
      for (;;) {
        if (r.error !== undefined) {
          failure = r;
          const e = isObject(r.error) ? r.error : {};
          throw new ToolError({ error: (e.message ?? 'MCP error') as JsonValue, code: (e.code ?? null) as JsonValue }, String(e.message ?? 'MCP error'));
        }
        const taskId = task ? createdTaskId(r.result) : undefined;
        if (taskId !== undefined) {
          // The creation answer is a handle, not output: the caller gets it now; post_tool_call waits for the result.
          this.#deliver(r);
          taskEntry = this.#newTask(taskId);
          const entry = taskEntry;
          response = this.#cutShort(entry.arrived, (cut) => (stop = cut));
          r = await response;
          continue;
        }
        if (isInputRequired(r.result)) {
          // The server asks for input first: the client answers and retries this call, which stays the one judged.
          let nextLeg!: (legId: RequestId) => Promise<WireMessage>;
          const retried = new Promise<WireMessage>((resolve, reject) => {
            nextLeg = (legId) => {
              answerTo = legId;
              const p = this.#expect(legId);
              p.then(resolve, reject);
              return p;
            };
          });
          const leg: Leg = { name, args: admitted as JsonObject, next: nextLeg };
          this.#legs.add(leg);
          this.#deliver(r);
          try {
            r = await this.#cutShort(retried, (cut) => (stop = cut));
          } finally {
            this.#legs.delete(leg);
          }
          continue;
        }
        break;
      }
      original = isObject(r.result) ? (r.result as McpCallToolResult) : { content: [] };
      // An MCP error result is the tool's failure: post_tool_call sees is_error with the result.
      if (original.isError === true) throw new ToolError(judgedValue(original), 'MCP tool returned an error result');
      return judgedValue(original);
    });
    const flow = outcome.then(
      (r) =>
        this.#answer(r, {
          answerTo: () => answerTo,
          task: taskEntry,
          original: () => original,
          failure: () => failure,
          sendError: () => sendError,
          created: task,
        }),
      // Refused before the request was written: the send itself rejects with the reason (an `input` deny, a terminating host error).
      (err: unknown) => (wasWritten ? this.#answerFailure(err, answerTo, taskEntry) : undefined),
    );
    this.#flows.set(flow, () => stop(new Error('the hookrelay run ended before this MCP tool call finished: its output is withheld')));
    void flow.finally(() => this.#flows.delete(flow));
    // The request is written (or answered in the server's stead): the protocol waits for its response as usual.
    await Promise.race([written, outcome.then(() => undefined)]);
    if (sendError !== undefined) throw sendError;
  }

  /** A pending wait that the run's end can cut short. */
  #cutShort<T>(p: Promise<T>, onStop: (cut: (error: Error) => void) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      onStop(reject);
      p.then(resolve, reject);
    });
  }

  #newTask(taskId: string): Task {
    let arrive!: (r: WireMessage) => void;
    let fail!: (e: Error) => void;
    const arrived = new Promise<WireMessage>((resolve, reject) => {
      arrive = resolve;
      fail = reject;
    });
    arrived.catch(() => undefined);
    const entry: Task = { arrived, arrive, fail, waiters: [] };
    this.#tasks.set(taskId, entry);
    return entry;
  }

  /** The judged outcome to whoever waits for it. */
  #answer(
    r: BridgedToolResult,
    at: {
      answerTo: () => RequestId;
      task: Task | undefined;
      original: () => McpCallToolResult | undefined;
      failure: () => WireMessage | undefined;
      sendError: () => unknown;
      created: boolean;
    },
  ): void {
    const original = at.original();
    let answer: (id: RequestId) => WireMessage;
    if (r.kind === 'result') answer = (id) => resultResponse(id, resultOf(r.value, original, false));
    else if (r.reason !== undefined)
      // A task-augmented call denied before it ran has no task to hand out: the caller gets an error naming the reason.
      answer =
        at.created && at.task === undefined && original === undefined
          ? (id) => errorResponse(id, JSON.stringify(r.content), r.content)
          : (id) => resultResponse(id, deniedResult(r.content));
    else if (at.sendError() !== undefined)
      return; // never written: the request already rejected with the transport's error
    else {
      const failure = at.failure();
      // A protocol error post_tool_call left as it was is the caller's to see, as without hookrelay.
      const unchanged = failure !== undefined && isObject(failure.error) && r.message === String(failure.error.message ?? 'MCP error');
      answer = unchanged ? (id) => ({ ...failure, id }) : (id) => resultResponse(id, resultOf(r.content, original, true));
    }
    if (at.task !== undefined) {
      at.task.final = answer;
      for (const id of at.task.waiters.splice(0)) this.#deliver(answer(id));
      return;
    }
    this.#deliver(answer(at.answerTo()));
  }

  /** After the request was written the run refused the call (a `host_error` that terminates it) or it was cut short: an error answer. */
  #answerFailure(err: unknown, answerTo: RequestId, task: Task | undefined): void {
    const message = err instanceof Error ? err.message : String(err);
    const answer = (id: RequestId) => errorResponse(id, message);
    if (task !== undefined) {
      task.final = answer;
      for (const id of task.waiters.splice(0)) this.#deliver(answer(id));
      return;
    }
    this.#deliver(answer(answerTo));
  }

  /**
   * `tasks/result`: the output of a task a judged call created. The first answer from the server
   * is judged (`post_tool_call`); every fetch — this one, concurrent ones, later ones — gets the
   * judged answer, never the server's. A task no judged call created is refused.
   */
  async #taskResult(m: WireMessage, id: RequestId, params: Record<string, unknown>, options: unknown): Promise<void> {
    const taskId = params.taskId;
    const entry = typeof taskId === 'string' ? this.#tasks.get(taskId) : undefined;
    if (entry === undefined)
      throw new UninterceptedToolError(
        'mcp',
        `tasks/result ${JSON.stringify(taskId ?? null)}`,
        'mcp_task',
        'its task was not created by a tools/call this hookrelay run judged, so its output cannot be judged: create the task through the wrapped client',
      );
    if (entry.final !== undefined) {
      this.#deliver(entry.final(id));
      return;
    }
    this.#run();
    entry.waiters.push(id);
    const response = this.#expect(id);
    void response.then((r) => {
      // A protocol error answering this fetch (not the tool's output) goes to this fetch alone; the task may still be fetched.
      if (r.error !== undefined && entry.final === undefined) {
        entry.waiters = entry.waiters.filter((w) => w !== id);
        this.#deliver(r);
        return;
      }
      entry.arrive(r);
    });
    try {
      await this.#send(m, options);
    } catch (err) {
      this.#awaiting.delete(idKey(id));
      entry.waiters = entry.waiters.filter((w) => w !== id);
      throw err;
    }
  }
}

function refused(method: string): UninterceptedToolError {
  return new UninterceptedToolError(
    'mcp',
    method,
    'mcp_method',
    `hookrelay does not know what it does (it might run a tool or return one's output), so it is refused unsent: pass allowMethods: [${JSON.stringify(method)}] to wrapClient(client, { allowMethods }) to send it unjudged`,
  );
}
