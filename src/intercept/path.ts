import type { HostErrorReason, JsonValue } from '../contract/agentHooks.ts';
import { isObject } from '../util/isObject.ts';
import { HostError } from './reasons.ts';

/** One step of a transform path: a member name or an array index. */
export type PathSegment = { kind: 'member'; name: string } | { kind: 'index'; index: number };

export type ParsedPath = { ok: true; segments: PathSegment[] } | { ok: false; reason: HostErrorReason; detail: string };

const ROOTS = ['$policy_target', '$target'] as const; // longest first: `$policy_target` is the deprecated alias
const SEGMENT = /^(?:\.([A-Za-z0-9_-]+)|\[(\d+)\]|\["([A-Za-z0-9_-]+)"\])/;

/**
 * Parse per `spec/schema/path-grammar.abnf`. A path not rooted at `$target`
 * (or its alias) is `transform_target_forbidden`; a rooted path that breaks
 * the grammar (`$targets.x`, `$target.`, wildcards, negative indexes) is
 * `transform_invalid`. The verdict gate and application share this parser so
 * they can never disagree on the accepted language.
 */
export function parseTransformPath(path: string): ParsedPath {
  const root = ROOTS.find((r) => path.startsWith(r));
  if (root === undefined) {
    return { ok: false, reason: HostError.TransformTargetForbidden, detail: 'transform.path must be rooted at $target' };
  }
  const segments: PathSegment[] = [];
  let rest = path.slice(root.length);
  while (rest.length > 0) {
    const m = SEGMENT.exec(rest);
    if (m === null) {
      return { ok: false, reason: HostError.TransformInvalid, detail: 'transform.path rejected by the path grammar' };
    }
    if (m[2] !== undefined) segments.push({ kind: 'index', index: Number(m[2]) });
    else segments.push({ kind: 'member', name: (m[1] ?? m[3]) as string });
    rest = rest.slice(m[0].length);
  }
  return { ok: true, segments };
}

/**
 * Transform application: replace the addressed location with `value` and return
 * the new target (the input is not mutated). Every step must exist with a
 * compatible type and the last must name an existing member or index — no
 * creating, no appending. Bare `$target` replaces the whole target.
 */
export function applyTransformPath(
  target: JsonValue,
  segments: readonly PathSegment[],
  value: JsonValue,
): { ok: true; target: JsonValue } | { ok: false; reason: HostErrorReason; detail: string } {
  if (segments.length === 0) return { ok: true, target: structuredClone(value) };
  const root = structuredClone(target);
  let cur: JsonValue = root;
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i];
    const last = i === segments.length - 1;
    if (seg.kind === 'member') {
      if (!isObject(cur) || !Object.hasOwn(cur, seg.name)) return unresolved(i);
      if (last) cur[seg.name] = structuredClone(value);
      else cur = cur[seg.name];
    } else {
      if (!Array.isArray(cur) || seg.index >= cur.length) return unresolved(i);
      if (last) cur[seg.index] = structuredClone(value);
      else cur = cur[seg.index];
    }
  }
  return { ok: true, target: root };
}

function unresolved(step: number): { ok: false; reason: HostErrorReason; detail: string } {
  return { ok: false, reason: HostError.TransformInvalid, detail: `transform.path did not resolve at segment ${step + 1}` };
}
