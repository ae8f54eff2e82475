import type { InterceptionRecord, Verdict } from '../contract/agentHooks.ts';
import { HookrelayError } from '../contract/hookrelayError.ts';

/**
 * Thrown by `emit()` when the combined verdict blocks the guarded action (§6).
 * `record` is the payload-free record; `verdict` is the full combined verdict,
 * available in-process only (§10.3).
 */
export class InterceptionBlocked extends HookrelayError {
  readonly code = 'HOOKRELAY_INTERCEPTION_BLOCKED' as const;
  readonly record: InterceptionRecord;
  readonly verdict: Verdict;

  constructor(record: InterceptionRecord, verdict: Verdict) {
    super(`${record.interception_point} blocked: ${record.verdict.decision} (${record.verdict.reason ?? 'no reason'})`);
    this.name = 'InterceptionBlocked';
    this.record = record;
    this.verdict = verdict;
  }
}
