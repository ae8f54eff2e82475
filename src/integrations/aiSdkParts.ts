import type { LanguageModelMiddleware } from 'ai';
import type { JsonObject, JsonValue } from '../contract/agentHooks.ts';
import { jsonEqual } from '../intercept/json/jsonEqual.ts';
import { isObject } from '../util/isObject.ts';
import { parseArgs } from './runBridge.ts';

/**
 * The AI SDK model output beside text and client tool calls — reasoning, files, sources and the
 * tool calls the provider ran itself — as the `response` members `post_model_call` judges
 * (`reasoning`, `files`, `sources`, `provider_tool_calls`), and back: the parts the caller gets
 * as the verdict left those members. Pure.
 */

type WrapOptions = Parameters<NonNullable<LanguageModelMiddleware['wrapGenerate']>>[0];
type GenerateResult = Awaited<ReturnType<WrapOptions['doGenerate']>>;
type StreamResult = Awaited<ReturnType<WrapOptions['doStream']>>;
export type StreamPart = StreamResult['stream'] extends ReadableStream<infer P> ? P : never;
export type ContentPart = GenerateResult['content'][number];
type Part = ContentPart | StreamPart;

type FilePart = Extract<Part, { type: 'file' | 'reasoning-file' }>;
type SourcePart = Extract<Part, { type: 'source' }>;
type ToolCallPart = Extract<Part, { type: 'tool-call' }>;
type ToolResultPart = Extract<Part, { type: 'tool-result' }>;

/** Parts that only frame the response (never model content): kept whatever the verdict. */
const FRAMING = new Set(['stream-start', 'response-metadata', 'ping']);

function base64(data: Uint8Array | string): string {
  return typeof data === 'string' ? data : Buffer.from(data).toString('base64');
}

function fileMember(p: FilePart): JsonObject {
  const m: JsonObject = { type: p.type, media_type: p.mediaType };
  if (p.data.type === 'data') m.data = base64(p.data.data);
  else m.url = String(p.data.url);
  return m;
}

function sourceMember(p: SourcePart): JsonObject {
  const m: JsonObject = { source_type: p.sourceType, id: p.id };
  if (p.sourceType === 'url') m.url = p.url;
  else {
    m.media_type = p.mediaType;
    if (p.filename !== undefined) m.filename = p.filename;
  }
  if (p.title !== undefined) m.title = p.title;
  return m;
}

function providerCallMember(call: ToolCallPart | undefined, result: ToolResultPart | undefined): JsonObject {
  const m: JsonObject = { id: (call ?? result)!.toolCallId, name: (call ?? result)!.toolName };
  if (call !== undefined) m.args = parseArgs(call.input);
  if (result !== undefined) {
    m.result = result.result as JsonValue;
    if (result.isError === true) m.is_error = true;
  }
  return m;
}

export function isClientToolCall(part: { type: string; providerExecuted?: boolean }): part is ToolCallPart {
  return part.type === 'tool-call' && part.providerExecuted !== true;
}

function isProviderPart(p: Part): p is ToolCallPart | ToolResultPart {
  return (p.type === 'tool-call' && p.providerExecuted === true) || p.type === 'tool-result';
}

function reasoningText(parts: readonly Part[]): string | undefined {
  let text: string | undefined;
  for (const p of parts) {
    if (p.type === 'reasoning') text = (text ?? '') + p.text;
    else if (p.type === 'reasoning-delta') text = (text ?? '') + p.delta;
    else if (p.type === 'reasoning-start') text ??= '';
  }
  return text;
}

/** Provider-run calls, each with its result, in arrival order. */
function providerCalls(parts: readonly Part[]): Array<{ call?: ToolCallPart; result?: ToolResultPart; member: JsonObject }> {
  const byId = new Map<string, { call?: ToolCallPart; result?: ToolResultPart }>();
  for (const p of parts) {
    if (!isProviderPart(p)) continue;
    const entry = byId.get(p.toolCallId) ?? {};
    if (p.type === 'tool-call') entry.call = p;
    else entry.result = p;
    byId.set(p.toolCallId, entry);
  }
  return [...byId.values()].map((e) => ({ ...e, member: providerCallMember(e.call, e.result) }));
}

/** The members `post_model_call` judges beside the text and client tool calls; undefined when the response has none. */
export function membersOf(parts: readonly Part[]): JsonObject | undefined {
  const members: JsonObject = {};
  const reasoning = reasoningText(parts);
  if (reasoning !== undefined) members.reasoning = reasoning;
  const files = parts.filter((p): p is FilePart => p.type === 'file' || p.type === 'reasoning-file').map(fileMember);
  if (files.length > 0) members.files = files;
  const sources = parts.filter((p): p is SourcePart => p.type === 'source').map(sourceMember);
  if (sources.length > 0) members.sources = sources;
  const calls = providerCalls(parts);
  if (calls.length > 0) members.provider_tool_calls = calls.map((c) => c.member);
  return Object.keys(members).length > 0 ? members : undefined;
}

function entries(members: JsonObject | undefined, key: string): JsonObject[] {
  const v = members?.[key];
  return Array.isArray(v) ? v.filter((e): e is JsonObject => isObject(e)) : [];
}

