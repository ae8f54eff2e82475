import { z } from 'zod';
import { resolveConfig } from '../config/resolveConfig.ts';
import type { AgentContext, Verdict } from '../contract/agentHooks.ts';
import { ENV_VAR_NAME_TOO_LONG_MESSAGE, MAX_ENV_VAR_NAME_LENGTH, reservedTemplateSourceProblem, templateSourceProblem } from '../contract/templateSources.ts';
import {
  checkWebhookUrl,
  ENV_VAR_NAME,
  hasMalformedTemplate,
  hasUnsafeHeaderValue,
  headerNameProblem,
  MALFORMED_TEMPLATE_MESSAGE,
  MAX_TIMEOUT_SECONDS,
  templateNames,
  UNSAFE_HEADER_VALUE_MESSAGE,
} from '../contract/webhook.ts';
import type { Interceptor } from '../intercept/interceptor.ts';
import { DEFAULT_TIMEOUT_MS } from '../intercept/timeouts.ts';
import { DeliveryConfigError, RemoteInterceptorError, HookConfigError } from '../contract/errors.ts';
import { FetchTransport } from './fetchTransport.ts';
import { resolvedTemplateValues } from './attemptEvidence.ts';
import { resolveHeaderTemplates } from './headerTemplates.ts';
import { redactSecretsDeep } from './secretRedaction.ts';
import { resolveWebhookUrl } from './resolveUrl.ts';
import { parseSigningSecrets, signatureHeaders } from './signing.ts';
import { parseJsonLossless } from '../intercept/json/losslessJson.ts';
import { isObject } from '../util/isObject.ts';

/** I3: the response cap of a remote verdict, as for decision webhooks. */
const MAX_VERDICT_RESPONSE_BYTES = 65_536;
/** The transport deadline trails the interceptor's own bound, so the emitter reports `interceptor_timeout`. */
const TRANSPORT_GRACE_MS = 1_000;
const MAX_TRANSPORT_MS = 2_147_483_647;

