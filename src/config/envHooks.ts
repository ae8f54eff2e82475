import { ENV_HOOK_ID_PREFIX, HOOK_TYPES, isControlHookType, type HookType } from '../contract/hookTypes.ts';
import { checkWebhookUrl } from '../contract/webhook.ts';
import type { ParsedSerializedHook } from '../contract/hook.ts';
import { parseSerializedHooks } from '../contract/validate.ts';
import { EnvHookConfigError } from '../contract/errors.ts';

export const ENV_HOOK_VARIABLES = {
  url: 'AGENT_HOOK_WEBHOOK_URL',
  token: 'AGENT_HOOK_WEBHOOK_TOKEN',
  events: 'AGENT_HOOK_WEBHOOK_EVENTS',
  responseHandling: 'AGENT_HOOK_WEBHOOK_RESPONSE_HANDLING',
  onError: 'AGENT_HOOK_WEBHOOK_ON_ERROR',
} as const;

/** R7: values removed in favour of `toolCall`. */
const REMOVED_RESPONSE_MODES = new Set(['toolResult', 'toolCallAndResult']);

/**
 * E1–E4: the environment hooks of the current environment, one per subscribed event, id
 * `server-env-webhook:<event>`, the token kept as a `${AGENT_HOOK_WEBHOOK_TOKEN}` template.
 * Read fresh at every dispatch and evaluation; never persisted. Unset URL → [].
 */
export function loadEnvHooks(env: Record<string, string | undefined>): ParsedSerializedHook[] {
  const V = ENV_HOOK_VARIABLES;
  const url = env[V.url]?.trim() ?? '';
  if (url === '') return []; // E2: blank counts as unset
  const urlProblem = checkWebhookUrl(url);
  if (urlProblem || url.startsWith('/')) throw new EnvHookConfigError([V.url], 'must be an absolute http(s) URL without credentials');
  if ((env[V.token] ?? '').trim() === '') throw new EnvHookConfigError([V.token, V.url], 'a non-blank token is required when the URL is set');

  const rawEvents = env[V.events];
  if (rawEvents === undefined || rawEvents.trim() === '')
    throw new EnvHookConfigError([V.events, V.url], 'the subscribed events are required when the URL is set');
  const events = [
    ...new Set(
      rawEvents
        .split(',')
        .map((e) => e.trim())
        .filter((e) => e !== ''),
    ),
  ];
  if (events.length === 0) throw new EnvHookConfigError([V.events], 'no event listed');
  const unknown = events.filter((e) => !(HOOK_TYPES as readonly string[]).includes(e));
  if (unknown.length > 0)
    throw new EnvHookConfigError([V.events], `unknown hook type(s); use ${HOOK_TYPES.length} known types such as beforeToolCall, onComplete`);

  const mode = env[V.responseHandling]?.trim() || 'ignore';
  if (REMOVED_RESPONSE_MODES.has(mode)) throw new EnvHookConfigError([V.responseHandling], "this mode was removed; use 'toolCall'");
  if (mode !== 'ignore' && mode !== 'toolCall') throw new EnvHookConfigError([V.responseHandling], "must be 'ignore' or 'toolCall'");
  const onError = env[V.onError]?.trim() || 'continue';
  if (onError !== 'continue' && onError !== 'block') throw new EnvHookConfigError([V.onError], "must be 'continue' or 'block'");
  if (onError === 'block' && mode !== 'toolCall')
    throw new EnvHookConfigError([V.onError, V.responseHandling], "'block' requires response handling 'toolCall'");
  if (mode === 'toolCall' && !events.some(isControlHookType)) {
    throw new EnvHookConfigError([V.responseHandling, V.events], "'toolCall' requires beforeToolCall or afterToolCall in the events");
  }

  const hooks = (events as HookType[]).map((type) => {
    const control = mode === 'toolCall' && isControlHookType(type);
    return {
      id: `${ENV_HOOK_ID_PREFIX}${type}`,
      type,
      webhook: {
        url,
        delivery: 'fetch',
        headers: { authorization: `Bearer \${${V.token}}` },
        allowedEnvVars: [V.token],
        responseHandling: control ? 'toolCall' : 'ignore',
        onError: control ? onError : 'continue',
      },
    };
  });
  return parseSerializedHooks(hooks, { allowEnvironmentIds: true });
}
