import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { EventValidationError, isHookrelayError, CliUsageError } from '../contract/errors.ts';
import { HOOK_TYPES, type HookType } from '../contract/hookTypes.ts';
import type { SerializedHook } from '../contract/hook.ts';
import { printJson, printText } from './output.ts';
import { isObject } from '../util/isObject.ts';

function readEvent(file: string, operationId: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new CliUsageError(`cannot read --file ${file}`);
  }
  let event: unknown;
  try {
    event = JSON.parse(text);
  } catch {
    throw new CliUsageError(`--file ${file} is not JSON`);
  }
  if (!isObject(event)) throw new CliUsageError(`--file ${file} must hold a JSON object (the event)`);
  return { operationId, ...(event as Record<string, unknown>) };
}

export function registerEnqueueCommand(program: Command): void {
  program
    .command('enqueue')
    .description("enqueue an event for an operation's persisted hooks (for testing receivers)")
    .requiredOption('--operation <id>', 'operation id whose persisted caller hooks receive the event')
    .requiredOption('--type <type>', 'hook type, e.g. onComplete')
    .requiredOption('--file <path>', 'the event as a JSON object')
    .option('--json', 'JSON output')
    .addHelpText('after', '\nExample:\n  echo \'{"reason":"done"}\' > done.json && hookrelay enqueue --operation op_123 --type onComplete --file done.json')
    .action(async (flags: { operation: string; type: string; file: string; json?: boolean }) => {
      if (!(HOOK_TYPES as readonly string[]).includes(flags.type))
        throw new CliUsageError(`--type must be one of the 16 hook types, e.g. onComplete (got "${flags.type}")`);
      const event = readEvent(flags.file, flags.operation);
      const [{ withContext }, { loadOperationHooks }, { createHookProducer }] = await Promise.all([
        import('./context.ts'),
        import('../store/operationsRepo.ts'),
        import('../queue/producer.ts'),
      ]);
      await withContext(async (ctx) => {
        const hooks = await loadOperationHooks(ctx.store.db, flags.operation);
        if (!hooks) throw new CliUsageError(`operation "${flags.operation}" has no persisted hooks`);
        const producer = createHookProducer({ store: ctx.store, redisUrl: ctx.settings.REDIS_URL, queueName: ctx.settings.HOOKRELAY_QUEUE });
        try {
          const result = await producer
            .enqueue({ operationId: flags.operation, type: flags.type as HookType, event, hooks: hooks as SerializedHook[] })
            .catch((err: unknown) => {
              // The event is the file's: say so (the message names the path and rule, never the text).
              // D10: over the payload cap too (it exited 1 naming no file).
              if (err instanceof EventValidationError || (isHookrelayError(err) && err.code === 'HOOKRELAY_PAYLOAD_TOO_LARGE'))
                throw new CliUsageError(`--file ${flags.file}: ${err.message}`);
              throw err;
            });
          if (result.deliveryIds.length === 0) throw new CliUsageError(`no persisted hook of operation "${flags.operation}" matches ${flags.type}`);
          if (flags.json) printJson(result);
          else printText(`${result.deliveryIds.join('\n')}\n${result.queued ? '' : 'stored, not yet queued (Redis?): the worker will enqueue them\n'}`);
        } finally {
          await producer.close();
        }
      });
    });
}
