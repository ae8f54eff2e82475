/**
 * Q4: the console shows both critical states as the CLI does — failed for good, and accepted by
 * QStash with no outcome reported by the deadline — each with its reason.
 */
import { describe, expect, it } from 'vitest';
import { deliveriesPage, deliveryPage, type DeliveryRowView } from '../../../src/console/pages.ts';

const base = { eventType: 'onComplete', hookId: 'h', operationId: 'op', attemptCount: 1, createdAt: new Date('2026-12-06T10:00:00Z') };
const unknown: DeliveryRowView = {
  ...base,
  id: 'dlv_unknown',
  status: 'accepted_by_qstash',
  lastErrorClass: 'CriticalHookDeliveryError',
  lastHttpStatus: null,
  failureReason: 'qstash_outcome_unknown',
};
const failed: DeliveryRowView = {
  ...base,
  id: 'dlv_failed',
  status: 'failed',
  lastErrorClass: 'CriticalHookDeliveryError',
  lastHttpStatus: 503,
  failureReason: 'http_error',
};

describe('LH-Q2 Q4: the console shows both critical states', () => {
  it('LH-Q2 Q4: the deliveries list shows the class, HTTP status and reason of each critical row', () => {
    const html = deliveriesPage({ filter: {}, rows: [unknown, failed], nextBefore: undefined, byStatus: [], csrf: 'c' });
    const cells = [...html.matchAll(/<tr data-id="(dlv_\w+)">.*?<\/tr>/g)].map((m) => [m[1], m[0]] as const);
    const cell = new Map(cells);
    expect(cell.get('dlv_unknown')).toContain('qstash_outcome_unknown: accepted by QStash, no outcome reported by its deadline');
    expect(cell.get('dlv_unknown')).toContain('critical');
    expect(cell.get('dlv_unknown')).not.toContain('retrying');
    expect(cell.get('dlv_failed')).toContain('HTTP 503');
    expect(cell.get('dlv_failed')).toContain('critical');
  });

  it('LH-Q2 Q4: a delivery page says why an accepted row is critical', () => {
    const html = deliveryPage(
      {
        ...unknown,
        transport: 'qstash',
        generation: 0,
        endpointKey: null,
        hook: {},
        payload: {},
        attempts: [],
        updatedAt: base.createdAt,
        deliveredAt: null,
        nextAttemptAt: null,
      },
      { csrf: 'c', replayable: false },
    );
    expect(html).toContain('qstash_outcome_unknown: accepted by QStash, no outcome reported by its deadline');
    expect(html).toContain('accepted_by_qstash');
  });
});
