/**
 * The overview's queue-depth chart: this console process samples the queue's job counts every
 * 15 s and keeps six hours of samples in memory. Redis not answering skips a sample.
 */
import type { OperatorQueue } from '../admin/operatorQueue.ts';
import { JOB_COUNT_STATES } from '../queue/queueKeys.ts';

const SAMPLE_EVERY_MS = 15_000;
const SAMPLES_KEPT = 6 * 60 * 4; // six hours of 15 s samples

type QueueCounts = Record<string, number>;

export type QueueSampler = {
  /** The queue's job counts now, or undefined when Redis does not answer. */
  counts(): Promise<QueueCounts | undefined>;
  /** The samples so far: unix seconds and the depth (waiting + active + delayed + prioritized). */
  series(): { t: number[]; depth: number[] };
  close(): void;
};

export function createQueueSampler(operator: OperatorQueue, enabled: boolean): QueueSampler {
  const depth: Array<[number, number]> = [];
  const counts = () => operator.jobCounts(JOB_COUNT_STATES);
  const sample = async () => {
    const c = await counts();
    if (c === undefined) return;
    depth.push([Math.floor(Date.now() / 1000), (c.waiting ?? 0) + (c.active ?? 0) + (c.delayed ?? 0) + (c.prioritized ?? 0)]);
    if (depth.length > SAMPLES_KEPT) depth.splice(0, depth.length - SAMPLES_KEPT);
  };
  let timer: NodeJS.Timeout | undefined;
  if (enabled) {
    void sample().catch(() => undefined);
    timer = setInterval(() => void sample().catch(() => undefined), SAMPLE_EVERY_MS);
    timer.unref();
  }
  return {
    counts,
    series: () => ({ t: depth.map((d) => d[0]), depth: depth.map((d) => d[1]) }),
    close() {
      if (timer) clearInterval(timer);
    },
  };
}
