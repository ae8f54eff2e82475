import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  CliUsageError,
  ConsoleInputError,
  HookrelayError,
  DeadlineAbortError,
  ToolCallDeniedError,
  UninterceptedToolError,
  ProjectionError,
  EmissionCancelledError,
} from '../../../src/contract/errors.ts';
import { type AnyErrorClass, DEPRECATED_ALIAS, samples } from './errorSamples.ts';

const root = path.resolve(import.meta.dirname, '../../..');
const errorsDoc = readFileSync(path.join(root, 'docs/errors.md'), 'utf8');

/**
 * The catalogue: every error class any entry (src/entry/*.ts) exports, by export name, with its
 * stable code. A new exported error must be added here, and its code to docs/errors.md.
 */
const CATALOGUE: Record<string, `HOOKRELAY_${string}`> = {
  AgentHooksInstallError: 'HOOKRELAY_AGENT_HOOKS_INSTALL',
  AgentRunStateError: 'HOOKRELAY_AGENT_RUN_STATE',
  AllowedCidrsError: 'HOOKRELAY_ALLOWED_CIDRS_INVALID',
  ApprovalNotClaimedError: 'HOOKRELAY_APPROVAL_NOT_CLAIMED',
  ApprovalPendingError: 'HOOKRELAY_APPROVAL_PENDING',
  ApprovalNotFoundError: 'HOOKRELAY_APPROVAL_NOT_FOUND',
  ApprovalNotPendingError: 'HOOKRELAY_APPROVAL_NOT_PENDING',
  ApprovalTokenError: 'HOOKRELAY_APPROVAL_TOKEN_INVALID',
  CriticalHookDeliveryError: 'HOOKRELAY_CRITICAL_DELIVERY_FAILED',
  DeferredCancelledError: 'HOOKRELAY_DEFERRED_CANCELLED',
  DeferredContextError: 'HOOKRELAY_DEFERRED_CONTEXT_INVALID',
  DeliveryConfigError: 'HOOKRELAY_DELIVERY_CONFIG_INVALID',
  EmbeddedStoreUnavailableError: 'HOOKRELAY_EMBEDDED_STORE_UNAVAILABLE',
  EmbeddedStoreUntrustedError: 'HOOKRELAY_EMBEDDED_STORE_UNTRUSTED',
  EnvHookConfigError: 'HOOKRELAY_ENV_HOOK_CONFIG_INVALID',
  EventValidationError: 'HOOKRELAY_EVENT_INVALID',
  EventNotAcceptedError: 'HOOKRELAY_EVENT_NOT_ACCEPTED',
  HookConfigError: 'HOOKRELAY_HOOK_CONFIG_INVALID',
  HostFailureError: 'HOOKRELAY_HOST_ERROR',
  HostErrorFailure: 'HOOKRELAY_HOST_ERROR',
  IdempotencyConflictError: 'HOOKRELAY_IDEMPOTENCY_CONFLICT',
  InterceptionBlockedError: 'HOOKRELAY_INTERCEPTION_BLOCKED',
  InterceptionBlocked: 'HOOKRELAY_INTERCEPTION_BLOCKED',
  OperationIdMismatchError: 'HOOKRELAY_OPERATION_ID_MISMATCH',
  TenantError: 'HOOKRELAY_TENANT_INVALID',
  TenantMismatchError: 'HOOKRELAY_TENANT_MISMATCH',
  OutcomeNotStoredError: 'HOOKRELAY_OUTCOME_NOT_STORED',
  PayloadTooLargeError: 'HOOKRELAY_PAYLOAD_TOO_LARGE',
  PlaceholderNotFoundError: 'HOOKRELAY_PLACEHOLDER_NOT_FOUND',
  RedisUnavailableError: 'HOOKRELAY_REDIS_UNAVAILABLE',
  RemoteInterceptorError: 'HOOKRELAY_REMOTE_INTERCEPTOR_FAILED',
  SettingsError: 'HOOKRELAY_SETTINGS_INVALID',
  SsrfBlockedError: 'HOOKRELAY_SSRF_BLOCKED',
  StorageError: 'HOOKRELAY_STORAGE_ERROR',
  StoreUnavailableError: 'HOOKRELAY_STORE_UNAVAILABLE',
  TemplateEnvPatternError: 'HOOKRELAY_TEMPLATE_ENV_INVALID',
  ToolCallContextError: 'HOOKRELAY_TOOL_CALL_CONTEXT_INVALID',
  ToolCallDeniedError: 'HOOKRELAY_TOOL_CALL_DENIED',
  ToolError: 'HOOKRELAY_TOOL_FAILED',
  UninterceptedToolError: 'HOOKRELAY_TOOL_NOT_INTERCEPTED',
  WebhookDeliveryError: 'HOOKRELAY_WEBHOOK_DELIVERY_FAILED',
  WebhookDeliveryFailure: 'HOOKRELAY_WEBHOOK_DELIVERY_FAILED',
  WorkerPluginError: 'HOOKRELAY_WORKER_PLUGIN_INVALID',
};

