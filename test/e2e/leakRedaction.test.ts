/**
 * LEAK-1 (W7, Q8): a resolved secret is never stored or shown in any encoding. A real worker (its
 * HTTP server takes QStash callbacks and serves /console), real Postgres and Redis, the local
 * QStash-compatible server with the real @upstash/qstash client, receivers on 127.0.0.1, the CLI
 * as a process. A receiver echoes the `Authorization` token it got — one fetch delivery per
 * encoding (PHP `\/`, Gson `\u003d`, Python quote()/quote_plus, base64/base64url at every
 * alignment, hex, HTML entities, …) — and a QStash receiver echoes it in the body QStash's callback
 * carries back. No form of the token is in any Postgres row, in `deliveries show` (text and
 * --json) or on the console's delivery page; each excerpt is redacted or withheld with a marker.
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { decodeHTML } from 'entities';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/observability/logger.ts';
import { createHookProducer } from '../../src/queue/producer.ts';
import type { HookProducer } from '../../src/queue/types.ts';
import { getDeliveryRow } from '../../src/store/deliveriesRepo.ts';
import { type RunningDeliveryWorker, startDeliveryWorker } from '../../src/worker/startDeliveryWorker.ts';
import { waitFor } from '../integration/queue/harness.ts';
import { createTestStore, type TestStore } from '../support/db.ts';
import { runCli } from '../support/hookrelayProcess.ts';
import { startQStashServer, type QStashServer } from '../support/qstashServer.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { deleteKeys, queueKeys, TEST_REDIS_URL } from '../support/redisKeys.ts';
import { echoForms, leaksIn } from '../support/secretForms.ts';

/** `+`, `/` and `=` change under JSON, percent and entity encoding; base64 changes everything. */
const TOKEN = `sk+live/${randomBytes(9).toString('hex')}=`;
const CONSOLE_TOKEN = `console-${randomBytes(12).toString('hex')}`;
const FORMS = Object.keys(echoForms(TOKEN));

const cli = (args: string[], env: Record<string, string>) => runCli(args, env);

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

type Attempt = { transport: string; responseExcerpt: string | null };

