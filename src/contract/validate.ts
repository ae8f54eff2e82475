import { AgentHookSchema, EnvironmentSerializedHookSchema, SerializedHookSchema, type ParsedAgentHook, type ParsedSerializedHook } from './hook.ts';
import { HookConfigError } from './errors.ts';
import { ENV_HOOK_ID_PREFIX, hasEnvHookId, isEnvHookId, isMarkedEnvironmentHook } from './hookTypes.ts';
import { findUnstorableText, unstorableTextMessage } from './storableText.ts';
import { templateSourceProblem, type TemplateEnvPattern } from './templateSources.ts';

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
    assertStorableHook(hook, index);
    if (seen.has(hook.id)) {
      throw new HookConfigError(hook.id, index, [{ path: 'id', message: 'duplicate hook id in this operation' }]);
    }
    seen.add(hook.id);
    const snapshot: ParsedAgentHook = { ...hook, webhook: hook.webhook ? structuredClone(hook.webhook) : undefined };
    if (snapshot.webhook === undefined) delete snapshot.webhook;
    return snapshot;
  });
}

export type ParseSerializedOptions = {
  /**
   * Accept environment hooks (`server-env-webhook:<event>` ids). Only for hooks the library built
   * itself from the environment and carried through the ledger to the worker (E3, D8); a
   * caller's hook may never use a reserved id (E4).
   */
  allowEnvironmentIds?: boolean;
  /**
   * Accept an environment hook id only on a hook object hookrelay marked itself
   * (`markEnvironmentHook`: queue-mode dispatch handing its env hooks to the producer). A
   * caller's hook with a reserved id is refused with the same HookConfigError as `register` (E4).
   */
  allowMarkedEnvironmentHooks?: boolean;
};

/** D4b: restored hooks are re-validated on every use; a corrupt one throws, never dropped. */
export function parseSerializedHooks(hooks: readonly unknown[], options: ParseSerializedOptions = {}): ParsedSerializedHook[] {
  if (!Array.isArray(hooks)) throw new HookConfigError(undefined, undefined, [{ path: '', message: 'serialized hooks must be an array' }]);
  return hooks.map((raw, index) => parseSerializedHook(raw, index, options));
}

export function parseSerializedHook(raw: unknown, index: number | undefined, options: ParseSerializedOptions = {}): ParsedSerializedHook {
  const envAllowed = options.allowEnvironmentIds === true || (options.allowMarkedEnvironmentHooks === true && isMarkedEnvironmentHook(raw));
  const envId = envAllowed && hasEnvHookId(raw) ? (raw as { id: string }).id : undefined;
  // An environment hook is checked like any other hook, under its event name, then gets its id back.
  const candidate = envId !== undefined ? { ...(raw as object), id: envId.slice(ENV_HOOK_ID_PREFIX.length) } : raw;
  const result = (envId !== undefined ? EnvironmentSerializedHookSchema : SerializedHookSchema).safeParse(candidate);
  if (!result.success) throw HookConfigError.fromZod(raw, index, result.error);
  assertStorableHook(result.data, index);
  return envId !== undefined ? { ...result.data, id: envId } : result.data;
}

/**
 * A hook with a NUL or a lone surrogate in any key or value (id, matcher, URL, headers, body, at
 * any depth) could not be stored in Postgres and would poison the batch it lands in: refused,
 * naming the path (never the text). A bad id is not repeated in the message.
 */
function assertStorableHook(hook: { id: string }, index: number | undefined): void {
  const found = findUnstorableText(hook);
  if (found === undefined) return;
  const badId = found.path === 'id';
  throw new HookConfigError(badId ? undefined : hook.id, index, [{ path: found.path, message: unstorableTextMessage(found) }]);
}

type HookWithTemplates = { id: string; webhook?: { allowedEnvVars?: string[] | undefined } | undefined };

/**
 * W2 at registration, the operator's half: every allowedEnvVars entry (every template must name
 * one) is allowed by HOOKRELAY_TEMPLATE_ENV. The schemas already refused hookrelay's own
 * variables; this rule needs the settings, so it runs where they are read (dispatcher, producer,
 * operation store). The first offending hook throws a HookConfigError naming its id and field.
 */
export function assertTemplateSources(hooks: readonly HookWithTemplates[], pattern: TemplateEnvPattern, options: ParseSerializedOptions = {}): void {
  for (const [index, hook] of hooks.entries()) {
    // Parsed hooks carry a reserved id only when the parse allowed it (either option).
    const environmentHook = (options.allowEnvironmentIds === true || options.allowMarkedEnvironmentHooks === true) && isEnvHookId(hook.id);
    const issues = (hook.webhook?.allowedEnvVars ?? []).flatMap((variable, i) => {
      const problem = templateSourceProblem(variable, { pattern, environmentHook });
      return problem ? [{ path: `webhook.allowedEnvVars[${i}]`, message: problem }] : [];
    });
    if (issues.length > 0) throw new HookConfigError(hook.id, index, issues);
  }
}
