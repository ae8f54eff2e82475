/**
 * The encodings a receiver may echo a secret in (W7), written the way the stacks that produce
 * them do, for tests that plant them and then look for any of them where nothing may show one.
 * Independent of src/send/secretRedaction.ts on purpose: the tests check it.
 */

const utf8 = (s: string) => Buffer.from(s, 'utf8');

/** Python's `urllib.parse.quote(s)`: unreserved characters and `/` left raw, upper-case hex. */
function pythonQuote(s: string): string {
  return [...utf8(s)]
    .map((b) => (/[A-Za-z0-9_.~/-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`))
    .join('');
}

/** Python's `urllib.parse.quote_plus(s)`: as `quote` with `safe=''`, and a space as `+`. */
function pythonQuotePlus(s: string): string {
  return [...utf8(s)]
    .map((b) =>
      b === 0x20 ? '+' : /[A-Za-z0-9_.~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`,
    )
    .join('');
}

/** Each named encoding of `secret`, as a receiver would put it into its answer. */
export function echoForms(secret: string): Record<string, string> {
  const b = utf8(secret);
  const json = JSON.stringify(secret).slice(1, -1);
  return {
    raw: secret,
    'json-php-slashes': json.replace(/\//g, '\\/'), // PHP json_encode
    'json-gson-u003d': json.replace(/=/g, '\\u003d').replace(/\+/g, '\\u002b'), // Gson's HTML-safe escaping
    'json-every-char-u': [...secret].map((c) => `\\u${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`).join(''),
    'percent-python-quote': pythonQuote(secret),
    'percent-python-quote-lower-hex': pythonQuote(secret).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()),
    'percent-quote-plus': pythonQuotePlus(secret),
    'percent-encodeURIComponent': encodeURIComponent(secret),
    base64: b.toString('base64'),
    'base64-unpadded': b.toString('base64').replace(/=+$/, ''),
    base64url: b.toString('base64url'),
    'base64url-padded': `${b.toString('base64url')}${'='.repeat((4 - (b.toString('base64url').length % 4)) % 4)}`,
    'base64-inside-basic-auth-offset-1': Buffer.from(`u:${secret}`).toString('base64'),
    'base64-inside-offset-2': Buffer.from(`ux:${secret}!`).toString('base64'),
    'base64url-inside-offset-0': Buffer.from(`abc${secret}zz`).toString('base64url'),
    hex: b.toString('hex'),
    'hex-upper': b.toString('hex').toUpperCase(),
    'html-named': secret.replace(/\+/g, '&plus;').replace(/\//g, '&sol;').replace(/=/g, '&equals;'),
    'html-decimal': [...secret].map((c) => `&#${c.charCodeAt(0)};`).join(''),
    'html-hex': [...secret].map((c) => `&#x${c.charCodeAt(0).toString(16).toUpperCase()};`).join(''),
    'json-escaped-python-quote': pythonQuote(secret).replace(/\//g, '\\/'),
  };
}

/**
 * Strings that show `secret` to anyone reading a text: every echo form (the stable core of the
 * base64 ones, whatever surrounds them). A text holding none of them does not show the secret.
 */
export function leakNeedles(secret: string): string[] {
  const b = utf8(secret);
  const needles = new Set<string>([secret, b.toString('hex'), b.toString('hex').toUpperCase()]);
  for (const [name, form] of Object.entries(echoForms(secret))) if (!name.startsWith('base64')) needles.add(form);
  for (let k = 0; k < 3; k++) {
    const encoded = Buffer.concat([Buffer.alloc(k), b]).toString('base64');
    const core = encoded.slice(Math.ceil((8 * k) / 6), Math.floor((8 * (k + b.length)) / 6));
    needles.add(core);
    needles.add(core.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return [...needles];
}

/** The needles found in `text` (none: it does not show the secret). */
export function leaksIn(text: string, secret: string): string[] {
  return leakNeedles(secret).filter((n) => text.includes(n));
}
