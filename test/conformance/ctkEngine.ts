import { jcsSha256Identity, type ApprovalRequest, type ApprovalResolution, type JsonValue } from '../../src/intercept/index.ts';
import { deepEqual } from './miniSchema.ts';

/**
 * The CTK engine semantics (RUNNER.md, HARNESS.md): dotted-path lookup,
 * scripted interceptors and resolvers, capability skips, and the `expect`
 * assertion pass. Everything here is driven by the vector grammar alone.
 */

export type Json = JsonValue;
export type JsonObj = { [key: string]: Json };
export type Vector = JsonObj & { id: string; title: string; expect: JsonObj; scenario: JsonObj };

export function isObj(v: unknown): v is JsonObj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Resolve `a.b[0].c` against `root`; undefined when any step is missing. */
export function lookup(root: unknown, dotted: string): unknown {
  let cur: unknown = root;
  const tokens = dotted.match(/[^.[\]]+|\[\d+\]/g) ?? [];
  for (const t of tokens) {
    if (t.startsWith('[')) {
      const i = Number(t.slice(1, -1));
      if (!Array.isArray(cur) || i >= cur.length) return undefined;
      cur = cur[i];
    } else {
      if (!isObj(cur) || !(t in cur)) return undefined;
      cur = cur[t];
    }
    if (cur === undefined) return undefined;
  }
  return cur;
}

function matches(ctx: unknown, predicates: unknown): boolean {
  if (!isObj(predicates)) return true;
  return Object.entries(predicates).every(([path, want]) => {
    const got = lookup(ctx, path);
    return got !== undefined && deepEqual(got, want);
  });
}

export class ScriptedFault extends Error {
  constructor(what: string) {
    super(`ctk scripted fault: ${what}`);
    this.name = 'ScriptedFault';
  }
}

/** First matching rule wins; no match allows. Faults: raise, malformed_verdict, mutate. */
export function scriptedIntercept(rules: readonly Json[], ctx: JsonObj): unknown {
  for (const rule of rules) {
    if (!isObj(rule) || rule.at !== ctx.interception_point || !matches(ctx, rule.match)) continue;
    switch (rule.fault) {
      case 'raise':
        throw new ScriptedFault('raise');
      case 'malformed_verdict':
        return { decision: 'transform' }; // fails the verdict gate: transform without a body
      case 'mutate':
        // Copy isolation: tamper with the received copy in place, then allow.
        ctx.target = 'TAMPERED';
        if (isObj(ctx.tool_call)) ctx.tool_call.args = { tampered: true };
        return { decision: 'allow', reason: 'ctk:mutated' };
      default:
        return rule.return ?? { decision: 'allow' };
    }
  }
  return { decision: 'allow' };
}

/** Evaluate `approval_script` against the request context; no match is `unresolved`. */
export function scriptedResolve(rules: readonly Json[], request: ApprovalRequest): ApprovalResolution {
  for (const rule of rules) {
    if (!isObj(rule) || !matches(request.context, rule.match)) continue;
    const r = isObj(rule.resolve) ? rule.resolve : {};
    if (r.fault === 'raise') throw new ScriptedFault('raise');
    let identity: string | null = request.context_identity;
    if (r.echo_recomputed === true) {
      try {
        identity = jcsSha256Identity(request.context);
      } catch {
        identity = '';
      }
    } else if (typeof r.identity_override === 'string') {
      identity = r.identity_override;
    }
    const out: ApprovalResolution = { outcome: r.outcome as ApprovalResolution['outcome'], context_identity: identity };
    if (r.verdict !== undefined) out.verdict = r.verdict;
    return out;
  }
  return { outcome: 'unresolved', context_identity: request.context_identity };
}

/** The capabilities a vector needs that the harness did not declare. */
export function missingCapabilities(vector: Vector, declared: readonly string[]): string[] {
  const needed = Array.isArray(vector.capabilities) ? (vector.capabilities as string[]) : [];
  return needed.filter((c) => !declared.includes(c));
}

