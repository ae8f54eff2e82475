/**
 * Durable approvals, runnable as is: `npx tsx examples/approvals.ts` (docs/approvals.md).
 *
 * An agent's `delete_file` tool is escalated by policy: a person must approve each call. The
 * approval queue turns the escalation into a durable request and the run ends "approval pending"
 * (an `ApprovalPendingError` naming the request). An approver decides — here through the queue's
 * API; in production with `hookrelay approvals approve <id>`, the console, or a chat button — and
 * a resumed run presenting the identical call gets the decision, once. Each "process" below is a
 * fresh queue, bundle and run over the same store: nothing carries over in memory.
 *
 * With DATABASE_URL set it uses that Postgres (run `npx hookrelay migrate` first); without, an
 * embedded store in a temporary folder. It imports hookrelay by its package name (package.json
 * `exports` → dist/): run `npm run build` after changing src/.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ALLOW, ApprovalPendingError, InterceptionBlockedError, Verdict, createAgentHooks } from 'hookrelay';
import { createApprovalQueue, migrateStore, openStore, type Store } from 'hookrelay/store';

const dataDir = process.env.DATABASE_URL ? undefined : mkdtempSync(path.join(os.tmpdir(), 'hookrelay-approvals-'));
const store: Store = await openStore(process.env.DATABASE_URL ? { databaseUrl: process.env.DATABASE_URL } : { dataDir: dataDir as string });
await migrateStore(store);
const operationId = `cleanup-${Date.now()}`;
const deleted: string[] = [];

/** Policy: deleting a file needs a person (a liftable deny). */
const policy = (ctx: { interception_point: string; tool_call?: unknown }) =>
  ctx.interception_point === 'pre_tool_call' && (ctx.tool_call as { name?: string }).name === 'delete_file'
    ? Verdict.escalate('needs_approval', 'deleting a file needs a person')
    : ALLOW;

/** One agent process: its own queue and bundle, one run that asks to delete `file`. */
async function agentProcess(label: string, file: string): Promise<string | undefined> {
  const queue = createApprovalQueue({ store, waitMs: 100 });
  const hooks = createAgentHooks({ interceptors: [policy], resolver: queue.resolver });
  // The run's session is `<operationId>/<uuid>`: a new session per run, the approvals belong to the operation.
  const run = hooks.startRun({ input: 'tidy up the reports', sessionId: `${operationId}/${crypto.randomUUID()}` });
  let pending: string | undefined;
  try {
    const outcome = await run.toolCall({ id: 'call-1', name: 'delete_file', args: { path: file } }, (args) => {
      deleted.push(String(args.path));
      return 'deleted';
    });
    console.log(`${label}: delete_file ${outcome.status === 'completed' ? 'ran' : `denied (${outcome.reason})`}; files deleted so far: ${deleted.length}`);
  } catch (err) {
    if (err instanceof ApprovalPendingError) {
      pending = err.approval.id;
      console.log(`${label}: approval pending for delete_file ${file} (the deny stands until a person decides)`);
    } else if (err instanceof InterceptionBlockedError) {
      console.log(`${label}: denied (${err.record.verdict.reason})`);
    } else throw err;
  }
  await run.end();
  await queue.close();
  return pending;
}

const first = await agentProcess('run 1', '/reports/2025.csv');

// The approver, somewhere else (`hookrelay approvals approve <id> --reason …` does the same).
const approver = createApprovalQueue({ store });
const decided = await approver.approve(first as string, { by: 'alice', reason: 'old report' });
console.log(`approver: ${decided.status} by ${decided.decidedBy} (${decided.reason})`);

await agentProcess('run 2 (resumed, identical call)', '/reports/2025.csv');
await agentProcess('run 3 (the same call again)', '/reports/2025.csv');
await agentProcess('run 4 (arguments changed)', '/');

const pendingNow = await approver.list({ status: 'pending' });
console.log(`pending approvals: ${pendingNow.length}; the approved one was applied: ${(await approver.get(first as string))?.outcome}`);
await approver.close();
await store.close();
if (dataDir) rmSync(dataDir, { recursive: true, force: true });