/** Configured like a webhook (I3): url, headers with `${VAR}` templates, allowedEnvVars, timeout. */
export const RemoteInterceptorConfigSchema = z
  .strictObject({
    url: z.string().superRefine((url, ctx) => {
      const problem = checkWebhookUrl(url);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
    name: z.string().optional(),
    headers: z.record(z.string(), z.string()).optional(),
    allowedEnvVars: z.array(z.string().max(MAX_ENV_VAR_NAME_LENGTH, { message: ENV_VAR_NAME_TOO_LONG_MESSAGE }).regex(ENV_VAR_NAME)).optional(),
    /** Milliseconds; default the contract's 5,000; `null` disables. */
    timeoutMs: z.number().positive().finite().nullable().optional(),
    /** Seconds, as in a webhook config (W1); an alternative to `timeoutMs`. */
    timeout: z.number().positive().max(MAX_TIMEOUT_SECONDS).optional(),
  })
  .superRefine((c, ctx) => {
    if (c.timeout !== undefined && c.timeoutMs !== undefined)
      ctx.addIssue({ code: 'custom', path: ['timeout'], message: 'give timeout (seconds) or timeoutMs, not both' });
    const allowed = new Set(c.allowedEnvVars ?? []);
    for (const [index, v] of (c.allowedEnvVars ?? []).entries()) {
      const reserved = reservedTemplateSourceProblem(v);
      if (reserved) ctx.addIssue({ code: 'custom', path: ['allowedEnvVars', index], message: reserved });
    }
    for (const [name, value] of Object.entries(c.headers ?? {})) {
      const nameProblem = headerNameProblem(name);
      if (nameProblem) ctx.addIssue({ code: 'custom', path: ['headers', name], message: nameProblem });
      if (hasUnsafeHeaderValue(value)) ctx.addIssue({ code: 'custom', path: ['headers', name], message: UNSAFE_HEADER_VALUE_MESSAGE });
      // The text of a malformed template may be a pasted secret: never echoed.
      if (hasMalformedTemplate(value)) ctx.addIssue({ code: 'custom', path: ['headers', name], message: MALFORMED_TEMPLATE_MESSAGE });
      for (const v of templateNames(value)) {
        if (!ENV_VAR_NAME.test(v)) continue; // reported above
        if (reservedTemplateSourceProblem(v))
          ctx.addIssue({ code: 'custom', path: ['headers', name], message: `template: ${reservedTemplateSourceProblem(v)}` });
        else if (!allowed.has(v)) ctx.addIssue({ code: 'custom', path: ['headers', name], message: `template \${${v}} is not listed in allowedEnvVars` });
      }
    }
  });
export type RemoteInterceptorConfig = z.input<typeof RemoteInterceptorConfigSchema>;

export type RemoteInterceptorDeps = {
  /** Default: a transport of its own, guarded with `env.HOOKRELAY_ALLOWED_CIDRS` (read now). */
  fetchTransport?: FetchTransport;
  /** Where templates and HOOKRELAY_SIGNING_SECRETS are read from, at send time (W2). Default `process.env`. */
  env?: Record<string, string | undefined>;
  /** W2: the operator's allow pattern; default `env.HOOKRELAY_TEMPLATE_ENV` (read now), else `none`. */
  templateEnv?: string;
  /** Base for a relative `url`; default `env.APP_URL`. */
  appUrl?: string;
};

/**
 * I3: an interceptor that POSTs the AgentContext JSON to an endpoint through the delivery
 * transport (SSRF guard, templates, capped read, signing; `webhook-id` = `<session.id>-<sequence>`)
 * and returns the bare verdict object it reads. The emitter applies the verdict gate to it, so a
 * JSON answer that fails the gate is `verdict_invalid`; a non-2xx, network error, oversize or
 * non-JSON body throws (`interceptor_failed`); its own bound expiring is `interceptor_timeout`.
 */
export function createRemoteInterceptor(config: RemoteInterceptorConfig, options: RemoteInterceptorDeps = {}): Interceptor {
  // A typed HookConfigError naming each field (and variable names, never values), as `register` throws.
  const label = { id: typeof (config as { name?: unknown })?.name === 'string' ? (config as { name: string }).name : 'remote' };
  const result = RemoteInterceptorConfigSchema.safeParse(config);
  if (!result.success) throw HookConfigError.fromZod(label, undefined, result.error);
  const parsed = result.data;
  // Resolved once, with the settings schema; only templates and signing secrets stay live (W2).
  const resolved = resolveConfig(['HOOKRELAY_TEMPLATE_ENV', 'APP_URL', 'HOOKRELAY_ALLOWED_CIDRS'], { env: options.env, templateEnv: options.templateEnv });
  const env = resolved.env;
  const settings = resolved.settings;
  const templateEnv = resolved.templateEnv;
  const sourceIssues = (parsed.allowedEnvVars ?? []).flatMap((variable, i) => {
    const problem = templateSourceProblem(variable, { pattern: templateEnv });
    return problem ? [{ path: `allowedEnvVars[${i}]`, message: problem }] : [];
  });
  if (sourceIssues.length > 0) throw new HookConfigError(label.id, undefined, sourceIssues);
  const deps = {
    env,
    appUrl: options.appUrl ?? settings.APP_URL,
    fetchTransport: options.fetchTransport ?? new FetchTransport({ allowedCidrs: settings.HOOKRELAY_ALLOWED_CIDRS }),
  };
  const timeoutMs = parsed.timeout !== undefined ? Math.ceil(parsed.timeout * 1000) : parsed.timeoutMs === undefined ? DEFAULT_TIMEOUT_MS : parsed.timeoutMs;
  const transportMs = timeoutMs === null ? MAX_TRANSPORT_MS : Math.min(MAX_TRANSPORT_MS, timeoutMs + TRANSPORT_GRACE_MS);
  return {
    name: parsed.name ?? 'remote',
    timeoutMs,
    async intercept(ctx: AgentContext, { signal }) {
      let url: string;
      let trusted: boolean;
      let headers: Record<string, string>;
      try {
        ({ url, trusted } = resolveWebhookUrl(parsed.url, deps.appUrl));
        headers = resolveHeaderTemplates(parsed.headers, parsed.allowedEnvVars, deps.env, { templateEnv });
      } catch (error) {
        if (error instanceof DeliveryConfigError) throw new RemoteInterceptorError(`configuration: ${error.message}`);
        throw error;
      }
      const body = JSON.stringify(ctx);
      const id = `${ctx.session.id}-${ctx.sequence}`;
      const signed = {
        ...headers,
        ...signatureHeaders({ id, timestampSeconds: Math.floor(Date.now() / 1000), body, secrets: parseSigningSecrets(deps.env.HOOKRELAY_SIGNING_SECRETS) }),
      };
      const outcome = await deps.fetchTransport.send({
        url,
        body,
        headers: signed,
        timeoutMs: transportMs,
        trusted,
        signal,
        read: { maxBytes: MAX_VERDICT_RESPONSE_BYTES },
      });
      if (outcome.kind === 'error') throw new RemoteInterceptorError(outcome.errorClass);
      if (outcome.status < 200 || outcome.status >= 300) throw new RemoteInterceptorError(`http_error: HTTP ${outcome.status}`);
      if (outcome.tooLarge) throw new RemoteInterceptorError('response_too_large');
      let text: string;
      try {
        text = new TextDecoder('utf-8', { fatal: true }).decode(outcome.body ?? new Uint8Array());
      } catch {
        throw new RemoteInterceptorError('invalid UTF-8');
      }
      try {
        // Lossless: an integer beyond 2^53 in a transform value stays exact (a bigint) and the fold
        // then fails closed as context_invalid, instead of JSON.parse rounding it silently.
        const verdict = parseJsonLossless(text) as Verdict; // unchecked wire value: the emitter's verdict gate judges it
        return withoutSecrets(verdict, resolvedTemplateValues(parsed.headers, headers, deps.env));
      } catch {
        throw new RemoteInterceptorError('the response is not JSON');
      }
    },
  };
}

/**
 * W7: reasons, messages, evidence and labels of a remote verdict are kept in records and shown to
 * operators and agents: a resolved header template value echoed in any of them is taken out.
 * `transform.value` is target content (never recorded) and is passed on as the interceptor sent it.
 */
function withoutSecrets(verdict: Verdict, secrets: readonly string[]): Verdict {
  if (secrets.length === 0 || !isObject(verdict)) return verdict;
  const { transform, ...rest } = verdict;
  const out = redactSecretsDeep(rest, secrets) as Verdict;
  if (transform !== undefined) out.transform = transform;
  return out;
}
