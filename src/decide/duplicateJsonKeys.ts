/**
 * R5: a decision body whose JSON repeats a key is ambiguous — `JSON.parse` keeps the
 * last value, other parsers keep the first — so a receiver and hookrelay could read different
 * decisions from the same bytes. The decision parser treats such a body as `invalid_response`.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;

/**
 * True when any object in `text` (already known to be valid JSON: `JSON.parse` accepted it)
 * names the same key twice, at any depth. Keys are compared after unescaping, so
 * `"decision"` and `"d\u0065cision"` are the same key. One linear pass, no recursion.
 */
export function hasDuplicateJsonKey(text: string): boolean {
  // One entry per open container: the keys seen so far for an object, null for an array.
  const open: Array<Set<string> | null> = [];
  let expectKey = false;
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      let end = i + 1;
      let escaped = false;
      for (;;) {
        const d = text.charCodeAt(end);
        if (d === BACKSLASH) {
          escaped = true;
          end += 2;
        } else if (d === QUOTE || Number.isNaN(d)) break;
        else end += 1;
      }
      const keys = open[open.length - 1];
      if (expectKey && keys) {
        const key = escaped ? (JSON.parse(text.slice(i, end + 1)) as string) : text.slice(i + 1, end);
        if (keys.has(key)) return true;
        keys.add(key);
        expectKey = false;
      }
      i = end + 1;
      continue;
    }
    if (c === OPEN_OBJECT) {
      open.push(new Set());
      expectKey = true;
    } else if (c === OPEN_ARRAY) {
      open.push(null);
      expectKey = false;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      open.pop();
      expectKey = false;
    } else if (c === COMMA) {
      expectKey = open.length > 0 && open[open.length - 1] !== null;
    }
    i += 1;
  }
  return false;
}