/** Each judged entry: the original part it still equals (first unused), else `rebuild` of it (undefined drops it). */
function matched<P>(originals: Array<{ part: P; member: JsonObject }>, judged: JsonObject[], rebuild: (e: JsonObject) => P | undefined): P[] {
  const used = new Set<number>();
  const out: P[] = [];
  for (const e of judged) {
    const i = originals.findIndex((o, k) => !used.has(k) && jsonEqual(o.member, e));
    if (i >= 0) {
      used.add(i);
      out.push(originals[i]!.part);
      continue;
    }
    const rebuilt = rebuild(e);
    if (rebuilt !== undefined) out.push(rebuilt);
  }
  return out;
}

function rebuiltFile(e: JsonObject): FilePart | undefined {
  if (typeof e.media_type !== 'string' || (e.type !== 'file' && e.type !== 'reasoning-file')) return undefined;
  const type = e.type;
  if (typeof e.data === 'string') return { type, mediaType: e.media_type, data: { type: 'data', data: e.data } } as FilePart;
  if (typeof e.url === 'string' && URL.canParse(e.url)) return { type, mediaType: e.media_type, data: { type: 'url', url: new URL(e.url) } } as FilePart;
  return undefined;
}

function rebuiltSource(e: JsonObject): SourcePart | undefined {
  if (typeof e.id !== 'string') return undefined;
  if (e.source_type === 'url' && typeof e.url === 'string')
    return { type: 'source', sourceType: 'url', id: e.id, url: e.url, ...(typeof e.title === 'string' ? { title: e.title } : {}) };
  if (e.source_type === 'document' && typeof e.media_type === 'string' && typeof e.title === 'string')
    return {
      type: 'source',
      sourceType: 'document',
      id: e.id,
      mediaType: e.media_type,
      title: e.title,
      ...(typeof e.filename === 'string' ? { filename: e.filename } : {}),
    };
  return undefined;
}

/**
 * A provider-run call cannot be called back: one whose id, name or arguments a verdict changed is
 * withheld with its result; one whose result alone changed gets the judged result.
 */
function judgedProviderCalls(parts: readonly Part[], judged: JsonObject[]): Part[] {
  const originals = providerCalls(parts);
  const out: Part[] = [];
  for (const e of judged) {
    const o = originals.find((c) => c.member.id === e.id && c.member.name === e.name && jsonEqual(c.member.args, e.args));
    if (o === undefined) continue;
    if (o.call !== undefined) out.push(o.call);
    if (o.result !== undefined && 'result' in e) {
      const same = jsonEqual(o.member.result, e.result) && o.member.is_error === e.is_error;
      out.push(same ? o.result : { ...o.result, result: (e.result ?? '') as NonNullable<JsonValue>, isError: e.is_error === true });
    }
  }
  return out;
}

function reasoningParts(text: string, stream: boolean): Part[] {
  if (!stream) return [{ type: 'reasoning', text }];
  const id = 'hookrelay-reasoning';
  return [
    { type: 'reasoning-start', id },
    { type: 'reasoning-delta', id, delta: text },
    { type: 'reasoning-end', id },
  ];
}

const REASONING = new Set(['reasoning', 'reasoning-start', 'reasoning-delta', 'reasoning-end']);
const JUDGED = new Set([...REASONING, 'file', 'reasoning-file', 'source']);

/**
 * The non-text parts of a response as the verdict left its members, in `parts`' order where kept.
 * `textChanged`: the verdict rewrote the text. Reasoning is the same model's text: a verdict that
 * rewrote the text and left the reasoning as it was withholds the reasoning (a redaction of the
 * answer never leaves what it redacted in the reasoning); write `$target.reasoning` to keep it.
 * Text, client tool calls and the finish part are the caller's to place.
 */
export function judgedNonText<P extends Part>(
  parts: readonly P[],
  before: JsonObject | undefined,
  after: JsonObject | undefined,
  options: { textChanged: boolean; stream: boolean; skip: (p: P) => boolean },
): P[] {
  const rest = parts.filter((p) => !options.skip(p));
  if (!options.textChanged && jsonEqual(before ?? {}, after ?? {})) return rest;
  const out: Part[] = [];
  const reasoning = after?.reasoning;
  if (typeof reasoning === 'string' && reasoning !== '' && !(options.textChanged && reasoning === before?.reasoning)) {
    if (reasoning === before?.reasoning) out.push(...rest.filter((p) => REASONING.has(p.type)));
    else out.push(...reasoningParts(reasoning, options.stream));
  }
  const files = rest.filter((p): p is P & FilePart => p.type === 'file' || p.type === 'reasoning-file');
  out.push(
    ...matched(
      files.map((part) => ({ part: part as Part, member: fileMember(part) })),
      entries(after, 'files'),
      rebuiltFile,
    ),
  );
  const sources = rest.filter((p): p is P & SourcePart => p.type === 'source');
  out.push(
    ...matched(
      sources.map((part) => ({ part: part as Part, member: sourceMember(part) })),
      entries(after, 'sources'),
      rebuiltSource,
    ),
  );
  out.push(...judgedProviderCalls(rest, entries(after, 'provider_tool_calls')));
  const calls = new Set(out.filter((p): p is ToolCallPart => p.type === 'tool-call').map((p) => p.toolCallId));
  const framing: Part[] = [];
  for (const p of rest) {
    if (JUDGED.has(p.type) || isProviderPart(p)) continue;
    if (FRAMING.has(p.type)) framing.push(p);
    else if (p.type === 'tool-approval-request') {
      if (calls.has(p.toolCallId)) out.push(p);
    } else if (p.type !== 'raw') out.push(p); // a raw provider chunk may carry what the verdict changed: withheld
  }
  return [...framing, ...out] as P[];
}
