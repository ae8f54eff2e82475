/** The deliveries filter as a form carries it (query text), checked and turned into the store's filter fields. */
import type { FilterFields } from '../store/deliveryFilterInput.ts';
import type { DeliveryFilterForm } from './pages.ts';
import { badTextProblem } from './queryInput.ts';

export function filterFields(q: URLSearchParams): DeliveryFilterForm {
  const f: DeliveryFilterForm = {};
  for (const k of ['status', 'operation', 'hook', 'type', 'since', 'until'] as const) {
    const v = q.get(k)?.trim();
    if (v) f[k] = v;
  }
  return f;
}

/** A filter form's values are text Postgres can store (no NUL, no control characters, bounded). */
export function filterProblem(f: DeliveryFilterForm): string | undefined {
  for (const [k, v] of Object.entries(f)) {
    const problem = badTextProblem(v, k);
    if (problem) return problem;
  }
  return undefined;
}

export function toFilterFields(f: DeliveryFilterForm): FilterFields {
  return { status: f.status, operation: f.operation, hook: f.hook, event: f.type, since: f.since, until: f.until };
}