/** The subpath entries' own errors (the root entry's are in errorSamples.ts). */
const make: Record<string, () => Error> = {
  ...samples,
  ToolCallDeniedError: () => new ToolCallDeniedError('{"error":"denied"}', { error: 'denied' }, 'policy.x'),
  UninterceptedToolError: () => new UninterceptedToolError('triage', 'web_search', 'hosted_tool'),
};

/** Export name → class, over every entry file, and which entries export it. */
const exported = new Map<string, { cls: AnyErrorClass; entries: string[] }>();

beforeAll(async () => {
  const entryDir = path.join(root, 'src/entry');
  for (const file of readdirSync(entryDir).filter((f) => f.endsWith('.ts'))) {
    const entry = (await import(path.join(entryDir, file))) as Record<string, unknown>;
    for (const [name, value] of Object.entries(entry)) {
      if (typeof value !== 'function' || value === HookrelayError || !((value as { prototype?: unknown }).prototype instanceof Error)) continue;
      const seen = exported.get(name);
      if (seen) {
        expect(seen.cls, `${name} names one class in every entry`).toBe(value);
        seen.entries.push(file);
      } else exported.set(name, { cls: value as AnyErrorClass, entries: [file] });
    }
  }
}, 60_000);

/** Every `HOOKRELAY_*` literal on a line of src/ that sets or compares an error `code`. */
function codesInSource(): Map<string, string> {
  const found = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const d of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, d.name);
      if (d.isDirectory()) walk(full);
      else if (d.name.endsWith('.ts')) {
        readFileSync(full, 'utf8')
          .split('\n')
          .forEach((line, i) => {
            if (!/\bcode\b|_CODES\b/i.test(line)) return;
            for (const m of line.matchAll(/'(HOOKRELAY_[A-Z_]+)'/g)) found.set(m[1]!, `${path.relative(root, full)}:${i + 1}`);
          });
      }
    }
  };
  walk(path.join(root, 'src'));
  return found;
}

describe('the error catalogue: every exported error, its code, and docs/errors.md', () => {
  it('the catalogue lists exactly the error classes the entries export', () => {
    expect([...exported.keys()].sort()).toEqual(Object.keys(CATALOGUE).sort());
  });

  it.each(Object.entries(CATALOGUE))('%s: a HookrelayError with code %s, a class named …Error, in docs/errors.md', (name, code) => {
    const { cls } = exported.get(name)!;
    const error = make[name]!();
    expect(error).toBeInstanceOf(cls);
    expect(error).toBeInstanceOf(HookrelayError);
    expect((error as { code?: unknown }).code).toBe(code);
    // The class's own name ends in Error; an export name that does not is a deprecated alias of it.
    expect(cls.name).toMatch(/Error$/);
    if (!name.endsWith('Error')) expect(DEPRECATED_ALIAS[name]).toBe(cls.name);
    expect(errorsDoc).toContain(`\`${code}\``);
    // docs/errors.md's exceptions table has a row for the class under its current name with this code.
    const rows = errorsDoc.split('\n').filter((l) => l.startsWith(`| \`${cls.name}\``) && l.includes(`| \`${code}\``));
    expect(rows, `docs/errors.md row for ${cls.name} with ${code}`).toHaveLength(1);
  });

  it('every code src/ sets or compares (internal errors too) is listed in docs/errors.md', () => {
    const codes = codesInSource();
    expect(codes.size).toBeGreaterThan(Object.keys(CATALOGUE).length - Object.keys(DEPRECATED_ALIAS).length);
    for (const [code, where] of codes) expect(errorsDoc, `${code} (${where}) is not in docs/errors.md`).toContain(`\`${code}\``);
  });

  it.each([
    ['CliUsageError', () => new CliUsageError('bad flag'), 'HOOKRELAY_CLI_USAGE'],
    ['DeadlineAbortError (timeout)', () => new DeadlineAbortError('timeout'), 'HOOKRELAY_TIMEOUT'],
    ['DeadlineAbortError (cancelled)', () => new DeadlineAbortError('cancelled'), 'HOOKRELAY_CANCELLED'],
    ['EmissionCancelledError', () => new EmissionCancelledError(new Error('stop')), 'HOOKRELAY_EMISSION_CANCELLED'],
    ['ConsoleInputError', () => new ConsoleInputError('limit must be a number'), 'HOOKRELAY_CONSOLE_INPUT_INVALID'],
    ['ProjectionError', () => new ProjectionError('value contains a cycle'), 'HOOKRELAY_PROJECTION_INVALID'],
  ] as const)('internal %s is a HookrelayError …Error with its code, listed in docs/errors.md', (_label, build, code) => {
    const error = build();
    expect(error).toBeInstanceOf(HookrelayError);
    expect(error.code).toBe(code);
    expect(error.name).toMatch(/Error$/);
    expect(error.constructor.name).toMatch(/Error$/);
    expect(errorsDoc).toContain(`\`${code}\``);
  });
});

