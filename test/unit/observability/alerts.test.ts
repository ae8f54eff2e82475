/** The shipped alert rules parse and name only metrics a worker exposes; HELP texts carry no rule ids. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { createDeliveryMetrics } from '../../../src/observability/metrics.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');

describe('metrics: the example alert rules and the exposed names', () => {
  it('every hookrelay_* metric an alert rule uses is one the worker exposes', async () => {
    const rules = parseYaml(readFileSync(path.join(ROOT, 'docs/observability/alerts.yml'), 'utf8')) as {
      groups: Array<{ rules: Array<{ alert: string; expr: string }> }>;
    };
    const exprs = rules.groups.flatMap((g) => g.rules.map((r) => r.expr));
    expect(exprs.length).toBeGreaterThanOrEqual(6);
    const metrics = createDeliveryMetrics({ processMetrics: true });
    const exposed = new Set((await metrics.registry.getMetricsAsJSON()).map((m) => m.name));
    const used = new Set(exprs.flatMap((e) => e.match(/\bhookrelay_[a-z_]+/g) ?? []));
    expect(used.size).toBeGreaterThan(5);
    for (const name of used) expect(exposed, name).toContain(name);
    expect(exposed).toContain('process_cpu_seconds_total');
    for (const name of exposed) expect(name, 'no prefixed process metrics').not.toMatch(/^hookrelay_(process|nodejs)_/);
  });

  it('HELP texts speak to operators: no specification rule ids', async () => {
    const metrics = createDeliveryMetrics({ processMetrics: false });
    for (const m of await metrics.registry.getMetricsAsJSON()) expect(m.help, m.name).not.toMatch(/\([A-Z]\d+[a-z]?\)|\b[A-Z]\d{1,2}\b|§/);
  });
});
