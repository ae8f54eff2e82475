import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { openStore, rowsOf } from '../../../src/store/db.ts';
import { embeddedStartParams, EMBEDDED_POSTGRES_SETTINGS, extractTarGz, PGDATA_TEMPLATE_FILE, seedFromTemplate } from '../../../src/store/embeddedTemplate.ts';
import { sql } from 'drizzle-orm';

/** One ustar entry (header + data padded to 512). */
function tarEntry(name: string, body: string, type = '0'): Buffer {
  const header = Buffer.alloc(512);
  header.write(name, 0, 100, 'utf8');
  header.write('0000644\0', 100);
  header.write(`${Buffer.byteLength(body).toString(8).padStart(11, '0')}\0`, 124);
  header.write(type, 156);
  header.write('ustar\0', 257);
  const data = Buffer.from(body);
  return Buffer.concat([header, data, Buffer.alloc((512 - (data.length % 512)) % 512)]);
}

const dirs: string[] = [];
const scratch = () => {
  const d = mkdtempSync(path.join(tmpdir(), 'hookrelay-template-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('embedded store template (issue 27)', () => {
  it('extractTarGz: writes files and folders; refuses an entry that climbs out of the folder', async () => {
    const root = scratch();
    const good = path.join(root, 'good.tar.gz');
    writeFileSync(
      good,
      gzipSync(Buffer.concat([tarEntry('/base/', '', '5'), tarEntry('/base/1', 'x'.repeat(700)), tarEntry('/PG_VERSION', '18\n'), Buffer.alloc(1024)])),
    );
    await extractTarGz(good, path.join(root, 'out'));
    expect(readFileSync(path.join(root, 'out/base/1'), 'utf8')).toBe('x'.repeat(700));
    expect(readFileSync(path.join(root, 'out/PG_VERSION'), 'utf8')).toBe('18\n');

    const evil = path.join(root, 'evil.tar.gz');
    writeFileSync(evil, gzipSync(Buffer.concat([tarEntry('../../escaped', 'pwned'), Buffer.alloc(1024)])));
    await expect(extractTarGz(evil, path.join(root, 'out2'))).rejects.toThrow(/unsafe entry/);
    expect(existsSync(path.join(root, 'escaped'))).toBe(false);

    const link = path.join(root, 'link.tar.gz');
    writeFileSync(link, gzipSync(Buffer.concat([tarEntry('/a', '/etc/passwd', '2'), Buffer.alloc(1024)])));
    await expect(extractTarGz(link, path.join(root, 'out3'))).rejects.toThrow(/unsupported entry type/);
  });

  it('seedFromTemplate: never touches a folder that already holds something', async () => {
    const pgdata = path.join(scratch(), 'pgdata');
    mkdirSync(pgdata);
    writeFileSync(path.join(pgdata, 'keep'), 'mine');
    expect(await seedFromTemplate(pgdata)).toBe(false);
    expect(readFileSync(path.join(pgdata, 'keep'), 'utf8')).toBe('mine');
  });

  it.runIf(existsSync(PGDATA_TEMPLATE_FILE))(
    'a new embedded folder is seeded from the shipped template (migrated) and runs with the one-machine settings',
    async () => {
      const dataDir = scratch();
      const store = await openStore({ dataDir });
      try {
        const settings = rowsOf<{ name: string; setting: string; unit: string | null }>(
          await store.db.execute(sql`select name, setting, unit from pg_settings where name in ('shared_buffers', 'max_connections')`),
        );
        const sharedBuffers = settings.find((s) => s.name === 'shared_buffers')!;
        // 16MB in 8 kB pages; PGlite's default is ~160 MB.
        expect(Number(sharedBuffers.setting) * 8).toBeLessThanOrEqual(32 * 1024);
        expect(settings.find((s) => s.name === 'max_connections')?.setting).toBe(EMBEDDED_POSTGRES_SETTINGS.max_connections);
        // The template carries the migrations: the ledger's table is there before migrateStore runs.
        const tables = rowsOf<{ n: number }>(await store.db.execute(sql`select count(*)::int as n from pg_tables where tablename = 'deliveries'`));
        expect(tables[0]?.n).toBe(1);
      } finally {
        await store.close();
      }
      expect(existsSync(path.join(dataDir, 'pgdata/PG_VERSION'))).toBe(true);
      expect(embeddedStartParams(['--single'])).toEqual(['--single', ...Object.entries(EMBEDDED_POSTGRES_SETTINGS).flatMap(([k, v]) => ['-c', `${k}=${v}`])]);
    },
    60_000,
  );
});
