import { userInfo } from 'node:os';
import type { Command } from 'commander';
import { APPROVAL_STATUSES, type Approval, type ApprovalAnswer } from '../contract/approval.ts';
import { TENANT_PATTERN } from '../contract/tenant.ts';
import { CliUsageError } from '../contract/errors.ts';
import { EXIT } from './exitCodes.ts';
import { formatTable, iso, printError, printJson, printJsonArray, printText, shown } from './output.ts';
import { withDefined } from '../util/withDefined.ts';

type ListFlags = { status?: string; operation?: string; tenant?: string; limit?: number; json?: boolean };
type ShowFlags = { tenant?: string; json?: boolean };
type DecideFlags = { tenant?: string; json?: boolean; reason?: string; by?: string };

function tenantFlag(value: string | undefined): string | undefined {
  if (value !== undefined && !TENANT_PATTERN.test(value)) throw new CliUsageError('--tenant must be 1–128 characters of A-Z a-z 0-9 . _ : -');
  return value;
}

/** The JSON an approval prints as (dates ISO). */
function approvalJson(a: Approval): Record<string, unknown> {
  return {
    ...a,
    requestedAt: a.requestedAt.toISOString(),
    expiresAt: a.expiresAt.toISOString(),
    decidedAt: a.decidedAt?.toISOString() ?? null,
    appliedAt: a.appliedAt?.toISOString() ?? null,
  };
}

function detailText(a: Approval): string {
  const rows: Array<[string, string]> = [
    ['id', a.id],
    ['status', a.status],
    ['tenant', a.tenant],
    ['operation', a.operationId],
    ['kind', a.kind],
    ['point', a.point],
    ['tool call', a.toolCall ? `${a.toolCall.name} (${a.toolCall.id})` : '-'],
    ['identity', a.contextIdentity],
    ['requested', iso(a.requestedAt)],
    ['expires', iso(a.expiresAt)],
    ['escalated', [a.escalation.reason, a.escalation.message].filter(Boolean).join(': ') || '-'],
    ['decided by', a.decidedBy ? `${a.decidedBy} at ${iso(a.decidedAt)}` : '-'],
    ['reason', a.reason ?? '-'],
    ['applied', a.appliedAt ? `${a.outcome ?? '-'} at ${iso(a.appliedAt)}` : '-'],
  ];
  const context = (JSON.stringify(a.context, null, 2) ?? 'null')
    .split('\n')
    .map((l) => `  ${shown(l)}`)
    .join('\n');
  return `${rows.map(([k, v]) => `${k.padEnd(11)} ${shown(v)}`).join('\n')}\ncontext\n${context}\n`;
}

function defaultDecider(): string {
  try {
    return `cli:${userInfo().username}`;
  } catch {
    return 'cli';
  }
}

