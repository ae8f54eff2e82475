/**
 * W7 / Q8: the one redaction for every text a receiver or a callback controls before it is stored
 * or shown (fetch response excerpts, QStash callback bodies, a decision webhook's deny reason, a
 * remote interceptor's reasons and evidence).
 *
 * A receiver may echo what it was sent in any encoding its stack likes, so each resolved secret is
 * looked for raw and as JSON escapes (`\/`, `\uXXXX` of any character, e.g. Gson's `\u003d`),
 * percent-encoding in either hex case (whatever characters the encoder left raw, `+` as a space
 * too), HTML named / decimal / hex entities, base64 and base64url (padded or not, alone or at any
 * of the 3 byte alignments inside a longer base64 text) and hex in either case — and in the
 * layered forms a JSON body carries (percent-encoding inside JSON escapes, entities inside JSON).
 * The text is decoded into views that remember, for every decoded character, the span of the
 * original text it came from, so a match in any view takes out exactly those characters.
 * A text that still shows a secret afterwards, or a secret too short to be told apart from other
 * text, withholds the whole text behind a marker saying why. Pure functions; only the failure path
 * pays (a text is searched only when a request carried template values).
 */
import { decodeHTMLStrict } from 'entities/decode';

export const REDACTED = '[redacted]';
/** Shorter values cannot be found inside longer base64 text (their base64 core is under 4 characters). */
const MIN_SECRET_BYTES = 4;
export const WITHHELD_SHORT_SECRET = `[withheld: a header template value sent with this request is shorter than ${MIN_SECRET_BYTES} bytes and appears in the text; it cannot be taken out without guessing]`;
const WITHHELD_UNREDACTABLE = '[withheld: the text still showed a secret sent with this request after redaction]';

/** A cut text that ends with this many characters of a secret's start (decoded) loses them too. */
const MIN_TAIL_CHARS = 3;
/** Encoded forms: a tail must cover at least 3 bytes of the secret (6 hex digits, 4 base64 characters). */
const MIN_TAIL_HEX = 6;
const MIN_TAIL_BASE64 = 4;

/**
 * Decoded text with, for each of its characters, the span [start, end) of the original text it
 * came from. `bytes` views hold one UTF-8 byte per character (latin1), after percent-decoding.
 * An escape cut off at the end (`\u00`, `%2`, `&plu`: the excerpt cap) is left out of the view, so
 * the secret's start before it is still seen as a tail.
 */
type View = {
  text: string;
  start: Int32Array;
  end: Int32Array;
  bytes: boolean;
  lower?: string;
  /** Hex digits are escaped by no encoder but JSON's `\uXXXX`: hex is searched in the raw and JSON views only. */
  hex?: boolean;
  /** `+` read as a space: only for secrets with a space (a base64 `+` is not one). */
  plus?: boolean;
};

/** What is searched for one secret, per kind of view. */
type Targets = {
  /** The secret as UTF-16 text (searched in text views) and as its UTF-8 bytes (in byte views). */
  text: string;
  bytes: string;
  /** base64 / base64url: standalone forms and the 3 alignment cores; searched in every view. */
  base64: string[];
  /** Lower-case hex of the UTF-8 bytes; searched in an ASCII-lower-cased copy of every view. */
  hex: string;
  short: boolean;
  /** Holds another secret (`Bearer ${TOKEN}` holds TOKEN): its encoded forms are that one's; only the text itself is searched, to take it out whole. */
  textOnly: boolean;
};

type Span = [number, number];

/**
 * `text` with every form of each secret replaced by `[redacted]` (a cut text ending inside one
 * loses that tail too), or a `[withheld: …]` marker when it cannot be shown free of them.
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  if (text.length === 0) return text;
  const values = [...new Set(secrets.filter((s) => s.length > 0))];
  const targets = values.map((s) =>
    targetsOf(
      s,
      values.some((other) => other !== s && other.length >= MIN_SECRET_BYTES && s.includes(other)),
    ),
  );
  if (targets.length === 0) return text;
  const spaces = targets.some((t) => t.text.includes(' '));
  // Most texts show no secret: their views are decoded as plain strings and searched; only a
  // text with a hit pays for the views that map each character back to the original.
  const texts = viewTextsOf(text, spaces);
  if (!targets.some((t) => hits(texts, t))) return text;
  const views = viewsOf(text, spaces);
  const spans: Span[] = [];
  for (const t of targets) {
    const found = matches(views, t);
    if (t.short) {
      if (found.length > 0) return WITHHELD_SHORT_SECRET;
      continue;
    }
    spans.push(...found, ...tails(views, t, text.length));
  }
  if (spans.length === 0) return text;
  const out = replaceSpans(text, spans);
  // The safety net: whatever the replacements left or made must show no secret.
  const again = viewsOf(out, spaces);
  for (const t of targets) if (!t.short && matches(again, t).length > 0) return WITHHELD_UNREDACTABLE;
  return out;
}

/**
 * A JSON-like value with every string (keys too) passed through `redactSecrets`; other values
 * (numbers, lossless numbers, booleans, null) are kept; plain objects and arrays are copied.
 */
