import { describe, expect, it } from 'vitest';
import { DeliveryConfigError } from '../../../src/delivery/errors.ts';
import { resolveWebhookUrl } from '../../../src/delivery/resolveUrl.ts';

describe('W1: webhook URL resolution', () => {
  it('W1: an absolute URL stays as written and is not trusted', () => {
    expect(resolveWebhookUrl('https://hooks.example.com/a?b=1', 'https://app.example')).toEqual({ url: 'https://hooks.example.com/a?b=1', trusted: false });
  });

  it('W1/Q5: a relative path resolves against APP_URL (keeping its base path) and is trusted', () => {
    expect(resolveWebhookUrl('/api/hook', 'https://app.example')).toEqual({ url: 'https://app.example/api/hook', trusted: true });
    expect(resolveWebhookUrl('/hook?x=1', 'http://127.0.0.1:3000/base/')).toEqual({ url: 'http://127.0.0.1:3000/base/hook?x=1', trusted: true });
  });

  it('W1: a relative URL with no APP_URL is a configuration error', () => {
    expect(() => resolveWebhookUrl('/api/hook', undefined)).toThrow(DeliveryConfigError);
    expect(() => resolveWebhookUrl('/api/hook', ' ')).toThrow(/APP_URL/);
    expect(() => resolveWebhookUrl('/api/hook', 'ftp://x')).toThrow(DeliveryConfigError);
    expect(() => resolveWebhookUrl('//evil.example/x', 'https://app.example')).toThrow(DeliveryConfigError);
    expect(() => resolveWebhookUrl('file:///etc/passwd', undefined)).toThrow(DeliveryConfigError);
  });
});
