/**
 * PERF-38 (issue 38): an enqueue's steps are small named functions, one module each, so a CPU
 * profile and the profile table of docs/performance.md can name them: prepare → store → number → add jobs →
 * answer, run for a group of calls by groupCommit.ts; createHookProducer keeps only settings,
 * connections and the span.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import * as addStoredJobs from '../../../src/queue/addStoredJobs.ts';
import * as answerCalls from '../../../src/queue/answerCalls.ts';
import * as enqueueBodies from '../../../src/queue/enqueueBodies.ts';
import * as groupCommit from '../../../src/queue/groupCommit.ts';
import * as prepareEnqueue from '../../../src/queue/prepareEnqueue.ts';
import * as storeRows from '../../../src/queue/storeRows.ts';

const queueDir = path.resolve(import.meta.dirname, '../../../src/queue');
const lines = (file: string) => readFileSync(path.join(queueDir, file), 'utf8').split('\n');

describe('PERF-38 the steps of an enqueue', () => {
  it('PERF-38: each step is a named function in its own small module', () => {
    const steps: Array<[string, Record<string, unknown>, string]> = [
      ['prepareEnqueue.ts', prepareEnqueue, 'prepareItems'],
      ['storeRows.ts', storeRows, 'storeGroup'],
      ['enqueueBodies.ts', enqueueBodies, 'numberOrderedRows'],
      ['addStoredJobs.ts', addStoredJobs, 'addStoredJobs'],
      ['answerCalls.ts', answerCalls, 'answerCalls'],
      ['groupCommit.ts', groupCommit, 'createGroupCommit'],
    ];
    for (const [file, mod, name] of steps) {
      expect(typeof mod[name], `${file} exports ${name}`).toBe('function');
      expect(lines(file).length, `${file} stays small`).toBeLessThanOrEqual(200);
    }
  });

  it('PERF-38: createHookProducer no longer holds the steps (was 176 lines)', () => {
    const source = lines('producer.ts');
    const start = source.findIndex((l) => l.startsWith('export function createHookProducer'));
    const end = source.findIndex((l, i) => i > start && l === '}');
    expect(start).toBeGreaterThanOrEqual(0);
    expect(end - start + 1).toBeLessThanOrEqual(80);
    const body = source.slice(start, end + 1).join('\n');
    for (const step of ['prepareItems(', 'createGroupCommit(']) expect(body).toContain(step);
    for (const inlined of ['insertDeliveries', 'assignSequences', 'addDeliveryJobs', 'buildDeliveryBody']) expect(body).not.toContain(inlined);
  });
});