describe('LEAK-1 (W7): an echoed token leaves no form of it in Postgres, the CLI or the console', () => {
  let db: TestStore;
  let rx: Receiver;
  let qstash: QStashServer;
  let producer: HookProducer;
  let worker: RunningDeliveryWorker;
  const ids = new Map<string, string>();
  let qstashId: string;
  const queueName = `leak1-${randomBytes(4).toString('hex')}`;
  const env: NodeJS.ProcessEnv = {};

  beforeAll(async () => {
    db = await createTestStore('leak1');
    qstash = await startQStashServer({ retryBackoffMs: 10 });
    rx = await startReceiver((req) => {
      const token = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
      if (req.path === '/qstash-echo') {
        // Through QStash: the body comes back to the worker in the callback, base64 inside JSON.
        const forms = echoForms(token);
        return {
          status: 200,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ got: req.headers.authorization, b64: forms.base64, hex: forms.hex }),
        };
      }
      const form = decodeURIComponent(req.path.slice('/echo/'.length));
      return { status: 400, headers: { 'content-type': 'application/json' }, body: `{"error":"bad token","got":"${echoForms(token)[form]}"}` };
    });
    const port = await freePort();
    Object.assign(env, {
      DATABASE_URL: db.url,
      REDIS_URL: TEST_REDIS_URL,
      HOOKRELAY_QUEUE: queueName,
      HOOKRELAY_ALLOWED_CIDRS: '127.0.0.0/8',
      HOOKRELAY_HTTP_PORT: String(port),
      HOOKRELAY_PUBLIC_URL: `http://127.0.0.1:${port}`,
      HOOKRELAY_SHUTDOWN_TIMEOUT_MS: '1000',
      HOOKRELAY_CONSOLE_TOKEN: CONSOLE_TOKEN,
      QSTASH_URL: qstash.url,
      QSTASH_TOKEN: qstash.token,
      QSTASH_CURRENT_SIGNING_KEY: qstash.currentSigningKey,
      QSTASH_NEXT_SIGNING_KEY: qstash.nextSigningKey,
      CUSTOMER_TOKEN: TOKEN,
      HOOKRELAY_TEMPLATE_ENV: 'CUSTOMER_TOKEN',
    });
    worker = await startDeliveryWorker({ env, logger: silentLogger(), migrate: false });
    producer = createHookProducer({ store: db.store, redisUrl: TEST_REDIS_URL, queueName, env });
    const webhook = (url: string, delivery: 'fetch' | 'qstash' = 'fetch') => ({
      url,
      delivery,
      headers: { authorization: 'Bearer ${CUSTOMER_TOKEN}' },
      allowedEnvVars: ['CUSTOMER_TOKEN'],
    });
    for (const form of FORMS) {
      const r = await producer.enqueue({
        operationId: `op-${form}`,
        type: 'onComplete',
        event: { reason: 'done' },
        hooks: [{ id: `echo-${form}`, type: 'onComplete', webhook: webhook(`${rx.url}/echo/${encodeURIComponent(form)}`) }],
      });
      ids.set(form, r.deliveryIds[0]!);
    }
    const q = await producer.enqueue({
      operationId: 'op-qstash',
      type: 'onComplete',
      event: { reason: 'done' },
      hooks: [{ id: 'qstash-echo', type: 'onComplete', webhook: webhook(`${rx.url}/qstash-echo`, 'qstash') }],
    });
    qstashId = q.deliveryIds[0]!;
    await waitFor(
      async () => {
        const rows = await Promise.all([...ids.values()].map((id) => getDeliveryRow(db.store.db, id)));
        return rows.every((r) => r?.status === 'failed');
      },
      60_000,
      'every echo delivery failed',
    );
    await waitFor(async () => (await getDeliveryRow(db.store.db, qstashId))?.status === 'delivered', 30_000, 'the QStash callback recorded');
  }, 120_000);

  afterAll(async () => {
    await producer?.close();
    await worker?.stop();
    await rx?.close();
    await qstash?.close();
    await deleteKeys(queueKeys(queueName));
    await db?.cleanup();
  });

  const cliEnv = () => ({ DATABASE_URL: db.url, REDIS_URL: TEST_REDIS_URL, HOOKRELAY_QUEUE: queueName });

  it('LEAK-1 (W7): the receivers really got the token and echoed it (the test is not vacuous)', () => {
    const auth = rx.requests.filter((r) => r.headers.authorization === `Bearer ${TOKEN}`);
    expect(auth.length).toBe(FORMS.length + 1);
  });

  it('LEAK-1 (W7): a QStash callback echoing the token leaves no form of it in the ledger, the CLI or the console', async () => {
    const row = await getDeliveryRow(db.store.db, qstashId);
    const attempts = row!.attempts as Attempt[];
    const fromCallback = attempts.filter((a) => a.transport === 'qstash' && a.responseExcerpt !== null);
    expect(fromCallback.length).toBeGreaterThan(0);
    for (const a of fromCallback) {
      expect(leaksIn(a.responseExcerpt!, TOKEN)).toEqual([]);
      expect(a.responseExcerpt).toMatch(/\[redacted\]|\[withheld: /);
    }
    for (const args of [
      ['deliveries', 'show', qstashId],
      ['deliveries', 'show', qstashId, '--json'],
      ['deliveries', 'list', '--json', '--limit', '100'],
    ]) {
      const r = await cli(args, cliEnv());
      expect(r.code, r.stderr).toBe(0);
      expect(leaksIn(r.stdout, TOKEN)).toEqual([]);
    }
    const page = await fetch(`${env.HOOKRELAY_PUBLIC_URL}/console/deliveries/${qstashId}`, { headers: { authorization: `Bearer ${CONSOLE_TOKEN}` } });
    expect(page.status).toBe(200);
    expect(leaksIn(decodeHTML(await page.text()), TOKEN)).toEqual([]);
  });

  for (const form of FORMS) {
    it(`LEAK-1 (W7): echoed as ${form}, the token is redacted or the excerpt withheld: in Postgres, deliveries show (text and --json) and the console`, async () => {
      const id = ids.get(form)!;
      const row = await getDeliveryRow(db.store.db, id);
      const [attempt] = row!.attempts as Attempt[];
      // Inside a longer base64 text only the token's own characters go (the neighbours keep the rest).
      expect(attempt!.responseExcerpt).toMatch(/^\{"error":"bad token","got":"[A-Za-z0-9+/=_-]{0,4}\[redacted\][A-Za-z0-9+/=_-]{0,8}"\}$|^\[withheld: /);
      const shown = JSON.parse((await cli(['deliveries', 'show', id, '--json'], cliEnv())).stdout) as { attempts: Attempt[] };
      expect(shown.attempts[0]!.responseExcerpt).toBe(attempt!.responseExcerpt);
      const text = await cli(['deliveries', 'show', id], cliEnv());
      expect(text.code, text.stderr).toBe(0);
      expect(leaksIn(text.stdout, TOKEN)).toEqual([]);
      const page = await fetch(`${env.HOOKRELAY_PUBLIC_URL}/console/deliveries/${id}`, { headers: { authorization: `Bearer ${CONSOLE_TOKEN}` } });
      const html = decodeHTML(await page.text());
      expect(html).toContain('bad token');
      expect(leaksIn(html, TOKEN)).toEqual([]);
    });
  }

  it('LEAK-1 (W7): no Postgres row of any table holds a form of the token (excerpts read back as stored)', async () => {
    const { rows: tables } = await db.store.pool!.query<{ t: string }>(
      "select table_name as t from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'",
    );
    expect(tables.length).toBeGreaterThan(3);
    let seen = 0;
    for (const { t } of tables) {
      const { rows } = await db.store.pool!.query<{ r: string }>(`select t::text as r from "${t}" as t`);
      for (const { r } of rows) {
        seen += 1;
        expect(leaksIn(r, TOKEN), `${t} holds the token`).toEqual([]);
        // jsonb text doubles backslashes: read the JSON strings back as they were stored too.
        expect(leaksIn(r.replace(/\\\\/g, '\\'), TOKEN), `${t} holds the token`).toEqual([]);
      }
    }
    expect(seen).toBeGreaterThan(FORMS.length);
  });
});
