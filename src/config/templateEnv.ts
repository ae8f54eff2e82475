/**
 * W2: the one place `HOOKRELAY_TEMPLATE_ENV` is resolved, so every entry (dispatcher, producer,
 * operation store, remote interceptor, the lazy entry, the worker) gets the same default: an
 * explicit `templateEnv` option wins, then the configured value, then `DEFAULT_TEMPLATE_ENV`
 * (`none`: no template resolves until the operator lists names or a pattern). An invalid value
 * throws a `TemplateEnvPatternError` naming the variable, never the text.
 */
import { parseTemplateEnvPattern, TEMPLATE_ENV_VARIABLE, type TemplateEnvPattern } from '../contract/templateSources.ts';

/** Anything carrying the setting: an environment record, or the parsed settings. */
export type TemplateEnvSource = { readonly [TEMPLATE_ENV_VARIABLE]?: string | undefined };

export function resolveTemplateEnv(explicit: string | undefined, source: TemplateEnvSource): TemplateEnvPattern {
  return parseTemplateEnvPattern(explicit ?? source[TEMPLATE_ENV_VARIABLE]);
}