export type RunRecord = {
  outcome: 'completed' | 'blocked' | 'error';
  final_output: Json;
  tool_invocations: Json[];
  identities: Array<{ input_identity: string | null; enforced_identity: string | null }>;
  records: Json[];
  postures: Record<string, string>;
  /** HARNESS.md "Incremental mediation": the caller-visible content the host egressed, in order. */
  released_output?: string;
  /** A serialization of every durable incorporation the host made (history, session stores). */
  persisted?: string;
};

const POSTURE_DEFAULTS: Record<string, string> = { tool_seam_host_error: 'continue' };

function show(v: unknown): string {
  return JSON.stringify(v) ?? 'undefined';
}

function assertInterceptions(expect: JsonObj, recorded: readonly JsonObj[], validate: (ctx: unknown) => string | null, out: string[]): void {
  const expected = Array.isArray(expect.interceptions) ? (expect.interceptions as JsonObj[]) : [];
  const strict = expect.sequence_strict !== false;
  const points = recorded.map((c) => c.interception_point);
  const pairs: Array<[JsonObj, JsonObj]> = [];
  if (strict) {
    const want = expected.map((e) => e.interception_point);
    if (!deepEqual(points, want)) {
      out.push(`interception sequence mismatch: expected ${show(want)}, got ${show(points)}`);
      return;
    }
    expected.forEach((e, i) => pairs.push([e, recorded[i]]));
  } else {
    let ri = 0;
    for (const e of expected) {
      while (ri < recorded.length && recorded[ri].interception_point !== e.interception_point) ri++;
      if (ri >= recorded.length) {
        out.push(`expected interception point ${show(e.interception_point)} not found in sequence`);
        return;
      }
      pairs.push([e, recorded[ri++]]);
    }
  }
  for (const [e, r] of pairs) {
    const ip = String(e.interception_point);
    if (e.context_must_validate !== false) {
      const err = validate(r);
      if (err !== null) out.push(`${ip}: context fails envelope validation: ${err}`);
    }
    if (isObj(e.context)) {
      for (const [path, want] of Object.entries(e.context)) {
        const got = lookup(r, path);
        if (got === undefined) out.push(`${ip}: path ${show(path)} did not resolve`);
        else if (!deepEqual(got, want)) out.push(`${ip}: ${path} == ${show(got)}, want ${show(want)}`);
      }
    }
    const serialized = JSON.stringify(r);
    for (const n of (e.context_must_contain as string[] | undefined) ?? []) {
      if (!serialized.includes(n)) out.push(`${ip}: context does not contain ${show(n)} in any form`);
    }
    for (const n of (e.context_must_not_contain as string[] | undefined) ?? []) {
      if (serialized.includes(n)) out.push(`${ip}: context contains ${show(n)}, which MUST NOT surface here`);
    }
  }
  for (const name of (expect.interceptions_absent as string[] | undefined) ?? []) {
    if (points.includes(name)) out.push(`interception point ${show(name)} was emitted but MUST be absent`);
  }
}

function expectedOutcome(expect: JsonObj, rr: RunRecord, out: string[]): string {
  const base = String(expect.run_outcome);
  const by = expect.run_outcome_by_posture;
  if (!isObj(by)) return base;
  const posture = String(by.posture);
  const def = POSTURE_DEFAULTS[posture];
  if (def === undefined) {
    out.push(`run_outcome_by_posture names unknown posture ${show(posture)}`);
    return base;
  }
  const outcomes = isObj(by.outcomes) ? by.outcomes : {};
  if (outcomes[def] !== base) out.push(`vector error: run_outcome_by_posture.outcomes.${def} must equal run_outcome ${show(base)}`);
  const declared = rr.postures[posture] ?? def;
  const o = outcomes[declared];
  if (typeof o !== 'string') {
    out.push(`declared posture ${posture}=${declared} has no outcome in run_outcome_by_posture`);
    return base;
  }
  return o;
}

