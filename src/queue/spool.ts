/**
 * F1: the producer's local spool — an outbox on this host's disk for the calls the ledger could
 * not take (Postgres unreachable). An enqueue that is spooled returns only once its line is
 * written and fsync'd (spoolFormat.ts), so a call that returned is in the ledger or in a file here.
 *
 * - Files: `<HOOKRELAY_DATA_DIR>/spool/<ms>-<seq>-<instance>.spool`, append-only, mode 0600 in a
 *   0700 folder (they hold events). Names sort by time: segments are drained oldest first.
 * - Bounded: `maxBytes` over every segment this producer holds; past it a call is refused
 *   (`full`), never a byte dropped. A segment is closed ("sealed") at `segmentBytes` or when a drain
 *   takes it, so drained files go away one by one.
 * - Concurrent calls share one write and one fsync (group commit); a failed write is cut back to
 *   the last whole line, so no torn line ever sits before a later one.
 * - Who drains: the producer itself (spoolDrain.ts), when Postgres answers — a worker cannot see
 *   another host's disk. A segment belongs to the instance in its name; a live producer touches its
 *   files every HEARTBEAT_MS, so a file not touched for STALE_MS belongs to a producer that is gone
 *   (crashed, or closed with Postgres away) and is claimed by renaming it (atomic: one claimer
 *   wins) by the next producer started on the same data dir, which drains it first.
 */
import { randomBytes } from 'node:crypto';
import { ensurePrivateDir, ownFileProblem, ownFolderProblem } from '../store/privateFiles.ts';
import { type FileHandle, mkdir, open, readdir, readFile, rename, stat, unlink, utimes } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../observability/logger.ts';
import type { PreparedRow } from './prepareEnqueue.ts';
import { SpoolWriteError } from '../contract/errors.ts';
import type { SpoolStatus } from './types.ts';
import { countSpoolLines, encodeSpoolRecord, SPOOL_SEGMENT_SUFFIX } from './spoolFormat.ts';

/** A segment is sealed once it holds this much, so a drained part of the spool is removed early. */
const SEGMENT_BYTES = 4 * 1024 * 1024;
/** A live producer touches its segments this often. */
const HEARTBEAT_MS = 10_000;
/** A segment of another instance not touched for this long belongs to a producer that is gone. */
const STALE_MS = 60_000;
const FILE_MODE = 0o600;
const DIR_MODE = 0o700;

export type Spool = {
  /** Writes one call's rows and fsyncs them; throws SpoolWriteError when it cannot (nothing written). */
  append(rows: readonly PreparedRow[]): Promise<void>;
  /** True while calls wait in the spool (or are being written): a new call must go behind them. */
  holding(): boolean;
  /**
   * The segments to drain, oldest first: this instance's closed ones (the open one is sealed and
   * its writes awaited) and those of producers that are gone (claimed). Empty when there are none.
   */
  takeSegments(): Promise<string[]>;
  /** A drained segment: removed. */
  release(segment: string): Promise<void>;
  status(): SpoolStatus;
  /** Stops the heartbeat; waits for writes; the segments left are handed over (claimable at once by the next producer). */
  close(): Promise<void>;
};

type Segment = { path: string; bytes: number; events: number; createdAt: Date; handle?: FileHandle; writing?: Promise<unknown> };
type Pending = { bytes: Buffer; resolve(): void; reject(error: unknown): void };

