/**
 * FAULT-cli-postgres (Q13): with Postgres unreachable the admin CLI says so — which store, which
 * variable, what to check — and exits 1, instead of a driver message, a stack or a hang.
 */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { startHookrelay } from '../support/hookrelayProcess.ts';

async function deadPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

describe('FAULT-cli-postgres (Q13)', () => {
  it('FAULT-cli-postgres: `deliveries list` and `stats` against an unreachable Postgres → one line naming the store and DATABASE_URL, exit 1, no stack (Q13)', async () => {
    const url = `postgres://postgres@127.0.0.1:${await deadPort()}/test`;
    for (const args of [['deliveries', 'list'], ['stats']]) {
      const cli = startHookrelay(args, { DATABASE_URL: url }, { inheritEnv: false });
      const code = await cli.exited;
      expect(code, cli.output()).toBe(1);
      expect(cli.output().trim()).toBe(
        'hookrelay: the ledger store (Postgres at DATABASE_URL) is unreachable (ECONNREFUSED): check that it runs and that DATABASE_URL points at it',
      );
    }
  });
});
