import type { ProjectedVerdict, Verdict, Warning } from '../contract/agentHooks.ts';

/** Bound on free-form text carried into a record. */
const RECORD_MESSAGE_MAX_BYTES = 256;

/** Truncate to at most 256 UTF-8 bytes on a character boundary, marking the cut with `…`. */
export function truncateUtf8(text: string, maxBytes = RECORD_MESSAGE_MAX_BYTES): string {
  if (Buffer.byteLength(text, 'utf8') <= maxBytes) return text;
  let used = 0;
  let out = '';
  for (const ch of text) {
    const n = Buffer.byteLength(ch, 'utf8');
    if (used + n > maxBytes) break;
    used += n;
    out += ch;
  }
  return `${out}…`;
}

/**
 * Payload-free projection of a combined verdict: `transform.value` is
 * dropped (it is target content by definition), `approval` members are
 * stripped, messages are truncated; reasons, labels and evidence pass through.
 */
export function projectVerdict(v: Verdict): ProjectedVerdict {
  const out: ProjectedVerdict = { decision: v.decision };
  if (v.reason !== undefined) out.reason = v.reason;
  if (v.message !== undefined) out.message = truncateUtf8(v.message);
  if (v.warnings !== undefined && v.warnings.length > 0) {
    out.warnings = v.warnings.map((w) => {
      const p: Warning = {};
      if (w.reason !== undefined) p.reason = w.reason;
      if (w.message !== undefined) p.message = truncateUtf8(w.message);
      return p;
    });
  }
  if (v.approval !== undefined) out.approval = {};
  if (v.transform !== undefined) out.transform = { path: v.transform.path };
  if (v.evidence !== undefined) out.evidence = structuredClone(v.evidence);
  if (v.result_labels !== undefined && v.result_labels.length > 0) out.result_labels = [...v.result_labels];
  return out;
}
