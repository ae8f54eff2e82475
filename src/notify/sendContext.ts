import type { TemplateEnvPattern } from '../contract/templateSources.ts';
import { createLazyQStashPublisher } from './lazyQStashPublisher.ts';
import { FetchTransport } from '../send/fetchTransport.ts';
import { parseSigningSecrets } from '../send/signing.ts';
import type { QStashPublisher } from '../send/types.ts';
import type { Logger } from '../observability/logger.ts';

const NO_SECRETS: readonly string[] = [];

export type SendContextOptions = {
  env: Record<string, string | undefined>;
  templateEnv: TemplateEnvPattern;
  appUrl: string | undefined;
  allowedCidrs: string | undefined;
  qstash: QStashPublisher | undefined;
  logger: Logger;
};

/**
 * What every send from the dispatcher shares: the pooled fetch transport, the template sources,
 * and the values read live at send time (W2, L1): signing secrets and the QStash client, each
 * parsed or built once per distinct value, so a rotation applies at the next send.
 */
export class SendContext {
  readonly env: Record<string, string | undefined>;
  readonly templateEnv: TemplateEnvPattern;
  readonly appUrl: string | undefined;
  readonly transport: FetchTransport;
  readonly logger: Logger;
  readonly #qstash: QStashPublisher | undefined;
  #qstashCache: { url: string | undefined; token: string; publisher: QStashPublisher } | undefined;
  #secretsCache: { raw: string; secrets: readonly string[] } | undefined;

  constructor(options: SendContextOptions) {
    this.env = options.env;
    this.templateEnv = options.templateEnv;
    this.appUrl = options.appUrl;
    this.logger = options.logger;
    this.transport = new FetchTransport({ allowedCidrs: options.allowedCidrs });
    this.#qstash = options.qstash;
  }

  /** HOOKRELAY_SIGNING_SECRETS of the current environment; throws DeliveryConfigError (names the entry, never a secret). */
  signingSecrets(): readonly string[] {
    const raw = this.env.HOOKRELAY_SIGNING_SECRETS;
    if (raw === undefined || raw === '') return NO_SECRETS;
    const cached = this.#secretsCache;
    if (cached && cached.raw === raw) return cached.secrets;
    const secrets = parseSigningSecrets(raw);
    this.#secretsCache = { raw, secrets };
    return secrets;
  }

  /** The QStash publisher for local sends: the injected one, else one per (QSTASH_URL, QSTASH_TOKEN); none without a token (D7). */
  qstashPublisher(): QStashPublisher | undefined {
    if (this.#qstash) return this.#qstash;
    const token = this.env.QSTASH_TOKEN;
    if (!token) return undefined;
    const url = this.env.QSTASH_URL;
    const cached = this.#qstashCache;
    if (cached && cached.url === url && cached.token === token) return cached.publisher;
    const publisher = createLazyQStashPublisher({ url, token }, (message) => this.logger.error({}, message));
    this.#qstashCache = { url, token, publisher };
    return publisher;
  }

  close(): Promise<void> {
    return this.transport.close();
  }
}
