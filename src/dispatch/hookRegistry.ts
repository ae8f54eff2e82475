import { type AgentHook, type ParsedAgentHook, type ParsedSerializedHook, type SerializedHook, serializeHook } from '../contract/hook.ts';
import { withoutEnvHookIds } from '../contract/hookTypes.ts';
import type { TemplateEnvPattern } from '../contract/templateSources.ts';
import { assertTemplateSources, parseHookBatch, parseSerializedHooks } from '../contract/validate.ts';
import type { RunnableHook } from './runnableHook.ts';
import { TenantMismatchError } from '../contract/tenant.ts';

const serialized = (hooks: readonly ParsedAgentHook[]): ParsedSerializedHook[] =>
  hooks.map(serializeHook).filter((h): h is ParsedSerializedHook => h !== undefined);

/**
 * The per-operation hook registry (D1, D4a, D9): validated batches in registration order, and the
 * caller hooks of a dispatch by D9 precedence. In-memory; persistence is the operation store's.
 */
export class HookRegistry {
  readonly #byOperation = new Map<string, ParsedAgentHook[]>();
  /** N1: the tenant each registered operation belongs to. */
  readonly #tenants = new Map<string, string>();
  readonly #templateEnv: TemplateEnvPattern;

  constructor(templateEnv: TemplateEnvPattern) {
    this.#templateEnv = templateEnv;
  }

  /** D4a/D9: validates the whole batch first (duplicate ids rejected, W2 template sources), then appends. Returns whether the operation is new. */
  add(operationId: string, hooks: AgentHook[] | SerializedHook[], tenant: string, beforeStore?: (isNew: boolean) => void): void {
    // N1: an operation keeps the tenant it was registered under; another tenant's registration is refused.
    const registered = this.#tenants.get(operationId);
    if (registered !== undefined && registered !== tenant) throw new TenantMismatchError(operationId, registered, tenant);
    const existing = this.#byOperation.get(operationId);
    const parsed = parseHookBatch(hooks, new Set((existing ?? []).map((h) => h.id)));
    assertTemplateSources(parsed, this.#templateEnv); // W2: the operator's pattern, before anything is stored
    beforeStore?.(existing === undefined);
    // D9: an empty batch stores nothing — an empty registration would hide the restored hooks a
    // local-mode dispatch falls back to (LobeHub treats an empty batch as doing nothing).
    this.#tenants.set(operationId, tenant);
    if (parsed.length === 0) return;
    this.#byOperation.set(operationId, [...(existing ?? []), ...parsed]);
  }

  /** N1: the tenant the operation was registered under (undefined: not registered in this process). */
  tenantOf(operationId: string): string | undefined {
    return this.#tenants.get(operationId);
  }

  /** Whether the operation has at least one hook registered in this process (environment hooks not counted). */
  has(operationId: string): boolean {
    return (this.#byOperation.get(operationId)?.length ?? 0) > 0;
  }

  delete(operationId: string): void {
    this.#byOperation.delete(operationId);
    this.#tenants.delete(operationId);
  }

  /** D9a: `undefined` for an unknown operation, `[]` when it has no webhook hooks. Templates unresolved. */
  serialized(operationId: string): SerializedHook[] | undefined {
    const hooks = this.#byOperation.get(operationId);
    return hooks ? serialized(hooks) : undefined;
  }

  /**
   * D9: caller hooks of a dispatch. Queue mode prefers restored hooks (re-validated, D4b) and else
   * the registration's webhooks; local mode prefers the registration (its handlers), then restores.
   * Environment hook ids are dropped from restores (L1).
   */
  callerHooks(mode: 'local' | 'queue', operationId: string, serializedHooks: readonly unknown[] | undefined): RunnableHook[] {
    // D4b: anything but an array is corrupt too (parseSerializedHooks throws HookConfigError).
    const restored = () => parseSerializedHooks(withoutEnvHookIds(serializedHooks as readonly unknown[]));
    const memory = this.#byOperation.get(operationId);
    if (mode === 'queue') return serializedHooks != null ? restored() : serialized(memory ?? []);
    if (memory) return memory;
    return serializedHooks != null ? restored() : [];
  }
}
