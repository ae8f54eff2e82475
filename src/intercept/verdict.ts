import { WireVerdictSchema, type Evidence, type HostErrorReason, type JsonValue, type Verdict as VerdictShape, type Warning } from '../contract/agentHooks.ts';
import { canonicalizeJcs, findDomainViolation } from './json/canonicalJson.ts';
import { parseTransformPath } from './path.ts';
import { HostError, isReservedReason } from './reasons.ts';
import { withDefined } from '../util/withDefined.ts';
import { isObject } from '../util/isObject.ts';

/** Cap on the UTF-8 length of the canonical `evidence` member. */
export const EVIDENCE_MAX_BYTES = 10240;

/** An AGENT-HOOKS-0.1 verdict. The wire has exactly three decisions: allow, deny, transform. */
export type Verdict = VerdictShape;

/** Optional members the constructor sugar accepts beside reason/message. */
export type VerdictOptions = {
  reason?: string;
  message?: string;
  warnings?: Warning[];
  evidence?: Evidence;
  result_labels?: string[];
};

type ReasonArg = string | VerdictOptions | undefined;

function options(reasonOrOptions: ReasonArg, message?: string): VerdictOptions {
  if (typeof reasonOrOptions === 'string') return { reason: reasonOrOptions, message };
  return { ...(reasonOrOptions ?? {}), ...withDefined({ message }) };
}

function build(decision: Verdict['decision'], opts: VerdictOptions): Verdict {
  const v: Verdict = { decision };
  if (opts.reason !== undefined) v.reason = opts.reason;
  if (opts.message !== undefined) v.message = opts.message;
  if (opts.warnings !== undefined) v.warnings = opts.warnings;
  if (opts.evidence !== undefined) v.evidence = opts.evidence;
  if (opts.result_labels !== undefined) v.result_labels = opts.result_labels;
  return v;
}

/**
 * Constructor sugar. `warn` is an `allow` carrying one warning and
 * `escalate` a `deny` with an empty `approval` block: neither is a wire decision.
 * Each accepts `(reason?, message?)` or an options object.
 */
export const Verdict = Object.freeze({
  allow(opts: VerdictOptions = {}): Verdict {
    return build('allow', opts);
  },
  warn(reasonOrOptions?: ReasonArg, message?: string): Verdict {
    const { reason, message: msg, ...rest } = options(reasonOrOptions, message);
    const warning: Warning = {};
    if (reason !== undefined) warning.reason = reason;
    if (msg !== undefined) warning.message = msg;
    return build('allow', { ...rest, warnings: [...(rest.warnings ?? []), warning] });
  },
  deny(reasonOrOptions?: ReasonArg, message?: string): Verdict {
    return build('deny', options(reasonOrOptions, message));
  },
  escalate(reasonOrOptions?: ReasonArg, message?: string): Verdict {
    return { ...build('deny', options(reasonOrOptions, message)), approval: {} };
  },
  transform(path: string, value: JsonValue, opts: VerdictOptions = {}): Verdict {
    return { ...build('transform', opts), transform: { path, value } };
  },
});

/** The trivial permit verdict. */
export const ALLOW: Readonly<Verdict> = Object.freeze({ decision: 'allow' as const });

export function isPermit(v: Verdict): boolean {
  return v.decision === 'allow' || v.decision === 'transform';
}

/** A deny carrying an `approval` block: liftable by the approval seam. */
export function isLiftable(v: Verdict): boolean {
  return v.decision === 'deny' && v.approval !== undefined;
}

/** Total order used by aggregation: deny > deny+approval > transform > allow. */
export function severity(v: Verdict): number {
  if (v.decision === 'deny') return isLiftable(v) ? 2 : 3;
  return v.decision === 'transform' ? 1 : 0;
}

/** A host-synthesized deny; `liftable` marks the parallel profiles' "approval" knob shape. */
export function hostErrorVerdict(reason: HostErrorReason, message?: string, liftable = false): Verdict {
  const v: Verdict = { decision: 'deny', reason };
  if (message !== undefined) v.message = message;
  if (liftable) v.approval = {};
  return v;
}

export function isHostSynthesized(v: Verdict): boolean {
  return isReservedReason(v.reason);
}

export type WireVerdictResult = { ok: true; verdict: Verdict } | { ok: false; reason: HostErrorReason; detail: string };

function invalid(detail: string, reason: HostErrorReason = HostError.VerdictInvalid): WireVerdictResult {
  return { ok: false, reason, detail };
}

/**
 * The verdict gate: validate a raw (wire) verdict and normalize it (null members
 * are absent). Failures map to reserved reasons: a non-JSON value is
 * `interceptor_failed`, a path not rooted at `$target` is
 * `transform_target_forbidden`, any other path grammar error is
 * `transform_invalid`, and every other violation is `verdict_invalid`.
 */
export function parseWireVerdict(raw: unknown): WireVerdictResult {
  if (!isObject(raw)) {
    return invalid('verdict must be a JSON object');
  }
  const domain = findDomainViolation(raw, undefined, 'json');
  if (domain !== null) return invalid(`verdict is not a JSON value: ${domain}`, HostError.InterceptorFailed);
  const parsed = WireVerdictSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return invalid(`verdict.${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`);
  }
  const w = parsed.data;
  if (isReservedReason(w.reason ?? undefined)) return invalid("verdict.reason MUST NOT start with 'host_error:'");
  const v: Verdict = { decision: w.decision };
  if (w.reason != null) v.reason = w.reason;
  if (w.message != null) v.message = w.message;
  if (w.warnings != null) {
    v.warnings = [];
    for (const raw of w.warnings) {
      if (isReservedReason(raw.reason ?? undefined)) return invalid("warnings[].reason MUST NOT start with 'host_error:'");
      const warning: Warning = {};
      if (raw.reason != null) warning.reason = raw.reason;
      if (raw.message != null) warning.message = raw.message;
      v.warnings.push(warning);
    }
  }
  if (w.approval != null) {
    if (w.decision !== 'deny') return invalid('approval block permitted only on deny');
    v.approval = w.approval;
  }
  if (w.transform != null) {
    const path = parseTransformPath(w.transform.path);
    if (!path.ok) return invalid(path.detail, path.reason);
    // An absent value is equivalent to null.
    v.transform = { path: w.transform.path, value: w.transform.value ?? null };
  }
  if (w.decision === 'transform' && v.transform === undefined) return invalid("transform body REQUIRED when decision is 'transform'");
  if (w.decision !== 'transform' && v.transform !== undefined) return invalid("transform body FORBIDDEN unless decision is 'transform'");
  if (w.evidence != null) {
    const evidence: Evidence = {};
    if (w.evidence.artefact !== undefined) evidence.artefact = w.evidence.artefact;
    if (w.evidence.verification_pointers != null) evidence.verification_pointers = w.evidence.verification_pointers;
    let size: number;
    try {
      size = Buffer.byteLength(canonicalizeJcs(evidence), 'utf8');
    } catch {
      return invalid('evidence is outside the I-JSON domain');
    }
    if (size > EVIDENCE_MAX_BYTES) return invalid(`evidence canonical size exceeds ${EVIDENCE_MAX_BYTES} bytes`);
    v.evidence = evidence;
  }
  if (w.result_labels != null) v.result_labels = w.result_labels;
  return { ok: true, verdict: v };
}
