/**
 * A deliberately small JSON Schema (2020-12) checker covering the keywords
 * the CTK vector schema uses: type, enum, const, required, properties,
 * additionalProperties, items, min/max, pattern, minItems, oneOf/anyOf/allOf,
 * not, if/then/else and $ref (local `#/$defs/...` or a registered `$id`).
 */

export type Schema = boolean | { [keyword: string]: unknown };

export class SchemaRegistry {
  readonly #byId = new Map<string, Schema>();

  add(schema: Schema): void {
    if (typeof schema === 'object' && typeof schema.$id === 'string') this.#byId.set(schema.$id, schema);
  }

  /** Returns the first violation as `path: message`, or null when `value` is valid. */
  validate(schema: Schema, value: unknown): string | null {
    return this.#check(schema, value, '$', schema);
  }

  #resolve(ref: string, root: Schema): Schema {
    if (ref.startsWith('#/')) {
      let cur: unknown = root;
      for (const part of ref.slice(2).split('/')) cur = (cur as Record<string, unknown>)[part];
      if (cur === undefined) throw new Error(`unresolved $ref ${ref}`);
      return cur as Schema;
    }
    const found = this.#byId.get(ref);
    if (found === undefined) throw new Error(`unresolved $ref ${ref}`);
    return found;
  }

  #check(schema: Schema, v: unknown, path: string, root: Schema): string | null {
    if (schema === true) return null;
    if (schema === false) return `${path}: no value is allowed here`;
    const s = schema;
    if (typeof s.$ref === 'string') {
      const target = this.#resolve(s.$ref, root);
      const err = this.#check(target, v, path, s.$ref.startsWith('#') ? root : target);
      if (err !== null) return err;
    }
    if (s.type !== undefined) {
      const types = Array.isArray(s.type) ? (s.type as string[]) : [s.type as string];
      if (!types.some((t) => hasType(v, t))) return `${path}: expected ${types.join('|')}`;
    }
    if (Array.isArray(s.enum) && !s.enum.some((e) => deepEqual(e, v))) return `${path}: not one of the allowed values`;
    if ('const' in s && !deepEqual(s.const, v)) return `${path}: must equal the constant`;
    if (typeof v === 'string' && typeof s.pattern === 'string' && !new RegExp(s.pattern).test(v)) return `${path}: does not match ${s.pattern}`;
    if (typeof v === 'number' && typeof s.minimum === 'number' && v < s.minimum) return `${path}: below minimum`;
    if (Array.isArray(v)) {
      if (typeof s.minItems === 'number' && v.length < s.minItems) return `${path}: too few items`;
      if (s.items !== undefined) {
        for (let i = 0; i < v.length; i++) {
          const err = this.#check(s.items as Schema, v[i], `${path}[${i}]`, root);
          if (err !== null) return err;
        }
      }
    }
    if (isObject(v)) {
      for (const key of (s.required as string[] | undefined) ?? []) if (!(key in v)) return `${path}: missing required "${key}"`;
      const props = (s.properties as Record<string, Schema> | undefined) ?? {};
      for (const [key, item] of Object.entries(v)) {
        if (key in props) {
          const err = this.#check(props[key], item, `${path}.${key}`, root);
          if (err !== null) return err;
        } else if (s.additionalProperties !== undefined) {
          const err = this.#check(s.additionalProperties as Schema, item, `${path}.${key}`, root);
          if (err !== null) return err;
        }
      }
    }
    for (const sub of (s.allOf as Schema[] | undefined) ?? []) {
      const err = this.#check(sub, v, path, root);
      if (err !== null) return err;
    }
    if (Array.isArray(s.anyOf) && !s.anyOf.some((sub: Schema) => this.#check(sub, v, path, root) === null)) return `${path}: matches no anyOf branch`;
    if (Array.isArray(s.oneOf)) {
      const n = s.oneOf.filter((sub: Schema) => this.#check(sub, v, path, root) === null).length;
      if (n !== 1) return `${path}: matches ${n} oneOf branches, want exactly 1`;
    }
    if (s.not !== undefined && this.#check(s.not as Schema, v, path, root) === null) return `${path}: matches a forbidden shape`;
    if (s.if !== undefined) {
      const branch = this.#check(s.if as Schema, v, path, root) === null ? s.then : s.else;
      if (branch !== undefined) {
        const err = this.#check(branch as Schema, v, path, root);
        if (err !== null) return err;
      }
    }
    return null;
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function hasType(v: unknown, t: string): boolean {
  switch (t) {
    case 'object':
      return isObject(v);
    case 'array':
      return Array.isArray(v);
    case 'string':
      return typeof v === 'string';
    case 'boolean':
      return typeof v === 'boolean';
    case 'null':
      return v === null;
    case 'number':
      return typeof v === 'number' || typeof v === 'bigint'; // bigint: an integer token beyond 2^53, read losslessly
    case 'integer':
      return Number.isInteger(v) || typeof v === 'bigint';
    default:
      return false;
  }
}

/** JSON value equality (member order does not matter). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => k in b && deepEqual(a[k], b[k]));
  }
  return false;
}
