import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  parseJsonLossless,
  validateEnvelope,
  type Verdict,
  type ApprovalResolver,
  type CompositionConfig,
  type EnforcementMode,
  type Interceptor,
} from '../../src/intercept/index.ts';
import { assertVector, isObj, missingCapabilities, scriptedIntercept, scriptedResolve, type Json, type JsonObj, type Vector } from './ctkEngine.ts';
import { SchemaRegistry, type Schema } from './miniSchema.ts';
import { HOST_SURFACES, TOOL_SEAM_HOST_ERROR, runScenario, type HostSurface } from './adapterHost.ts';

/**
 * I2: the AGENT-HOOKS-0.1 conformance runner. Runs every vector in a directory through the run
 * adapter (`adapterHost.ts`, the product's `createAgentHooks().startRun()`) on the first
 * declared host surface that has the vector's capabilities, and reports one line per vector:
 * `pass <id>`, `skip <id> <capability>` or `fail <id> <why>`, a pass/fail/skip line per `part`
 * (the conformance report), then `ctk: P passed, F failed, S skipped`. Skips come only from
 * capabilities no surface declares (RUNNER.md step 1). Vectors are read with a lossless JSON
 * parser, so an integer beyond 2^53 reaches the host exact (as a bigint), never rounded.
 */

const HERE = dirname(fileURLToPath(import.meta.url));
export const FIXTURES_DIR = join(HERE, 'fixtures');
export const DEFAULT_VECTORS_DIR = join(FIXTURES_DIR, 'vectors');
export const OWN_VECTORS_DIR = join(HERE, 'own');

export type VectorResult = { id: string; part: string; status: 'pass' | 'fail' | 'skip'; detail: string };

function readJson(path: string): unknown {
  return parseJsonLossless(readFileSync(path, 'utf8'));
}

let registry: { reg: SchemaRegistry; schema: Schema } | undefined;

/** Structural check of a vector against `vectors.schema.json` (and the spec schemas it references). */
export function validateVector(vector: unknown): string | null {
  if (registry === undefined) {
    const reg = new SchemaRegistry();
    for (const f of readdirSync(join(FIXTURES_DIR, 'schema'))) reg.add(readJson(join(FIXTURES_DIR, 'schema', f)) as Schema);
    registry = { reg, schema: readJson(join(FIXTURES_DIR, 'vectors.schema.json')) as Schema };
  }
  return registry.reg.validate(registry.schema, vector);
}

/** Vector files (`AH-CTK-*.json`) of a directory, in name order. */
export function loadVectors(dir: string): Array<{ file: string; vector: unknown }> {
  const files = readdirSync(dir)
    .filter((f) => /^AH-CTK-.*\.json$/.test(f))
    .sort();
  // An empty set would report vacuous conformance: fail loudly.
  if (files.length === 0) throw new Error(`no AH-CTK-*.json vectors found in ${dir}`);
  return files.map((file) => ({ file, vector: readJson(join(dir, file)) }));
}

function contextValidator(ctx: unknown): string | null {
  const r = validateEnvelope(ctx);
  return r.ok ? null : r.detail;
}