export function createSpool(options: { dir: string; maxBytes: number; logger: Logger; segmentBytes?: number }): Spool {
  const { dir, maxBytes, logger } = options;
  const segmentBytes = options.segmentBytes ?? SEGMENT_BYTES;
  const instance = randomBytes(6).toString('hex');
  const segments = new Map<string, Segment>();
  let current: Segment | undefined;
  let queue: Pending[] = [];
  let writing = false;
  let seq = 0;
  let closed = false;
  let dirReady: Promise<void> | undefined;
  let heartbeat: NodeJS.Timeout | undefined;

  const totalBytes = () => {
    let n = 0;
    for (const s of segments.values()) n += s.bytes;
    return n;
  };

  const ensureDir = () => {
    // W7: the spool holds events the ledger will take as the app's own: a folder of ours, 0700.
    dirReady ??= mkdir(dir, { recursive: true, mode: DIR_MODE }).then(() => ensurePrivateDir(dir));
    dirReady.catch(() => (dirReady = undefined)); // retried by the next write
    return dirReady;
  };

  const startHeartbeat = () => {
    if (heartbeat || closed) return;
    heartbeat = setInterval(() => {
      const now = new Date();
      for (const s of segments.values()) void utimes(s.path, now, now).catch(() => undefined);
    }, HEARTBEAT_MS);
    heartbeat.unref();
  };

  const openSegment = async (): Promise<Segment> => {
    if (current) return current;
    await ensureDir();
    const createdAt = new Date();
    seq += 1;
    const name = `${String(createdAt.getTime()).padStart(15, '0')}-${String(seq).padStart(6, '0')}-${instance}${SPOOL_SEGMENT_SUFFIX}`;
    const file = path.join(dir, name);
    const handle = await open(file, 'a', FILE_MODE);
    await syncDir(dir); // the new file's entry survives a crash too
    const segment: Segment = { path: file, bytes: 0, events: 0, createdAt, handle };
    segments.set(file, segment);
    current = segment;
    startHeartbeat();
    return segment;
  };

  /** Closes a segment for writing (its pending write finishes first). */
  const seal = async (segment: Segment): Promise<void> => {
    if (current === segment) current = undefined;
    await segment.writing?.catch(() => undefined);
    const handle = segment.handle;
    segment.handle = undefined;
    await handle?.close().catch(() => undefined);
    if (segment.events === 0 && segment.bytes === 0) {
      segments.delete(segment.path);
      await unlink(segment.path).catch(() => undefined);
    }
  };

  const writeBatch = async (batch: Pending[]): Promise<void> => {
    // The bound: calls that do not fit are refused, in order; nothing of them is written.
    const accepted: Pending[] = [];
    let total = totalBytes();
    for (const p of batch) {
      if (total + p.bytes.length > maxBytes) {
        p.reject(new SpoolWriteError('spool_full', `the local spool is full (${total} of ${maxBytes} bytes, HOOKRELAY_SPOOL_MAX_BYTES)`));
      } else {
        accepted.push(p);
        total += p.bytes.length;
      }
    }
    if (accepted.length === 0) return;
    let segment: Segment | undefined;
    try {
      segment = await openSegment();
      const bytes = Buffer.concat(accepted.map((p) => p.bytes));
      const handle = segment.handle!;
      const write = (async () => {
        for (let off = 0; off < bytes.length; ) off += (await handle.write(bytes, off, bytes.length - off)).bytesWritten;
        await handle.datasync();
      })();
      segment.writing = write;
      await write;
      segment.bytes += bytes.length;
      segment.events += accepted.length;
      for (const p of accepted) p.resolve();
      if (segment.bytes >= segmentBytes) await seal(segment);
    } catch (error) {
      // Whatever part was written is cut off again (a torn line would hide the lines after it);
      // if even that fails the segment is closed and the next call starts a new one.
      if (segment?.handle) await segment.handle.truncate(segment.bytes).catch(() => seal(segment!));
      const code = (error as { code?: unknown }).code;
      const refusal = new SpoolWriteError('spool_unwritable', `the local spool at ${dir} could not be written${typeof code === 'string' ? ` (${code})` : ''}`, {
        cause: error,
      });
      for (const p of accepted) p.reject(refusal);
    }
  };

  const flush = async () => {
    writing = true;
    try {
      while (queue.length > 0) {
        const batch = queue;
        queue = [];
        await writeBatch(batch);
      }
    } finally {
      writing = false;
    }
  };

  /** Segments of producers that are gone, renamed to this instance (oldest first, by name). */
  const claimOrphans = async (): Promise<void> => {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      return; // no spool folder yet: nothing to claim
    }
    // Only segments another user cannot have planted: a folder of ours no one else may enter, files of ours.
    const folderProblem = ownFolderProblem(dir, { anyAccess: true });
    if (folderProblem !== undefined) {
      logger.warn({ dir }, `spool folder ${folderProblem}: its segments are not drained`);
      return;
    }
    for (const name of names.sort()) {
      if (!name.endsWith(SPOOL_SEGMENT_SUFFIX)) continue;
      const parts = parseSegmentName(name);
      if (!parts || parts.instance === instance) continue;
      const from = path.join(dir, name);
      const fileProblem = ownFileProblem(from);
      if (fileProblem !== undefined) {
        logger.warn({ segment: from }, `spool segment ${fileProblem}: not drained`);
        continue;
      }
      const info = await stat(from).catch(() => undefined);
      if (!info || Date.now() - info.mtimeMs < STALE_MS) continue;
      const to = path.join(dir, `${parts.stamp}-${instance}${SPOOL_SEGMENT_SUFFIX}`);
      try {
        await rename(from, to); // atomic: another producer claiming it too gets ENOENT
      } catch {
        continue;
      }
      const now = new Date();
      await utimes(to, now, now).catch(() => undefined);
      const events = countSpoolLines(await readFile(to));
      segments.set(to, { path: to, bytes: info.size, events, createdAt: parts.createdAt });
      startHeartbeat();
      logger.info({ segment: to, events }, 'claimed a spool segment left by a producer that is gone; it is drained into the ledger first');
    }
  };

  return {
    append(rows) {
      if (closed) return Promise.reject(new SpoolWriteError('spool_unwritable', 'the spool is closed'));
      const bytes = encodeSpoolRecord(rows);
      return new Promise<void>((resolve, reject) => {
        queue.push({ bytes, resolve, reject });
        if (!writing) void flush();
      });
    },
    holding: () => writing || queue.length > 0 || segments.size > 0,
    async takeSegments() {
      if (current) await seal(current);
      await claimOrphans();
      return [...segments.values()]
        .filter((s) => s !== current)
        .map((s) => s.path)
        .sort((a, b) => path.basename(a).localeCompare(path.basename(b)));
    },
    async release(segment) {
      segments.delete(segment);
      await unlink(segment).catch(() => undefined);
      await syncDir(dir);
      if (segments.size === 0) {
        clearInterval(heartbeat);
        heartbeat = undefined;
      }
    },
    status() {
      let events = 0;
      let bytes = 0;
      let oldestAt: Date | null = null;
      for (const s of segments.values()) {
        events += s.events;
        bytes += s.bytes;
        if (s.events > 0 && (oldestAt === null || s.createdAt < oldestAt)) oldestAt = s.createdAt;
      }
      return { dir, events, bytes, oldestAt };
    },
    async close() {
      closed = true;
      clearInterval(heartbeat);
      heartbeat = undefined;
      while (writing || queue.length > 0) await new Promise((r) => setImmediate(r));
      for (const s of [...segments.values()]) {
        await seal(s);
        // Handed over: an mtime in the past makes it claimable at once by the next producer here.
        if (segments.has(s.path)) await utimes(s.path, 0, 0).catch(() => undefined);
      }
    },
  };
}

function parseSegmentName(name: string): { stamp: string; instance: string; createdAt: Date } | undefined {
  const m = /^(\d{15})-(\d{6})-([0-9a-f]+)\.spool$/.exec(name);
  if (!m) return undefined;
  return { stamp: `${m[1]}-${m[2]}`, instance: m[3]!, createdAt: new Date(Number(m[1])) };
}

/** fsync a folder, so a file created or removed in it stays so after a crash (best effort where a platform cannot). */
async function syncDir(dir: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(dir, 'r');
    await handle.sync();
  } catch {
    // Not every platform can fsync a folder (Windows); the file's own fsync still holds its lines.
  } finally {
    await handle?.close().catch(() => undefined);
  }
}
