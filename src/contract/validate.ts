import { AgentHookSchema, SerializedHookSchema, type ParsedAgentHook, type ParsedSerializedHook } from './hook.ts';
import { HookConfigError } from './errors.ts';

/**
 * D4a: validate a whole batch before anything changes; the first invalid hook rejects the
 * batch with an error naming its id and field. Duplicate ids inside the batch are rejected (D9).
 * Returns deep snapshots, so later mutation of the caller's objects changes nothing.
 */
export function parseHookBatch(hooks: readonly unknown[], existingIds: ReadonlySet<string> = new Set()): ParsedAgentHook[] {
  if (!Array.isArray(hooks)) throw new HookConfigError(undefined, undefined, [{ path: '', message: 'hooks must be an array' }]);
  const seen = new Set(existingIds);
  return hooks.map((raw, index) => {
    const result = AgentHookSchema.safeParse(raw);
    if (!result.success) throw HookConfigError.fromZod(raw, index, result.error);
    const hook = result.data;
    if (seen.has(hook.id)) {
      throw new HookConfigError(hook.id, index, [{ path: 'id', message: 'duplicate hook id in this operation' }]);
    }
    seen.add(hook.id);
    const snapshot: ParsedAgentHook = { ...hook, webhook: hook.webhook ? structuredClone(hook.webhook) : undefined };
    if (snapshot.webhook === undefined) delete snapshot.webhook;
    return snapshot;
  });
}

/** D4b: restored hooks are re-validated on every use; a corrupt one throws, never dropped. */
export function parseSerializedHooks(hooks: readonly unknown[]): ParsedSerializedHook[] {
  if (!Array.isArray(hooks)) throw new HookConfigError(undefined, undefined, [{ path: '', message: 'serialized hooks must be an array' }]);
  return hooks.map((raw, index) => {
    const result = SerializedHookSchema.safeParse(raw);
    if (!result.success) throw HookConfigError.fromZod(raw, index, result.error);
    return result.data;
  });
}