export function redactSecretsDeep<T>(value: T, secrets: readonly string[]): T {
  if (secrets.length === 0) return value;
  const redact = (v: unknown): unknown => {
    if (typeof v === 'string') return redactSecrets(v, secrets);
    if (Array.isArray(v)) return v.map(redact);
    if (v === null || typeof v !== 'object' || Object.getPrototypeOf(v) !== Object.prototype) return v;
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(v)) out[redactSecrets(key, secrets)] = redact(child);
    return out;
  };
  return redact(value) as T;
}

function targetsOf(secret: string, textOnly: boolean): Targets {
  const raw = Buffer.from(secret, 'utf8');
  const base64 = new Set<string>();
  const std = raw.toString('base64');
  base64.add(std);
  base64.add(std.replace(/=+$/, ''));
  base64.add(raw.toString('base64url'));
  base64.add(`${raw.toString('base64url')}${'='.repeat((4 - (raw.toString('base64url').length % 4)) % 4)}`);
  // Inside a longer base64 text the secret starts at byte offset k (mod 3): only the characters
  // made of its bits alone are stable, whatever comes before and after.
  for (let k = 0; k < 3; k++) {
    const encoded = Buffer.concat([Buffer.alloc(k), raw]).toString('base64');
    const core = encoded.slice(Math.ceil((8 * k) / 6), Math.floor((8 * (k + raw.length)) / 6));
    if (core.length > 0) {
      base64.add(core);
      base64.add(core.replace(/\+/g, '-').replace(/\//g, '_'));
    }
  }
  return {
    text: secret,
    bytes: raw.toString('latin1'),
    base64: [...base64].filter((f) => f.length > 0),
    hex: raw.toString('hex'),
    short: raw.length < MIN_SECRET_BYTES,
    textOnly,
  };
}

// ---- views ----------------------------------------------------------------------------------

function rawView(text: string): View {
  const start = new Int32Array(text.length);
  const end = new Int32Array(text.length);
  for (let i = 0; i < text.length; i++) {
    start[i] = i;
    end[i] = i + 1;
  }
  return { text, start, end, bytes: false };
}

/**
 * The text, its JSON-unescaped and entity-decoded views (entities inside JSON too), and the
 * percent-decoding of the most decoded one (a percent-encoded secret holds no `\\` or `&`, so
 * decoding those first loses nothing), once more for text encoded twice (`%252B`). `+` is read as
 * a space too only when a secret has one (`quote_plus` writes any other `+` as `%2B`).
 */
function viewsOf(text: string, spaces: boolean): View[] {
  const raw = rawView(text);
  raw.hex = true;
  const views: View[] = [raw];
  const json = jsonUnescape(raw);
  if (json !== undefined) json.hex = true;
  const html = htmlUnescape(raw);
  const both = json !== undefined ? htmlUnescape(json) : undefined;
  for (const v of [json, html, both]) if (v !== undefined) views.push(v);
  const top = both ?? json ?? html ?? raw;
  const once = percentDecode(top, false);
  if (once !== undefined) {
    views.push(once);
    const twice = percentDecode(once, false);
    if (twice !== undefined) views.push(twice);
  }
  const plus = spaces ? percentDecode(top, true) : undefined;
  if (plus !== undefined) {
    plus.plus = true;
    views.push(plus);
  }
  return views;
}

/** A view's text alone, with the flags that choose what is searched in it. */
type ViewText = Pick<View, 'text' | 'bytes' | 'hex' | 'plus'>;

/** What viewsOf decodes, as strings only (native replaces): the same texts, no position maps. */
function viewTextsOf(text: string, spaces: boolean): ViewText[] {
  const views: ViewText[] = [{ text, bytes: false, hex: true }];
  const json = jsonUnescapeText(text);
  const html = htmlUnescapeText(text);
  const both = json !== undefined ? htmlUnescapeText(json) : undefined;
  if (json !== undefined) views.push({ text: json, bytes: false, hex: true });
  if (html !== undefined) views.push({ text: html, bytes: false });
  if (both !== undefined) views.push({ text: both, bytes: false });
  const top = both ?? json ?? html ?? text;
  const once = percentDecodeText(top, false, false);
  if (once !== undefined) {
    views.push({ text: once, bytes: true });
    const twice = percentDecodeText(once, true, false);
    if (twice !== undefined) views.push({ text: twice, bytes: true });
  }
  const plus = spaces ? percentDecodeText(top, false, true) : undefined;
  if (plus !== undefined) views.push({ text: plus, bytes: true, plus: true });
  return views;
}

const JSON_ESCAPE_OR_CUT = /\\(?:u([0-9A-Fa-f]{4})|(["\\/bfnrt])|u[0-9A-Fa-f]{0,3}$|$)/g;

function jsonUnescapeText(s: string): string | undefined {
  if (!s.includes('\\')) return undefined;
  return s.replace(JSON_ESCAPE_OR_CUT, (m, hex: string | undefined, simple: string | undefined) => {
    if (hex !== undefined) return String.fromCharCode(Number.parseInt(hex, 16));
    if (simple !== undefined) return String.fromCharCode(JSON_SIMPLE[simple] as number);
    return m === '\\' || m.startsWith('\\u') ? '' : m;
  });
}

function htmlUnescapeText(s: string): string | undefined {
  if (!s.includes('&')) return undefined;
  let changed = false;
  const decoded = s.replace(ENTITY, (m) => {
    const d = decodeHTMLStrict(m);
    if (d !== m) changed = true;
    return d;
  });
  // An entity cut off at the end holds no `;`, so it is the decoded text's end as well.
  const cut = CUT_ENTITY.exec(s.slice(-40));
  if (cut !== null) return decoded.slice(0, decoded.length - cut[0].length);
  return changed ? decoded : undefined;
}

const PERCENT_OR_CUT = /%([0-9A-Fa-f]{2})|%[0-9A-Fa-f]?$/g;
const PERCENT_PLUS_OR_CUT = /%([0-9A-Fa-f]{2})|%[0-9A-Fa-f]?$|\+/g;

function percentDecodeText(s: string, bytes: boolean, plusAsSpace: boolean): string | undefined {
  if (!s.includes('%') && !(plusAsSpace && s.includes('+'))) return undefined;
  let changed = false;
  const input = bytes ? s : Buffer.from(s, 'utf8').toString('latin1');
  const decoded = input.replace(plusAsSpace ? PERCENT_PLUS_OR_CUT : PERCENT_OR_CUT, (m, hex: string | undefined) => {
    changed = true;
    if (hex !== undefined) return String.fromCharCode(Number.parseInt(hex, 16));
    return m === '+' ? ' ' : '';
  });
  return changed ? decoded : undefined;
}

/** Whether a view text shows a form of the secret, or ends with the start of one. */
function hits(views: readonly ViewText[], t: Targets): boolean {
  for (const v of views) {
    const own = v.bytes ? t.bytes : t.text;
    if (v.text.includes(own) || tailLength(v.text, own, MIN_TAIL_CHARS) > 0) return true;
    if (t.textOnly || v.plus === true) continue;
    for (const form of t.base64) if (v.text.includes(form) || tailLength(v.text, form, MIN_TAIL_BASE64) > 0) return true;
    if (v.hex === true) {
      const lower = /[A-F]/.test(v.text) ? v.text.replace(/[A-F]/g, (c) => c.toLowerCase()) : v.text;
      if (lower.includes(t.hex) || tailLength(lower, t.hex, MIN_TAIL_HEX) > 0) return true;
    }
  }
  return false;
}

/** How many characters of `form`'s start (at least `min`, fewer than all) `haystack` ends with; 0 when none. */
function tailLength(haystack: string, form: string, min: number): number {
  const last = haystack.length - 1;
  for (let k = Math.min(form.length - 1, haystack.length); k >= min; k--) {
    if (haystack.charCodeAt(last) !== form.charCodeAt(k - 1)) continue;
    if (haystack.endsWith(form.slice(0, k))) return k;
  }
  return 0;
}

/** Collects a view's characters (UTF-16 code units, or bytes) and their spans; `capacity` bounds its length. */
class ViewBuilder {
  private readonly codes: Uint16Array;
  private readonly start: Int32Array;
  private readonly end: Int32Array;
  private n = 0;
  constructor(
    readonly bytes: boolean,
    capacity: number,
  ) {
    this.codes = new Uint16Array(capacity);
    this.start = new Int32Array(capacity);
    this.end = new Int32Array(capacity);
  }
  push(code: number, from: number, to: number): void {
    this.codes[this.n] = code;
    this.start[this.n] = from;
    this.end[this.n] = to;
    this.n++;
  }
  view(): View {
    const n = this.n;
    // Bytes are kept as code units below 256: the same string as latin1.
    const text = Buffer.from(this.codes.buffer, 0, n * 2).toString('utf16le');
    return { text, start: this.start.subarray(0, n), end: this.end.subarray(0, n), bytes: this.bytes };
  }
}

const BACKSLASH = 0x5c;
const JSON_SIMPLE: Record<string, number> = { '"': 0x22, '\\': 0x5c, '/': 0x2f, b: 0x08, f: 0x0c, n: 0x0a, r: 0x0d, t: 0x09 };
const HEX4 = /^[0-9A-Fa-f]{4}$/;
const CUT_JSON_ESCAPE = /^\\(?:u[0-9A-Fa-f]{0,3})?$/;
const CUT_ENTITY = /&(?:#[xX]?[0-9A-Fa-f]{0,6}|[A-Za-z][A-Za-z0-9]{0,31})?$/;
const CUT_PERCENT = /^%[0-9A-Fa-f]?$/;

/** JSON string escapes decoded; undefined when the view has none. */
function jsonUnescape(v: View): View | undefined {
  if (v.bytes || !v.text.includes('\\')) return undefined;
  const s = v.text;
  const out = new ViewBuilder(false, s.length);
  let changed = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === BACKSLASH) {
      changed = true;
      if (i >= s.length - 5 && CUT_JSON_ESCAPE.test(s.slice(i))) break;
      const simple = JSON_SIMPLE[s[i + 1] as string];
      if (simple !== undefined) {
        out.push(simple, v.start[i] as number, v.end[i + 1] as number);
        i += 1;
        continue;
      }
      const hex = s.slice(i + 2, i + 6);
      if (s[i + 1] === 'u' && HEX4.test(hex)) {
        out.push(Number.parseInt(hex, 16), v.start[i] as number, v.end[i + 5] as number);
        i += 5;
        continue;
      }
    }
    out.push(c, v.start[i] as number, v.end[i] as number);
  }
  return changed ? out.view() : undefined;
}

/** Named, decimal and hex character references (terminated by `;`, as encoders write them). */
const ENTITY = /&(?:#[xX][0-9A-Fa-f]{1,6}|#[0-9]{1,7}|[A-Za-z][A-Za-z0-9]{1,31});/g;

/** HTML entities decoded (the `entities` package's tables); undefined when there are none. */
function htmlUnescape(v: View): View | undefined {
  if (v.bytes || !v.text.includes('&')) return undefined;
  const s = v.text;
  // An entity decodes to at most 2 code units and is at least 3 characters long.
  const out = new ViewBuilder(false, s.length);
  const copy = (from: number, to: number) => {
    for (let i = from; i < to; i++) out.push(s.charCodeAt(i), v.start[i] as number, v.end[i] as number);
  };
  let at = 0;
  let changed = false;
  for (const m of s.matchAll(ENTITY)) {
    const decoded = decodeHTMLStrict(m[0]);
    if (decoded === m[0]) continue;
    copy(at, m.index);
    const spanStart = v.start[m.index] as number;
    const spanEnd = v.end[m.index + m[0].length - 1] as number;
    for (let j = 0; j < decoded.length; j++) out.push(decoded.charCodeAt(j), spanStart, spanEnd);
    at = m.index + m[0].length;
    changed = true;
  }
  const cut = CUT_ENTITY.exec(s.slice(Math.max(at, s.length - 40)));
  const stop = cut !== null ? s.length - cut[0].length : s.length;
  if (!changed && stop === s.length) return undefined;
  copy(at, stop);
  return out.view();
}

const PERCENT = 0x25;
const PLUS = 0x2b;
const SPACE = 0x20;
const HEX2 = /^[0-9A-Fa-f]{2}$/;

/**
 * Percent-decoded bytes (`%2b` and `%2B` alike; whatever the encoder left raw stays as its UTF-8
 * bytes); with `plusAsSpace`, `+` is a space as `quote_plus` and forms write it. Undefined when
 * nothing would change.
 */
function percentDecode(v: View, plusAsSpace: boolean): View | undefined {
  const s = v.text;
  if (!s.includes('%') && !(plusAsSpace && s.includes('+'))) return undefined;
  const out = new ViewBuilder(true, v.bytes ? s.length : Buffer.byteLength(s, 'utf8'));
  let changed = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === PERCENT) {
      if (i >= s.length - 2 && CUT_PERCENT.test(s.slice(i))) {
        changed = true;
        break;
      }
      if (HEX2.test(s.slice(i + 1, i + 3))) {
        out.push(Number.parseInt(s.slice(i + 1, i + 3), 16), v.start[i] as number, v.end[i + 2] as number);
        changed = true;
        i += 2;
        continue;
      }
    }
    if (c === PLUS && plusAsSpace) {
      out.push(SPACE, v.start[i] as number, v.end[i] as number);
      changed = true;
    } else if (v.bytes || c < 0x80) out.push(c, v.start[i] as number, v.end[i] as number);
    else {
      // A text character: its UTF-8 bytes, each mapped to the whole character (a pair too; a lone
      // surrogate as U+FFFD, as Buffer.from writes it).
      const point = s.codePointAt(i) as number;
      const width = point > 0xffff ? 2 : 1;
      const code = point >= 0xd800 && point <= 0xdfff ? 0xfffd : point;
      const from = v.start[i] as number;
      const to = v.end[i + width - 1] as number;
      if (code < 0x800) {
        out.push(0xc0 | (code >> 6), from, to);
      } else {
        if (code < 0x10000) out.push(0xe0 | (code >> 12), from, to);
        else {
          out.push(0xf0 | (code >> 18), from, to);
          out.push(0x80 | ((code >> 12) & 0x3f), from, to);
        }
        out.push(0x80 | ((code >> 6) & 0x3f), from, to);
      }
      out.push(0x80 | (code & 0x3f), from, to);
      i += width - 1;
    }
  }
  return changed ? out.view() : undefined;
}

// ---- search -------------------------------------------------------------------------------------

/** The view with ASCII letters lower-cased, length kept (positions stay valid); for hex in either case. */
function lowerOf(view: View): string {
  view.lower ??= /[A-F]/.test(view.text) ? view.text.replace(/[A-F]/g, (c) => c.toLowerCase()) : view.text;
  return view.lower;
}

function occurrences(haystack: string, needle: string, view: View, into: Span[]): void {
  if (needle.length === 0) return;
  for (let i = haystack.indexOf(needle); i !== -1; i = haystack.indexOf(needle, i + 1)) {
    into.push([view.start[i] as number, view.end[i + needle.length - 1] as number]);
  }
}

/** Every span of the original text where a view shows one of the secret's forms whole. */
function matches(views: readonly View[], t: Targets): Span[] {
  const spans: Span[] = [];
  for (const v of views) {
    occurrences(v.text, v.bytes ? t.bytes : t.text, v, spans);
    if (t.textOnly || v.plus === true) continue;
    for (const form of t.base64) occurrences(v.text, form, v, spans);
    if (v.hex === true) occurrences(lowerOf(v), t.hex, v, spans);
  }
  return spans;
}

/** A view ending with the start (at least `min` characters) of `form`: the span from there to the end. */
function tailOf(haystack: string, form: string, min: number, view: View, textEnd: number): Span | undefined {
  const k = tailLength(haystack, form, min);
  return k > 0 ? [view.start[haystack.length - k] as number, textEnd] : undefined;
}

/** A text cut by the excerpt cap may end inside a secret: that tail goes too. */
function tails(views: readonly View[], t: Targets, textEnd: number): Span[] {
  const spans: Span[] = [];
  for (const v of views) {
    if (v.text.length === 0) continue;
    const encoded = !t.textOnly && v.plus !== true;
    const candidates: Array<Span | undefined> = [
      tailOf(v.text, v.bytes ? t.bytes : t.text, MIN_TAIL_CHARS, v, textEnd),
      ...(encoded && v.hex === true ? [tailOf(lowerOf(v), t.hex, MIN_TAIL_HEX, v, textEnd)] : []),
      ...(encoded ? t.base64.map((form) => tailOf(v.text, form, MIN_TAIL_BASE64, v, textEnd)) : []),
    ];
    for (const span of candidates) if (span !== undefined) spans.push(span);
  }
  return spans;
}

function replaceSpans(text: string, spans: Span[]): string {
  spans.sort((a, b) => a[0] - b[0]);
  const merged: Span[] = [];
  for (const [from, to] of spans) {
    const last = merged[merged.length - 1];
    if (last !== undefined && from <= last[1]) last[1] = Math.max(last[1], to);
    else merged.push([from, to]);
  }
  let out = '';
  let at = 0;
  for (const [from, to] of merged) {
    out += `${text.slice(at, from)}${REDACTED}`;
    at = to;
  }
  return out + text.slice(at);
}

/** For tests: the texts of the mapped views and of the string-only ones must be the same. */
export const viewTextsForTest = (text: string, spaces: boolean) => ({
  mapped: viewsOf(text, spaces).map((v) => v.text),
  strings: viewTextsOf(text, spaces).map((v) => v.text),
});