/** RUNNER.md steps 1–5 for one vector. */
export async function runVector(raw: unknown, file = '?'): Promise<VectorResult> {
  const id = isObj(raw) && typeof raw.id === 'string' ? raw.id : file;
  const part = isObj(raw) && typeof raw.part === 'string' ? raw.part : '';
  const invalid = validateVector(raw);
  if (invalid !== null) return { id, part, status: 'fail', detail: `invalid vector: ${invalid}` };
  const vector = raw as Vector;

  const surface: HostSurface | undefined = HOST_SURFACES.find((h) => missingCapabilities(vector, h.capabilities).length === 0);
  if (surface === undefined) return { id, part, status: 'skip', detail: missingCapabilities(vector, HOST_SURFACES[0].capabilities).join(',') };

  const scripts = (Array.isArray(vector.interceptor_scripts) ? vector.interceptor_scripts : [vector.interceptor_script]) as Json[][];
  const recorded: JsonObj[] = [];
  const interceptors: Interceptor[] = scripts.map((rules, i) => (ctx) => {
    // Only the first interceptor records: expectations describe emissions as it saw them.
    if (i === 0) recorded.push(structuredClone(ctx) as JsonObj);
    return scriptedIntercept(rules, ctx as JsonObj) as Verdict; // raw script output: the emitter's verdict gate judges it
  });
  const approval = Array.isArray(vector.approval_script) ? vector.approval_script : [];
  const resolver: ApprovalResolver | null = approval.length > 0 ? (req) => scriptedResolve(approval, req) : null;

  let rr;
  try {
    rr = await runScenario({
      surface,
      scenario: vector.scenario,
      interceptors,
      resolver,
      mode: (vector.mode ?? 'enforce') as EnforcementMode,
      composition: (vector.composition ?? { profile: 'sequential/first_deny', on_approval: 'stop' }) as CompositionConfig,
      identityProvider: 'identity_provider' in vector ? (vector.identity_provider as 'jcs-sha256' | 'ctk-fault' | null) : 'jcs-sha256',
      redactForApproval: Array.isArray(vector.redact_for_approval) ? (vector.redact_for_approval as string[]) : [],
    });
  } catch (err) {
    return { id, part, status: 'fail', detail: `harness run raised: ${err instanceof Error ? err.message : String(err)}` };
  }
  const failures = assertVector(vector, recorded, rr, contextValidator);
  return failures.length === 0 ? { id, part, status: 'pass', detail: '' } : { id, part, status: 'fail', detail: failures.join('; ') };
}

export type ConformanceReport = { results: VectorResult[]; passed: number; failed: number; skipped: number };

/** Run every vector in `dir`, sequentially (one fresh host per vector). */
export async function runConformance(dir: string): Promise<ConformanceReport> {
  const results: VectorResult[] = [];
  for (const { file, vector } of loadVectors(dir)) results.push(await runVector(vector, file));
  const count = (s: VectorResult['status']) => results.filter((r) => r.status === s).length;
  return { results, passed: count('pass'), failed: count('fail'), skipped: count('skip') };
}

export function formatResult(r: VectorResult): string {
  return r.status === 'pass' ? `pass ${r.id}` : `${r.status} ${r.id} ${r.detail}`;
}

export function formatSummary(report: ConformanceReport): string {
  return `ctk: ${report.passed} passed, ${report.failed} failed, ${report.skipped} skipped`;
}

/** RUNNER.md "The conformance report": pass/fail/skip per vector `part`. */
export function formatParts(report: ConformanceReport): string[] {
  const parts = new Map<string, { pass: number; fail: number; skip: number }>();
  for (const r of report.results) {
    const p = parts.get(r.part || '(none)') ?? { pass: 0, fail: 0, skip: 0 };
    p[r.status]++;
    parts.set(r.part || '(none)', p);
  }
  return [...parts].sort(([a], [b]) => a.localeCompare(b)).map(([part, c]) => `  part ${part}: ${c.pass} pass, ${c.fail} fail, ${c.skip} skip`);
}

/** `npm run conformance`: the AGENT-HOOKS-0.1 kit's vectors, then the project's own (or only `CTK_VECTORS_DIR`). */
async function main(): Promise<void> {
  const sets: Array<[string, string]> = process.env.CTK_VECTORS_DIR
    ? [[process.env.CTK_VECTORS_DIR, process.env.CTK_VECTORS_DIR]]
    : [
        ['AGENT-HOOKS-0.1 kit vectors', DEFAULT_VECTORS_DIR],
        ['own vectors', OWN_VECTORS_DIR],
      ];
  let failed = 0;
  for (const [label, dir] of sets) {
    const report = await runConformance(dir);
    for (const r of report.results) console.log(formatResult(r));
    for (const line of formatParts(report)) console.log(line);
    console.log(`${formatSummary(report)} (${label})`);
    failed += report.failed;
  }
  console.log(`surfaces: ${HOST_SURFACES.map((h) => `${h.name} {${h.capabilities.join(', ')}}`).join('; ')}; tool_seam_host_error: ${TOOL_SEAM_HOST_ERROR}`);
  process.exitCode = failed > 0 ? 1 : 0;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 2;
  });
}
