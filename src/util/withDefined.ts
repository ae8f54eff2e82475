/**
 * The members of an object literal that are not `undefined`, in the order given, typed so that
 * each member that may be `undefined` becomes optional (absent, never `undefined`: the shape
 * exactOptionalPropertyTypes asks for). `...withDefined({ a, b: x.b })` replaces one
 * `...(a !== undefined ? { a } : {})` per member; `null`, `0`, `''` and `false` are kept.
 */
export type WithDefined<T> = Flatten<
  { [K in keyof T as undefined extends T[K] ? never : K]: T[K] } & { [K in keyof T as undefined extends T[K] ? K : never]?: Exclude<T[K], undefined> }
>;

type Flatten<T> = { [K in keyof T]: T[K] } & {};

export function withDefined<T extends object>(members: T): WithDefined<T> {
  const defined: Record<string, unknown> = {};
  for (const key in members) {
    const value = members[key];
    if (value !== undefined) defined[key] = value;
  }
  return defined as WithDefined<T>;
}
