/**
 * F1: the spool's file format (spool.ts writes it, spoolDrain.ts reads it back). A segment is an
 * append-only text file of lines, one per accepted enqueue call:
 *
 *   <crc32 of the JSON, 8 hex digits> <space> {"v":1,"rows":[…]} \n
 *
 * Each row is the ledger row the call would have inserted — the same delivery id, the hook and
 * the event JSON as prepareEnqueue.ts serialized them (header templates unresolved: no secret is
 * written), `ordered` — so the drain stores exactly what the call answered. A line is written and
 * fsync'd before the call returns; a crash in the middle of a write leaves a last line without its
 * newline (that call never returned: nothing accepted is in it), which the reader skips. A line
 * whose checksum does not match is reported, never stored. Pure: no I/O here.
 */
import { crc32 } from 'node:zlib';
import { z } from 'zod';
import { HookTypeSchema } from '../contract/hookTypes.ts';
import type { NewDelivery } from '../store/deliveriesRepo.ts';
import type { PreparedRow } from './prepareEnqueue.ts';

const SPOOL_FORMAT_VERSION = 1;
/** A segment's file name ends so; anything else in the folder is not read. */
export const SPOOL_SEGMENT_SUFFIX = '.spool';

/**
 * One spooled row: a ledger row and whether it is numbered (SEC-H7). Loose: a field a later
 * version adds to the ledger row (a tenant, say) travels through to the INSERT unchanged.
 */
const SpooledRowSchema = z.looseObject({
  id: z.string().min(1),
  operationId: z.string().min(1),
  eventType: HookTypeSchema,
  hookId: z.string().min(1),
  transport: z.enum(['fetch', 'qstash']),
  occurredAt: z.string().transform((s) => new Date(s)),
  ordered: z.boolean(),
  endpointKey: z.string().nullable().optional(),
  traceContext: z.string().nullable().optional(),
  hook: z.unknown(),
  payload: z.unknown(),
});
export type SpooledRow = NewDelivery & { ordered: boolean };
const RecordSchema = z.object({ v: z.literal(SPOOL_FORMAT_VERSION), rows: z.array(SpooledRowSchema).min(1) });

/** PreparedRow fields that are not written as they are: the parsed hook and event (their JSON is), the job (rebuilt by the worker), the key (keyed calls are never spooled). */
const NOT_WRITTEN = new Set(['hook', 'payload', 'hookJson', 'payloadJson', 'job', 'idempotencyKey']);

function rowJson(row: PreparedRow): string {
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(row)) if (!NOT_WRITTEN.has(key) && value !== undefined) fields[key] = value;
  const head = JSON.stringify(fields);
  // The hook and event JSON the producer already serialized, spliced in (not serialized again).
  return `${head.slice(0, -1)},"hook":${row.hookJson},"payload":${row.payloadJson}}`;
}

/** One call's line, checksum and newline included. */
export function encodeSpoolRecord(rows: readonly PreparedRow[]): Buffer {
  const json = `{"v":${SPOOL_FORMAT_VERSION},"rows":[${rows.map(rowJson).join(',')}]}`;
  const body = Buffer.from(json, 'utf8');
  return Buffer.concat([Buffer.from(`${crc32(body).toString(16).padStart(8, '0')} `, 'latin1'), body, Buffer.from('\n', 'latin1')]);
}

/** What a segment holds: its calls in order, and what could not be read. */
export type DecodedSegment = {
  records: SpooledRow[][];
  /** Lines whose checksum or shape is wrong (1-based line numbers, with their bytes): never stored. */
  corrupt: { line: number; bytes: Buffer }[];
  /** The last line had no newline: a write cut by a crash (its call never returned). */
  tornTail: boolean;
};

const NEWLINE = 0x0a;
const CHECKSUM_CHARS = 8;

export function decodeSpoolSegment(bytes: Buffer): DecodedSegment {
  const records: SpooledRow[][] = [];
  const corrupt: DecodedSegment['corrupt'] = [];
  let start = 0;
  let line = 0;
  while (start < bytes.length) {
    const end = bytes.indexOf(NEWLINE, start);
    if (end === -1) return { records, corrupt, tornTail: true };
    line += 1;
    const rows = decodeLine(bytes.subarray(start, end));
    if (rows) records.push(rows);
    else corrupt.push({ line, bytes: bytes.subarray(start, end) });
    start = end + 1;
  }
  return { records, corrupt, tornTail: false };
}

function decodeLine(line: Buffer): SpooledRow[] | undefined {
  if (line.length <= CHECKSUM_CHARS + 1 || line[CHECKSUM_CHARS] !== 0x20) return undefined;
  const body = line.subarray(CHECKSUM_CHARS + 1);
  if (line.toString('latin1', 0, CHECKSUM_CHARS) !== crc32(body).toString(16).padStart(8, '0')) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  const parsed = RecordSchema.safeParse(value);
  return parsed.success ? (parsed.data.rows as SpooledRow[]) : undefined;
}

/** How many complete lines (accepted calls) `bytes` holds: what `hookrelay stats` and the gauges count, without parsing. */
export function countSpoolLines(bytes: Buffer): number {
  let n = 0;
  for (let i = bytes.indexOf(NEWLINE); i !== -1; i = bytes.indexOf(NEWLINE, i + 1)) n += 1;
  return n;
}