/** Where error classes are declared: every one in this file (as undici's errors.js). */
const ERRORS_FILE = 'src/contract/errors.ts';
/** Error classes declared elsewhere, each with the reason. */
const OUTSIDE: Record<string, string> = {
  HttpError:
    "the console's answer (an HTTP status and the line a visitor reads), not an error of the library: errorMapping.ts turns it into the response, it never leaves the console",
};
/** Error classes of errors.ts without a `HOOKRELAY_*` code, each with the reason. */
const WITHOUT_CODE: Record<string, string> = {
  InterceptionTimeoutError:
    'the abort reason settleWithin gives a callee it stopped waiting for (a TimeoutError, as the platform names it); never thrown to a caller',
};

type ErrorClassDeclaration = { file: string; name: string; base: string; codes: string[]; brandKey: string | undefined };

/** Source text with comments blanked (a comment may quote `class … extends …`). */
function withoutComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ' ')).replace(/(^|[^:'"`\\])\/\/[^\n]*/g, '$1');
}

/**
 * Every class declared under src/ that extends an error class: a built-in `…Error`, or a class
 * found here (followed to a fixed point, so `class X extends StorageError` counts too).
 */
function errorClassDeclarations(): ErrorClassDeclaration[] {
  const all: ErrorClassDeclaration[] = [];
  const walk = (dir: string): void => {
    for (const d of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, d.name);
      if (d.isDirectory()) walk(full);
      else if (d.name.endsWith('.ts')) {
        const text = withoutComments(readFileSync(full, 'utf8'));
        for (const m of text.matchAll(/\bclass(?:\s+(\w+))?(?:\s*<[^>{]*>)?\s+extends\s+([\w.]+)/g)) {
          const end = text.indexOf('\n}', m.index);
          const body = text.slice(m.index, end === -1 ? undefined : end);
          all.push({
            file: path.relative(root, full),
            name: m[1] ?? '(anonymous)',
            base: m[2]!,
            codes: [...new Set([...body.matchAll(/'(HOOKRELAY_[A-Z_]+)'/g)].map((c) => c[1]!))],
            brandKey: /\bbrand\(this, '([\w]+)'\)/.exec(body)?.[1],
          });
        }
      }
    }
  };
  walk(path.join(root, 'src'));
  const errorNames = new Set<string>(Object.keys(DEPRECATED_ALIAS));
  const isError = (c: ErrorClassDeclaration): boolean => /Error$/.test(c.base.split('.').pop()!) || errorNames.has(c.base);
  for (let grew = true; grew; ) {
    grew = false;
    for (const c of all) {
      if (!isError(c) || errorNames.has(c.name)) continue;
      errorNames.add(c.name);
      grew = true;
    }
  }
  return all.filter(isError);
}

describe('ARCH-errors: every error class in src/contract/errors.ts', () => {
  const declarations = errorClassDeclarations();

  it('ARCH-errors: no file under src/ but src/contract/errors.ts declares an error class (HttpError, the console’s answer, aside)', () => {
    expect(declarations.length, 'the scan finds the error classes').toBeGreaterThanOrEqual(
      Object.keys(CATALOGUE).length - Object.keys(DEPRECATED_ALIAS).length,
    );
    const outside = declarations.filter((c) => c.file !== ERRORS_FILE && OUTSIDE[c.name] === undefined).map((c) => `${c.file}: ${c.name} extends ${c.base}`);
    expect(outside).toEqual([]);
    for (const name of Object.keys(OUTSIDE))
      expect(
        declarations.some((c) => c.name === name && c.file !== ERRORS_FILE),
        `${name} (OUTSIDE) still exists`,
      ).toBe(true);
  });

  it('ARCH-errors: every error class an entry exports is declared in src/contract/errors.ts', () => {
    const fileOf = new Map(declarations.map((c) => [c.name, c.file]));
    for (const [name, { cls }] of exported) expect(fileOf.get(cls.name), `${name} (class ${cls.name})`).toBe(ERRORS_FILE);
  });

  it('ARCH-errors: every error class of src/contract/errors.ts has a HOOKRELAY_* code (inherited counts), each in docs/errors.md', () => {
    const byName = new Map(declarations.map((c) => [c.name, c]));
    const codesOf = (c: ErrorClassDeclaration | undefined): string[] => (c === undefined ? [] : c.codes.length > 0 ? c.codes : codesOf(byName.get(c.base)));
    for (const c of declarations.filter((d) => d.file === ERRORS_FILE && d.name !== 'HookrelayError')) {
      if (WITHOUT_CODE[c.name] !== undefined) continue;
      const codes = codesOf(c);
      expect(codes, `${c.file}: ${c.name} has a code`).not.toEqual([]);
      for (const code of codes) expect(errorsDoc, `${c.name}'s ${code} is in docs/errors.md`).toContain(`\`${code}\``);
    }
    for (const name of Object.keys(WITHOUT_CODE)) expect(byName.has(name), `${name} (WITHOUT_CODE) still exists`).toBe(true);
  });

  it('ARCH-errors: every error class of src/contract/errors.ts has its own brand, keyed by its code (its name when it has none or two)', async () => {
    const errors = (await import('../../../src/contract/errors.ts')) as Record<string, unknown>;
    // The base's brand is `Symbol.for('hookrelay.error')`, the key earlier versions check.
    expect(Object.hasOwn(errors.HookrelayError as object, Symbol.hasInstance)).toBe(true);
    const ofFile = declarations.filter((d) => d.file === ERRORS_FILE && d.name !== 'HookrelayError');
    const seen = new Map<string, string>();
    for (const c of ofFile) {
      const cls = errors[c.name] as (abstract new (...args: never[]) => Error) | undefined;
      expect(cls, `${c.name} is exported`).toBeTypeOf('function');
      // The key: the literal its `code` field is initialised with, else the class's name.
      const declared = /readonly code(?::[^=\n]*)? = '(HOOKRELAY_\w+)'/.exec(
        readFileSync(path.join(root, ERRORS_FILE), 'utf8').split(`class ${c.name} `)[1]!.split('\n}\n')[0]!,
      )?.[1];
      expect(c.brandKey, `${c.name}'s brand key`).toBe(declared ?? c.name);
      expect(seen.get(c.brandKey!), `${c.name}'s brand is not another class's`).toBeUndefined();
      seen.set(c.brandKey!, c.name);
      expect(Object.hasOwn(cls!, Symbol.hasInstance), `${c.name} has its own Symbol.hasInstance`).toBe(true);
      expect(Object.hasOwn(cls!.prototype, Symbol.for(`hookrelay.error.${c.brandKey}`)), `${c.name}'s prototype carries its brand`).toBe(true);
      // Every hookrelay error carries the base's brand, under the key earlier versions check.
      if (WITHOUT_CODE[c.name] === undefined) expect((cls!.prototype as Record<symbol, unknown>)[Symbol.for('hookrelay.error')], c.name).toBe(true);
    }
    expect(seen.size).toBe(ofFile.length);
  });
});