/** `hookrelay approvals list | show | approve | reject` (A3): the operator's view of every tenant, `--tenant` for one. */
export function registerApprovalsCommand(program: Command, parsePositiveInt: (v: string, flag: string) => number): void {
  const approvals = program.command('approvals').description('durable approvals of escalated tool calls and human interventions (docs/approvals.md)');

  approvals
    .command('list')
    .description('approvals, newest first (default: pending ones)')
    .option('--status <status>', `${APPROVAL_STATUSES.join(' | ')} | all (default pending)`)
    .option('--operation <id>', 'operation id')
    .option('--tenant <name>', 'only this tenant’s approvals')
    .option('--limit <n>', 'at most this many (default 50)', (v) => parsePositiveInt(v, '--limit'))
    .option('--json', 'a JSON array of approvals, one per line ([] when none match)')
    .addHelpText('after', '\nExamples:\n  hookrelay approvals list\n  hookrelay approvals list --status all --tenant acme --json')
    .action(async (flags: ListFlags) => {
      const status = flags.status ?? 'pending';
      if (status !== 'all' && !(APPROVAL_STATUSES as readonly string[]).includes(status))
        throw new CliUsageError(`--status must be one of ${APPROVAL_STATUSES.join(', ')}, all`);
      const tenant = tenantFlag(flags.tenant);
      const [{ withContext }, { listApprovalRows, toApproval, expireDueApprovals }] = await Promise.all([
        import('./context.ts'),
        import('../store/approvalsRepo.ts'),
      ]);
      await withContext(async (ctx) => {
        await expireDueApprovals(ctx.store.db, withDefined({ tenant })); // what is shown as pending is still decidable
        const rows = await listApprovalRows(ctx.store.db, {
          ...withDefined({ tenant }),
          ...(status !== 'all' ? { status: status as Approval['status'] } : {}),
          ...withDefined({ operationId: flags.operation }),
          limit: flags.limit ?? 50,
        });
        const list = rows.map(toApproval);
        if (flags.json) return printJsonArray(list.map(approvalJson));
        if (list.length === 0) {
          process.stdout.write(`no ${status === 'all' ? '' : `${status} `}approvals match\n`);
          return;
        }
        process.stdout.write(
          formatTable(
            ['ID', 'STATUS', 'TENANT', 'OPERATION', 'TOOL', 'REQUESTED', 'EXPIRES', 'DECIDED BY'],
            list.map((a) => [a.id, a.status, a.tenant, a.operationId, a.toolCall?.name ?? a.point, iso(a.requestedAt), iso(a.expiresAt), a.decidedBy ?? '-']),
          ),
        );
      });
    });

  approvals
    .command('show')
    .description('one approval: its call (redacted context), identity, expiry and decision')
    .argument('<id>', 'approval id (apr_…)')
    .option('--tenant <name>', 'refuse it unless it is this tenant’s')
    .option('--json', 'the approval as one JSON object')
    .addHelpText('after', '\nExample:\n  hookrelay approvals show apr_01J… --json')
    .action(async (id: string, flags: ShowFlags) => {
      const tenant = tenantFlag(flags.tenant);
      const [{ withContext }, { getApprovalRow, toApproval }] = await Promise.all([import('./context.ts'), import('../store/approvalsRepo.ts')]);
      await withContext(async (ctx) => {
        const row = await getApprovalRow(ctx.store.db, id, tenant);
        if (row === undefined) throw new CliUsageError(`no approval ${shown(id)}${tenant ? ` for tenant ${tenant}` : ''}`);
        const approval = toApproval(row);
        if (flags.json) return printJson(approvalJson(approval));
        printText(detailText(approval));
      });
    });

  for (const answer of ['approve', 'reject'] as const satisfies readonly ApprovalAnswer[]) {
    approvals
      .command(answer)
      .description(
        answer === 'approve'
          ? 'approve a pending request: the identical call, resumed, runs once'
          : 'reject a pending request: the resumed call is denied with your reason',
      )
      .argument('<id>', 'approval id (apr_…)')
      .option('--reason <text>', 'why (shown to the agent’s operator and kept in the audit)')
      .option('--by <name>', 'who decides (default cli:<your user name>)')
      .option('--tenant <name>', 'refuse it unless it is this tenant’s')
      .option('--json', 'the decided approval as one JSON object')
      .addHelpText(
        'after',
        `\nExample:\n  hookrelay approvals ${answer} apr_01J… --reason "${answer === 'approve' ? 'checked the path' : 'not on production'}"`,
      )
      .action(async (id: string, flags: DecideFlags) => decide(id, answer, flags));
  }
}

async function decide(id: string, answer: ApprovalAnswer, flags: DecideFlags): Promise<void> {
  const tenant = tenantFlag(flags.tenant);
  const [{ withContext }, { decideApproval, checkDecisionInput }, { ApprovalNotFoundError, ApprovalNotPendingError, ApprovalTokenError }, { toApproval }] =
    await Promise.all([import('./context.ts'), import('../approvals/decideApproval.ts'), import('../contract/errors.ts'), import('../store/approvalsRepo.ts')]);
  let checked: { by: string; reason: string | null };
  try {
    checked = checkDecisionInput(flags.by ?? defaultDecider(), flags.reason);
  } catch (err) {
    throw new CliUsageError(err instanceof Error ? err.message.replace(/^decided by/, '--by').replace(/^reason/, '--reason') : String(err));
  }
  await withContext(async (ctx) => {
    try {
      const row = await decideApproval(ctx.store.db, { id, answer, by: checked.by, reason: checked.reason ?? undefined, tenant });
      const approval = toApproval(row);
      if (flags.json) return printJson(approvalJson(approval));
      printText(`${approval.id} ${approval.status} by ${shown(approval.decidedBy ?? checked.by)}\n`);
    } catch (err) {
      if (err instanceof ApprovalNotFoundError) throw new CliUsageError(`no approval ${shown(id)}${tenant ? ` for tenant ${tenant}` : ''}`);
      if (err instanceof ApprovalNotPendingError || err instanceof ApprovalTokenError) {
        printError(err.message);
        process.exitCode = EXIT.partial;
        return;
      }
      throw err;
    }
  });
}
