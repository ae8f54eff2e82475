import type {
  AgentContext,
  CompositionConfig,
  EnforcementMode,
  InterceptionPoint,
  InterceptionRecord,
  Verdict,
  VerdictSummary,
} from '../contract/agentHooks.ts';
import { sanitizeStorableValue } from '../contract/storableText.ts';
import { isSequential } from './composition.ts';
import { projectVerdict } from './projection.ts';
import { isPermit } from './verdict.ts';
import { isObject } from '../util/isObject.ts';

export type RecordParts = {
  point: InterceptionPoint;
  mode: EnforcementMode;
  combined: Verdict;
  inputIdentity: string | null;
  enforcedIdentity: string | null;
  identityProvider: string | null;
  sessionId: string;
  sequence: number;
  context: Partial<AgentContext> | undefined;
  decidedBy: number | null;
  composition: CompositionConfig;
  verdicts: VerdictSummary[];
  interceptorsRegistered: number;
  resolvedBy: 'approval' | 'rejection' | undefined;
};

/**
 * The interception record: payload-free (the verdict is projected), self-describing
 * (profile and resolved knobs), and legible about skips: `verdicts`,
 * `fold_truncated` and `interceptors_registered` show who never ran.
 */
export function buildRecord(p: RecordParts): InterceptionRecord {
  const record: InterceptionRecord = {
    interception_point: p.point,
    mode: p.mode,
    verdict: projectVerdict(p.combined),
    input_identity: p.inputIdentity,
    enforced_identity: p.enforcedIdentity,
    identity_provider: p.identityProvider,
    session_id: p.sessionId,
    sequence: p.sequence,
    decided_by: p.decidedBy,
    composition: { ...p.composition },
    verdicts: p.verdicts,
    interceptors_registered: p.interceptorsRegistered,
  };
  const ts = p.context?.timestamp;
  if (typeof ts === 'string') record.timestamp = ts;
  const trace = traceOf(p.context);
  if (trace !== undefined) record.trace = trace;
  if (isSequential(p.composition.profile)) record.fold_truncated = p.verdicts.length < p.interceptorsRegistered;
  if (p.resolvedBy !== undefined) record.resolved_by = p.resolvedBy;
  // I1: reasons and messages come from interceptors and receivers; a `\u0000` in one made the
  // sink's INSERT fail and the record was lost. Sanitised like response excerpts (U+FFFD).
  return sanitizeStorableValue(record);
}

function traceOf(ctx: Partial<AgentContext> | undefined): InterceptionRecord['trace'] {
  const t: unknown = ctx?.trace;
  if (!isObject(t)) return undefined;
  const out: { trace_id?: string; span_id?: string } = {};
  const { trace_id, span_id } = t as Record<string, unknown>;
  if (typeof trace_id === 'string') out.trace_id = trace_id;
  if (typeof span_id === 'string') out.span_id = span_id;
  return Object.keys(out).length > 0 ? out : undefined;
}

/** Whether the guarded action executes under this record. */
export function proceeds(record: InterceptionRecord): boolean {
  return record.mode === 'evaluate_only' || isPermit(record.verdict as Verdict);
}
