import { describe, expect, it } from 'vitest';
import { DeliveryConfigError } from '../../../src/contract/errors.ts';
import { resolveWebhookUrl } from '../../../src/send/resolveUrl.ts';

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

describe('W1: port 0 is never a destination', () => {
  it.each(['http://hooks.example.com:0/x', 'https://hooks.example.com:00/x', 'http://[2001:db8::1]:0/'])(
    'W1: %s is a configuration error at send time',
    (url) => {
      expect(() => resolveWebhookUrl(url, undefined)).toThrow(/port 0/);
    },
  );

  it('W1: an APP_URL on port 0 is refused for relative URLs', () => {
    expect(() => resolveWebhookUrl('/hook', 'http://127.0.0.1:0')).toThrow(/port 0/);
  });

  it('W1: ports 1 and 65535 are fine', () => {
    expect(resolveWebhookUrl('http://hooks.example.com:1/x', undefined).url).toBe('http://hooks.example.com:1/x');
    expect(resolveWebhookUrl('/x', 'http://127.0.0.1:65535').url).toBe('http://127.0.0.1:65535/x');
  });
});
