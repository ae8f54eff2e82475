/**
 * F1: what the spools under a data dir hold, read from the files — for `hookrelay stats`, the
 * worker's `/readyz` and its gauges on the same host (a producer knows its own: `spoolStatus()`).
 * Cheap to call often: a segment only grows, so each read counts the lines added since the last
 * one (a file that shrank or was replaced is counted again).
 */
import { open, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { SPOOL_REJECTED_FILE } from './spoolDrain.ts';
import { countSpoolLines, SPOOL_SEGMENT_SUFFIX } from './spoolFormat.ts';

export type SpoolSummary = {
  /** Calls waiting to be drained into the ledger, in every spool folder under `<dataDir>/spool`. */
  events: number;
  bytes: number;
  /** When the oldest waiting call was spooled (its segment's time); null when none waits. */
  oldestAt: Date | null;
  /** Calls the ledger refused at drain time, set aside in a spool folder's rejected.jsonl. */
  rejected: number;
};

type Counted = { ino: number; size: number; lines: number };

/** A reader of `<dataDir>/spool`; keep one per process so its counts carry over between reads. */
export function createSpoolReader(dataDir: string): () => Promise<SpoolSummary> {
  const root = path.resolve(dataDir, 'spool');
  const counted = new Map<string, Counted>();

  const lines = async (file: string): Promise<number | undefined> => {
    const info = await stat(file).catch(() => undefined);
    if (!info) return undefined;
    const known = counted.get(file);
    const from = known && known.ino === info.ino && known.size <= info.size ? known : { ino: info.ino, size: 0, lines: 0 };
    if (from.size === info.size) return from.lines;
    const handle = await open(file, 'r').catch(() => undefined);
    if (!handle) return undefined;
    try {
      const bytes = Buffer.alloc(info.size - from.size);
      const { bytesRead } = await handle.read(bytes, 0, bytes.length, from.size);
      const next = { ino: info.ino, size: from.size + bytesRead, lines: from.lines + countSpoolLines(bytes.subarray(0, bytesRead)) };
      counted.set(file, next);
      return next.lines;
    } finally {
      await handle.close();
    }
  };

  return async () => {
    const summary: SpoolSummary = { events: 0, bytes: 0, oldestAt: null, rejected: 0 };
    const folders = await readdir(root).catch(() => [] as string[]);
    const seen = new Set<string>();
    for (const folder of folders) {
      const dir = path.join(root, folder);
      const names = await readdir(dir).catch(() => [] as string[]);
      for (const name of names) {
        const file = path.join(dir, name);
        if (name === SPOOL_REJECTED_FILE) {
          summary.rejected += (await lines(file)) ?? 0;
          seen.add(file);
          continue;
        }
        if (!name.endsWith(SPOOL_SEGMENT_SUFFIX)) continue;
        const n = await lines(file);
        if (n === undefined) continue;
        seen.add(file);
        summary.events += n;
        summary.bytes += counted.get(file)?.size ?? 0;
        const ms = Number(name.slice(0, 15));
        if (n > 0 && Number.isFinite(ms) && (summary.oldestAt === null || ms < summary.oldestAt.getTime())) summary.oldestAt = new Date(ms);
      }
    }
    for (const file of counted.keys()) if (!seen.has(file)) counted.delete(file);
    return summary;
  };
}
