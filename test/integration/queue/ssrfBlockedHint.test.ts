/**
 * UX-6 (Q5): an `ssrf_blocked` failure says which setting lets a private receiver through. A
 * receiver on 127.0.0.1 with no HOOKRELAY_ALLOWED_CIDRS on the worker (the first thing a new user
 * tries) failed with the bare class; the ledger's failure reason, which `deliveries list` and the
 * console show, now names HOOKRELAY_ALLOWED_CIDRS — and the local-mode outcome's detail too.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliverNotification } from '../../../src/notify/deliver.ts';
import { FetchTransport } from '../../../src/send/fetchTransport.ts';
import { WebhookConfigSchema } from '../../../src/contract/webhook.ts';
import { silentLogger } from '../../../src/observability/logger.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { createStack, waitFor, type Stack } from './harness.ts';

const run = promisify(execFile);
const BIN = path.resolve(import.meta.dirname, '../../../bin/hookrelay.mjs');

describe('UX-6 ssrf_blocked names HOOKRELAY_ALLOWED_CIDRS', () => {
  let stack: Stack;
  let blockedId: string | undefined;
  let receiver: Receiver;
  beforeAll(async () => {
    stack = await createStack('ux6ssrf');
    receiver = await startReceiver({ status: 204 });
  });
  afterAll(async () => {
    await stack.cleanup();
    await receiver.close();
  });

  it('UX-6 Q5 worker: a loopback receiver fails ssrf_blocked, the failure reason names HOOKRELAY_ALLOWED_CIDRS; nothing is sent', async () => {
    await stack.startWorker({ HOOKRELAY_ALLOWED_CIDRS: '' });
    const { deliveryIds } = await stack.producer.enqueue({
      operationId: 'op-ux6-ssrf',
      type: 'onComplete',
      event: { operationId: 'op-ux6-ssrf', reason: 'done' },
      hooks: [{ id: 'local-receiver', type: 'onComplete', webhook: { url: `${receiver.url}/hook` } }],
    });
    const id = deliveryIds[0]!;
    blockedId = id;
    await waitFor(async () => (await stack.db.store.pool!.query(`select 1 from deliveries where id = $1 and status = 'failed'`, [id])).rowCount === 1, 15_000);
    const row = await stack.db.store.pool!.query<{ last_error_class: string; failure_reason: string }>(
      'select last_error_class, failure_reason from deliveries where id = $1',
      [id],
    );
    expect(row.rows[0]!.last_error_class).toBe('ssrf_blocked');
    expect(row.rows[0]!.failure_reason).toMatch(/^ssrf_blocked: .*add its range to HOOKRELAY_ALLOWED_CIDRS/);
    expect(receiver.requests).toHaveLength(0);
  });

  it('DEP-7 (issue 50): `deliveries list` cuts the long ssrf_blocked reason with an ellipsis; `deliveries show` keeps it whole', async () => {
    expect(blockedId).toBeDefined(); // the worker case above failed it
    const env = { PATH: process.env.PATH ?? '', DATABASE_URL: stack.db.url, REDIS_URL: 'redis://127.0.0.1:6379', HOOKRELAY_QUEUE: stack.queueName };
    const list = await run(process.execPath, [BIN, 'deliveries', 'list', '--operation', 'op-ux6-ssrf'], { env, timeout: 30_000 });
    const row = list.stdout.split('\n').find((l) => l.startsWith(blockedId!));
    expect(row).toMatch(/ssrf_blocked: a private, loopback.*…/);
    expect(row).not.toContain('HOOKRELAY_ALLOWED_CIDRS');
    expect(row!.length).toBeLessThan(200); // was ~300 characters wide with the whole reason
    const show = await run(process.execPath, [BIN, 'deliveries', 'show', blockedId!], { env, timeout: 30_000 });
    expect(show.stdout).toMatch(/failed: ssrf_blocked: .*add its range to HOOKRELAY_ALLOWED_CIDRS/);
  });

  it('UX-6 Q5 local mode: the outcome detail of a refused loopback and a refused name that resolves to loopback names HOOKRELAY_ALLOWED_CIDRS', async () => {
    const transport = new FetchTransport({});
    try {
      for (const url of [`${receiver.url}/hook`, `http://localhost:${new URL(receiver.url).port}/hook`]) {
        const result = await deliverNotification({
          webhook: WebhookConfigSchema.parse({ url }),
          hookId: 'local',
          payload: '{}',
          deliveryId: 'dlv_01J00000000000000000000000',
          generation: 0,
          env: {},
          signingSecrets: [],
          fetchTransport: transport,
          logger: silentLogger(),
        });
        expect(result, url).toMatchObject({ ok: false, errorClass: 'ssrf_blocked', permanent: true });
        expect(result.ok ? '' : result.detail, url).toContain('HOOKRELAY_ALLOWED_CIDRS');
      }
      expect(receiver.requests).toHaveLength(0);
    } finally {
      await transport.close();
    }
  });
});
