/**
 * The worker's part in durable approvals (A1, A3): the sweep that expires requests and enqueues
 * the approval events nobody announced yet (through the worker's own producer, so they are
 * ledger rows delivered like every event), and — with HOOKRELAY_APPROVAL_SECRETS — the answer
 * endpoint for chat buttons on the worker's HTTP port.
 */
import { APPROVAL_ANSWER_PATH, createApprovalAnswerRoute } from '../../approvals/answerEndpoint.ts';
import { createApprovalAnnouncer } from '../../approvals/announce.ts';
import { createApprovalSweeper } from '../../approvals/sweeper.ts';
import type { LoadedConfig } from '../../config/resolveConfig.ts';
import { parseApprovalSecrets } from '../../config/approvalSecrets.ts';
import type { PostRoute } from '../../observability/httpServer.ts';
import type { Logger } from '../../observability/logger.ts';
import { createHookProducer } from '../../queue/producer.ts';
import type { QueueRedis } from '../../queue/redisConnection.ts';
import type { Store } from '../../store/db.ts';

export type ApprovalWork = {
  /** POST /approvals/answer (by path), when answer tokens are configured. */
  postRoutes: Record<string, PostRoute>;
  stop(): Promise<void>;
};

export function startApprovalWork(p: { store: Store; config: LoadedConfig; redis: QueueRedis; logger: Logger }): ApprovalWork {
  const { settings } = p.config;
  const producer = createHookProducer({
    store: p.store,
    redis: p.redis,
    queueName: settings.HOOKRELAY_QUEUE,
    queuePrefix: p.config.queuePrefix,
    env: p.config.env,
    logger: p.logger,
  });
  const secrets = parseApprovalSecrets(settings.HOOKRELAY_APPROVAL_SECRETS);
  const publicUrl = settings.HOOKRELAY_PUBLIC_URL;
  const announcer = createApprovalAnnouncer({
    db: async () => p.store.db,
    producer,
    approvers: settings.HOOKRELAY_APPROVER_URL ? [{ url: settings.HOOKRELAY_APPROVER_URL }] : [],
    answerLinks: secrets.length === 0 ? undefined : { url: publicUrl ? new URL(APPROVAL_ANSWER_PATH, publicUrl).href : undefined, secrets },
    logger: p.logger,
  });
  const sweeper = createApprovalSweeper({ db: p.store.db, announcer, intervalMs: settings.HOOKRELAY_APPROVAL_SWEEP_MS, logger: p.logger });
  sweeper.start();
  const postRoutes: Record<string, PostRoute> =
    secrets.length === 0
      ? {}
      : {
          [APPROVAL_ANSWER_PATH]: createApprovalAnswerRoute({
            db: p.store.db,
            secrets,
            logger: p.logger,
            onDecided: (row) => void announcer.announce([row]),
          }),
        };
  return {
    postRoutes,
    async stop() {
      await sweeper.stop();
      await producer.close();
    },
  };
}