function assertRun(expect: JsonObj, rr: RunRecord, out: string[]): void {
  const want = expectedOutcome(expect, rr, out);
  if (rr.outcome !== want) out.push(`run_outcome == ${show(rr.outcome)}, want ${show(want)}`);
  if ('final_output' in expect && !deepEqual(rr.final_output, expect.final_output)) {
    out.push(`final_output == ${show(rr.final_output)}, want ${show(expect.final_output)}`);
  }
  if (Array.isArray(expect.tool_invocations) && !deepEqual(rr.tool_invocations, expect.tool_invocations)) {
    out.push(`tool_invocations == ${show(rr.tool_invocations)}, want ${show(expect.tool_invocations)}`);
  }
  if ('released_output' in expect && rr.released_output !== expect.released_output) {
    out.push(`released_output == ${show(rr.released_output)}, want ${show(expect.released_output)}`);
  }
  for (const n of (expect.persisted_must_not_contain as string[] | undefined) ?? []) {
    if ((rr.persisted ?? '').includes(n)) out.push(`persisted state contains ${show(n)}, which MUST NOT become durable`);
  }
  for (const name of (expect.tool_not_invoked as string[] | undefined) ?? []) {
    if (rr.tool_invocations.some((t) => isObj(t) && t.name === name)) out.push(`tool ${show(name)} was invoked but MUST NOT be`);
  }
}

function assertIdentities(expect: JsonObj, rr: RunRecord, out: string[]): void {
  if (typeof expect.identities_equal !== 'boolean') return;
  if (rr.identities.length === 0) {
    out.push('expect.identities_equal is set but the harness reported no identities');
    return;
  }
  const differ = rr.identities.flatMap((p, i) => (p.input_identity === p.enforced_identity ? [] : [i]));
  if (expect.identities_equal && differ.length > 0) out.push(`identities_equal: input != enforced at emissions ${show(differ)}`);
  if (!expect.identities_equal && differ.length === 0) out.push('identities_equal: expected input != enforced at some emission, but all pairs are equal');
}

function assertRecords(expect: JsonObj, rr: RunRecord, out: string[]): void {
  if (!Array.isArray(expect.records)) return;
  if (rr.records.length === 0) {
    out.push('expect.records is set but the harness reported no records');
    return;
  }
  let ri = 0;
  for (const e of expect.records as JsonObj[]) {
    const ip = e.interception_point;
    while (ri < rr.records.length && lookup(rr.records[ri], 'interception_point') !== ip) ri++;
    if (ri >= rr.records.length) {
      out.push(`expected record for ${show(ip)} not found in order`);
      return;
    }
    const rec = rr.records[ri];
    for (const [path, want] of Object.entries(isObj(e.assert) ? e.assert : {})) {
      const got = lookup(rec, path);
      if (got === undefined) out.push(`record[${ri}] ${String(ip)}: path ${show(path)} did not resolve`);
      else if (!deepEqual(got, want)) out.push(`record[${ri}] ${String(ip)}: ${path} == ${show(got)}, want ${show(want)}`);
    }
    for (const path of (e.absent as string[] | undefined) ?? []) {
      const got = lookup(rec, path);
      if (got !== undefined) out.push(`record[${ri}] ${String(ip)}: ${path} present (${show(got)}), want absent`);
    }
    for (const path of (e.present as string[] | undefined) ?? []) {
      if (lookup(rec, path) === undefined) out.push(`record[${ri}] ${String(ip)}: ${path} absent, want present`);
    }
    ri++;
  }
}

function assertSequence(recorded: readonly JsonObj[], out: string[]): void {
  const seq = recorded.map((c) => c.sequence);
  const strictlyIncreasing = seq.every((n, i) => typeof n === 'number' && (i === 0 || n > (seq[i - 1] as number)));
  if (!strictlyIncreasing) out.push(`sequence not strictly increasing: ${show(seq)}`);
}

/** Run every `expect` assertion; returns the failures (empty means pass). */
export function assertVector(vector: Vector, recorded: readonly JsonObj[], rr: RunRecord, validateContext: (ctx: unknown) => string | null): string[] {
  const out: string[] = [];
  assertInterceptions(vector.expect, recorded, validateContext, out);
  assertRun(vector.expect, rr, out);
  assertRecords(vector.expect, rr, out);
  assertSequence(recorded, out);
  assertIdentities(vector.expect, rr, out);
  return out;
}
