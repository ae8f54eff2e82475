/**
 * Docker does not run on the development machines or in CI, so the deployment files are checked
 * statically here: the Dockerfile (stages, user, data folder, healthcheck, CMD), docker-compose.yml
 * (loopback-only ports, no default passwords, worker variables against the settings schema,
 * DATABASE_URL against the postgres service) and .env.example. The expected names, defaults and
 * ports come from the code (settings schema, defaults, env hooks, HTTP server), not from a copy.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { ENV_HOOK_VARIABLES } from '../../src/config/envHooks.ts';
import { loadSettings, SETTING_NAMES, SettingsSchema } from '../../src/config/settings.ts';
import * as D from '../../src/contract/defaults.ts';
import { OTEL_WORKER_VARIABLES } from '../../src/worker/otelSdk.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

// ---------------------------------------------------------------- Dockerfile

type Instruction = { op: string; args: string; line: number };

/** Instructions with continuation lines joined and comments dropped (as Docker reads them). */
function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const first = lines[i]!.trim();
    if (first === '' || first.startsWith('#')) continue;
    const start = i;
    let joined = first;
    while (joined.endsWith('\\') && i + 1 < lines.length) {
      joined = joined.slice(0, -1);
      const next = lines[++i]!.trim();
      if (next.startsWith('#')) continue; // comment lines inside a continuation are skipped
      joined += ` ${next}`;
    }
    const match = /^(\S+)\s*(.*)$/s.exec(joined)!;
    out.push({ op: match[1]!.toUpperCase(), args: match[2]!.trim(), line: start + 1 });
  }
  return out;
}

/** Instructions split at each FROM (the FROM first in each stage). */
function stages(instructions: Instruction[]): Instruction[][] {
  const result: Instruction[][] = [];
  for (const ins of instructions) {
    if (ins.op === 'FROM') result.push([ins]);
    else result.at(-1)?.push(ins);
  }
  return result;
}

/** JSON (exec) form of CMD / HEALTHCHECK CMD; shell form is refused (signals would go to sh). */
function execForm(args: string): string[] {
  const parsed = JSON.parse(args) as unknown;
  if (!Array.isArray(parsed) || !parsed.every((a) => typeof a === 'string')) throw new Error(`not an exec-form array: ${args}`);
  return parsed;
}

/** `node <flags…> <script> <args…>` → its parts (a leading `exec` allowed, as in npm scripts). */
function nodeCommand(argv: string[]): { flags: string[]; script: string; args: string[] } {
  const words = argv[0] === 'exec' ? argv.slice(1) : argv;
  if (words[0] !== 'node') throw new Error(`not a node command: ${argv.join(' ')}`);
  const rest = words.slice(1);
  const scriptAt = rest.findIndex((w) => !w.startsWith('-'));
  return { flags: rest.slice(0, scriptAt), script: path.posix.normalize(rest[scriptAt]!), args: rest.slice(scriptAt + 1) };
}

const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
const dockerfile = parseDockerfile(read('Dockerfile'));
const dockerStages = stages(dockerfile);
const finalStage = dockerStages.at(-1) ?? [];
const buildStages = dockerStages.slice(0, -1);
const lastOf = (stage: Instruction[], op: string) => stage.filter((i) => i.op === op).at(-1);
const envOf = (stage: Instruction[]): Record<string, string> => {
  const env: Record<string, string> = {};
  for (const ins of stage.filter((i) => i.op === 'ENV')) {
    for (const m of ins.args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S+)/g)) env[m[1]!] = m[2]!.replace(/^"|"$/g, '');
  }
  return env;
};

describe('Dockerfile', () => {
  it('is multi-stage: a named build stage that installs with dev deps, builds and prunes, then a runtime stage copying from it', () => {
    expect(dockerStages.length).toBeGreaterThanOrEqual(2);
    const build = buildStages.find((s) => /\sAS\s+build$/i.test(s[0]!.args));
    expect(build, 'a stage `FROM … AS build`').toBeDefined();
    const runs = build!.filter((i) => i.op === 'RUN').map((i) => i.args);
    const at = (re: RegExp) => runs.findIndex((r) => re.test(r));
    const ci = at(/\bnpm ci\b(?![^&]*--omit=dev)/);
    const buildScript = Object.entries(pkg.scripts).find(([, cmd]) => /^tsc\b.*tsconfig\.build\.json/.test(cmd))?.[0];
    expect(buildScript, 'package.json has a tsc build script').toBeDefined();
    const built = at(new RegExp(`\\bnpm run ${buildScript}\\b`));
    const pruned = at(/\bnpm prune --omit=dev\b/);
    expect(ci, 'npm ci with dev dependencies').toBeGreaterThanOrEqual(0);
    expect(built, `npm run ${buildScript} after npm ci`).toBeGreaterThan(ci);
    expect(pruned, 'npm prune --omit=dev after the build').toBeGreaterThan(built);
    const copied = finalStage.filter((i) => i.op === 'COPY' && /--from=build\b/.test(i.args)).map((i) => i.args.split(/\s+/).at(-2));
    expect(copied).toEqual(expect.arrayContaining(['/app/node_modules', '/app/dist']));
    for (const s of dockerStages) expect(s[0]!.args).toMatch(/^node:20-slim\b/);
  });

  it('runtime stage: NODE_ENV=production, and everything the bin needs at run time is copied in', () => {
    expect(envOf(finalStage).NODE_ENV).toBe('production');
    const targets = finalStage.filter((i) => i.op === 'COPY').map((i) => path.posix.normalize(i.args.split(/\s+/).at(-1)!.replace(/^\.\//, '')));
    // bin → dist/cli; dist/store/migrationsFolder → ../../migrations; dist/cli/main reads ../../package.json;
    // dist/console serves ../../assets/console.
    for (const needed of ['package.json', 'node_modules', 'dist', 'bin', 'migrations', 'assets']) expect(targets, needed).toContain(needed);
  });

  it('runtime stage runs as a non-root USER, set after the last RUN', () => {
    const user = lastOf(finalStage, 'USER');
    expect(user, 'USER in the final stage').toBeDefined();
    expect(user!.args.split(':')[0]).not.toMatch(/^(root|0)$/);
    const lastRun = lastOf(finalStage, 'RUN')!;
    expect(user!.line).toBeGreaterThan(lastRun.line);
  });

  it('the embedded data folder (HOOKRELAY_DATA_DIR) is created and chowned to that user before USER', () => {
    const env = envOf(finalStage);
    const workdir = lastOf(finalStage, 'WORKDIR')!.args;
    const dataDir = path.posix.resolve(workdir, env.HOOKRELAY_DATA_DIR ?? D.DEFAULT_DATA_DIR);
    const user = lastOf(finalStage, 'USER')!;
    const userName = user.args.split(':')[0]!;
    const runsBefore = finalStage.filter((i) => i.op === 'RUN' && i.line < user.line).map((i) => i.args);
    const quoted = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    expect(
      runsBefore.some((r) => new RegExp(`mkdir -p (\\S+ )*${quoted(dataDir)}(\\s|$)`).test(r)),
      `mkdir -p ${dataDir}`,
    ).toBe(true);
    expect(
      runsBefore.some((r) => new RegExp(`chown (-R )?${quoted(userName)}(:\\S+)? (\\S+ )*${quoted(dataDir)}(\\s|$)`).test(r)),
      `chown ${userName} ${dataDir}`,
    ).toBe(true);
  });

  it('HEALTHCHECK uses node (no curl in slim) on a path the HTTP server serves, at HOOKRELAY_HTTP_PORT (default), and EXPOSE matches', () => {
    const hc = lastOf(finalStage, 'HEALTHCHECK');
    expect(hc, 'HEALTHCHECK in the final stage').toBeDefined();
    const cmd = execForm(hc!.args.replace(/^(--\S+\s+)*CMD\s+/, ''));
    expect(cmd[0]).toBe('node');
    const url = /http:\/\/127\.0\.0\.1:(?:'\+\(process\.env\.HOOKRELAY_HTTP_PORT\|\|(\d+)\)\+'|(\d+))(\/[a-z]+)/.exec(cmd.join(' '));
    expect(url, 'a loopback URL on the HTTP port').not.toBeNull();
    expect(Number(url![1] ?? url![2])).toBe(D.DEFAULT_HTTP_PORT);
    expect(read('src/observability/httpServer.ts')).toContain(`path === '${url![3]}'`);
    expect(lastOf(finalStage, 'EXPOSE')?.args).toBe(String(D.DEFAULT_HTTP_PORT));
  });

  it("CMD runs the compiled workers/delivery.ts with package.json start's node flags", () => {
    const start = nodeCommand(pkg.scripts.start!.split(/\s+/));
    const cmd = nodeCommand(execForm(lastOf(finalStage, 'CMD')!.args));
    // dist/workers/delivery.js is what tsconfig.workers.json emits for workers/delivery.ts, in the build script.
    expect(cmd.script).toBe('dist/workers/delivery.js');
    expect(cmd.args).toEqual([]);
    const workersBuild = JSON.parse(read('tsconfig.workers.json').replace(/^\s*\/\/.*$/gm, '')) as { compilerOptions: { rootDir: string; outDir: string } };
    const source = path.posix
      .join(workersBuild.compilerOptions.rootDir, path.posix.relative(workersBuild.compilerOptions.outDir, cmd.script))
      .replace(/\.js$/, '.ts');
    expect(existsSync(path.join(ROOT, source)), source).toBe(true);
    expect(pkg.scripts.build).toContain('tsc -p tsconfig.workers.json');
    expect(cmd.flags).toEqual(start.flags);
    // The bin `start` runs carries the same flags in its shebang (`./bin/hookrelay.mjs` run directly).
    expect(
      read(start.script)
        .split('\n')[0]!
        .split(/\s+/)
        .filter((w) => w.startsWith('--')),
    ).toEqual(start.flags);
  });

  it('.dockerignore keeps local state out of the context but not what the Dockerfile copies', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
    for (const must of ['node_modules', 'dist', '.git', '.hookrelay', 'test', 'bench', '.env']) expect(ignored, must).toContain(must);
    const sources = dockerfile
      .filter((i) => i.op === 'COPY' && !/--from=/.test(i.args))
      .flatMap((i) =>
        i.args
          .split(/\s+/)
          .filter((a) => !a.startsWith('--'))
          .slice(0, -1),
      );
    for (const source of sources) {
      expect(existsSync(path.join(ROOT, source)), source).toBe(true);
      // Ignored by itself or a parent folder, unless a later `!` line takes it back.
      const normalized = path.posix.normalize(source);
      const parents = normalized.split('/').map((_, i, parts) => parts.slice(0, i + 1).join('/'));
      const excludedAt = ignored.findLastIndex((l) => parents.includes(l));
      const includedAt = ignored.lastIndexOf(`!${normalized}`);
      expect(excludedAt === -1 || includedAt > excludedAt, `${source} is copied, so it must not be ignored`).toBe(true);
    }
  });
});

// ---------------------------------------------------------------- docker-compose.yml / .env.example

type Service = {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, string | number | boolean>;
  env_file?: string | string[];
  ports?: (string | { host_ip?: string; published?: string | number; target?: number })[];
  healthcheck?: { test: string[] };
};

const compose = parseYaml(read('docker-compose.yml'), { merge: true }) as { services: Record<string, Service> };
const services = compose.services;
const envExample = read('.env.example');
/** Names in .env.example: `NAME=` lines, commented (`# NAME=`) or not. */
const envExampleNames = [...new Set([...envExample.matchAll(/^#?\s*([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]!))];
/** Names documented in docs/configuration.md's table (first column), `_SUFFIX` shorthands expanded. */
const documentedNames = (() => {
  const names = new Set<string>();
  for (const row of read('docs/configuration.md')
    .split('\n')
    .filter((l) => l.startsWith('| `'))) {
    const cell = row.split('|')[1]!;
    let prefix = '';
    for (const [, name] of cell.matchAll(/`([A-Z_][A-Z0-9_]*)`/g)) {
      if (name!.startsWith('_')) names.add(`${prefix}${name}`);
      else {
        names.add(name!);
        prefix = name!.replace(/_[A-Z]+$/, '');
      }
    }
  }
  return names;
})();
const ENV_HOOK_NAMES: string[] = Object.values(ENV_HOOK_VARIABLES);
/** What a hookrelay container may be given: the settings schema's names and the environment hooks'. */
const ACCEPTED: string[] = [...SETTING_NAMES, ...ENV_HOOK_NAMES, ...OTEL_WORKER_VARIABLES];

/** Compose interpolation: ${V}, ${V:-d}, ${V-d}, ${V:?m}, ${V?m}, $$. Throws where compose would refuse. */
function interpolate(value: string, vars: Record<string, string>): string {
  return value.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?])([^}]*))?\}/g, (whole, name?: string, colon?: string, kind?: string, arg?: string) => {
    if (whole === '$$') return '$';
    const v = vars[name!];
    const missing = v === undefined || (colon === ':' && v === '');
    if (kind === '?' && missing) throw new Error(`${name}: ${arg}`);
    if (kind === '-' && missing) return arg!;
    return v ?? '';
  });
}
const interpolatedNames = (text: string) => [...text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]!);
/** What a user puts in .env: the required passwords (any value), nothing else. */
const SAMPLE_ENV = { POSTGRES_PASSWORD: 'pg-secret', REDIS_PASSWORD: 'redis-secret' };
const resolvedEnv = (service: Service, vars: Record<string, string> = SAMPLE_ENV) =>
  Object.fromEntries(Object.entries(service.environment ?? {}).map(([k, v]) => [k, interpolate(String(v), vars)]));

describe('docker-compose.yml', () => {
  it('has redis, postgres, a migrate job and the worker, with healthchecks on the long-running ones', () => {
    expect(Object.keys(services)).toEqual(expect.arrayContaining(['redis', 'postgres', 'migrate', 'worker']));
    for (const name of ['redis', 'postgres', 'worker']) expect(services[name]!.healthcheck?.test?.length, `${name} healthcheck`).toBeGreaterThan(0);
    expect(services.worker!.healthcheck!.test.join(' ')).toContain(`127.0.0.1:${services.worker!.environment!.HOOKRELAY_HTTP_PORT}/readyz`);
  });

  it("the worker runs the image's CMD (the compiled workers/delivery.ts)", () => {
    expect(services.worker!.command).toEqual(execForm(lastOf(finalStage, 'CMD')!.args));
  });

  it('publishes every port on 127.0.0.1 only', () => {
    const published = Object.entries(services).flatMap(([name, s]) => (s.ports ?? []).map((p) => [name, p] as const));
    expect(published.length).toBeGreaterThan(0);
    for (const [name, port] of published) {
      if (typeof port === 'string') expect(port, `${name}: ${port}`).toMatch(/^127\.0\.0\.1:\d+:\d+$/);
      else expect(port.host_ip, `${name}: long-syntax port`).toBe('127.0.0.1');
    }
  });

  it('has no literal password: every *PASSWORD* value and the URLs credentials come from a required ${...} (no default)', () => {
    const text = read('docker-compose.yml');
    for (const [name, s] of Object.entries(services)) {
      for (const [key, value] of Object.entries(s.environment ?? {})) {
        if (/PASSWORD|AUTH/.test(key)) expect(String(value), `${name}.${key}`).toMatch(/^\$\{[A-Z_]+:\?[^}]+\}$/);
      }
    }
    // Postgres and Redis URLs carry the password by reference, and compose refuses to start without it.
    for (const key of ['DATABASE_URL', 'REDIS_URL'] as const) {
      const raw = String(services.worker!.environment![key]);
      expect(raw, key).toMatch(/:\$\{[A-Z_]+PASSWORD:\?[^}]+\}@/);
    }
    expect(() => resolvedEnv(services.worker!, {}), 'no passwords given → compose refuses').toThrow(/PASSWORD/);
    expect(services.redis!.command?.join(' ')).toMatch(/--requirepass \$\{REDIS_PASSWORD:\?[^}]+\}/);
    expect(text).not.toMatch(/\$\{[A-Z_]*PASSWORD:?-/); // no ${..._PASSWORD:-default}
  });

  it('passes the worker and the migrate job only variables the settings schema (or the environment hooks) accept, and they parse', () => {
    for (const name of ['worker', 'migrate']) {
      const env = services[name]!.environment ?? {};
      expect(Object.keys(env).length).toBeGreaterThan(0);
      for (const key of Object.keys(env)) expect(ACCEPTED, `${name}: ${key}`).toContain(key);
      expect(services[name]!.env_file, `${name}: an env_file would pass .env through unchecked`).toBeUndefined();
      // The values as compose resolves them (from a .env with just the passwords) are valid settings.
      expect(() => loadSettings(resolvedEnv(services[name]!)), name).not.toThrow();
    }
  });

  it("the worker's ${NAME:-default} defaults are the code's defaults", () => {
    let checked = 0;
    for (const [key, raw] of Object.entries(services.worker!.environment!)) {
      const m = /^\$\{([A-Z_]+):-([^}]+)\}$/.exec(String(raw));
      if (!m || !(SETTING_NAMES as string[]).includes(key)) continue;
      expect(m[1], `${key} reads its own name from .env`).toBe(key);
      const field = SettingsSchema.shape[key as keyof typeof SettingsSchema.shape];
      expect(field.parse(m[2]), key).toEqual(field.parse(undefined));
      checked++;
    }
    expect(checked).toBeGreaterThan(0);
  });

  it('uses the code default ports: worker HTTP 8787 published as itself, Redis and Postgres on their standard ports', () => {
    const env = resolvedEnv(services.worker!);
    expect(Number(env.HOOKRELAY_HTTP_PORT)).toBe(D.DEFAULT_HTTP_PORT);
    expect(services.worker!.ports).toEqual([`127.0.0.1:${D.DEFAULT_HTTP_PORT}:${D.DEFAULT_HTTP_PORT}`]);
    const redisPort = new URL(D.DEFAULT_REDIS_URL).port;
    expect(services.redis!.ports).toEqual([`127.0.0.1:${redisPort}:${redisPort}`]);
    expect(new URL(env.REDIS_URL!).port).toBe(redisPort);
    expect(services.postgres!.ports).toEqual(['127.0.0.1:5432:5432']);
  });

  it('DATABASE_URL and REDIS_URL point at the postgres and redis services: host, port, database, user, password', () => {
    const pg = resolvedEnv(services.postgres!);
    const pgPort = String(services.postgres!.ports![0]).split(':').at(-1);
    for (const name of ['worker', 'migrate']) {
      const db = new URL(resolvedEnv(services[name]!).DATABASE_URL!);
      expect(db.protocol, name).toMatch(/^postgres(ql)?:$/);
      expect(db.hostname, name).toBe('postgres');
      expect(db.port || '5432', name).toBe(pgPort);
      expect(db.pathname.slice(1), name).toBe(pg.POSTGRES_DB);
      expect(decodeURIComponent(db.username), name).toBe(pg.POSTGRES_USER);
      expect(decodeURIComponent(db.password), name).toBe(SAMPLE_ENV.POSTGRES_PASSWORD);
      const redis = new URL(resolvedEnv(services[name]!).REDIS_URL!);
      expect(redis.hostname, name).toBe('redis');
      expect(decodeURIComponent(redis.password), name).toBe(SAMPLE_ENV.REDIS_PASSWORD);
    }
    expect(resolvedEnv(services.redis!).REDISCLI_AUTH).toBe(SAMPLE_ENV.REDIS_PASSWORD);
  });
});

describe('.env.example', () => {
  it('names every variable the settings accept (worker and CLI), and every one docs/configuration.md documents', () => {
    const workerEnv = Object.keys(services.worker!.environment!);
    const covered = [...envExampleNames, ...workerEnv];
    for (const name of SETTING_NAMES) expect(envExampleNames, `${name} in .env.example`).toContain(name);
    const documented = [...documentedNames].filter((n) => ACCEPTED.includes(n));
    expect(documented.length).toBeGreaterThanOrEqual(SETTING_NAMES.length); // the docs table was read
    for (const name of documented) expect(covered, name).toContain(name);
    for (const name of ENV_HOOK_NAMES) expect(envExampleNames, name).toContain(name);
  });

  it('names every variable docker-compose.yml interpolates, and nothing hookrelay or compose would not read', () => {
    const interpolated = [...new Set(interpolatedNames(read('docker-compose.yml')))];
    for (const name of interpolated) expect(envExampleNames, `${name} (used in docker-compose.yml)`).toContain(name);
    for (const name of envExampleNames) expect(ACCEPTED.includes(name) || interpolated.includes(name), `${name} is read by nobody`).toBe(true);
  });

  it('sets no value for a secret (they are left blank for the user), and every explanation is a comment', () => {
    for (const line of envExample.split('\n')) {
      const active = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
      if (active && /PASSWORD|TOKEN|SECRET|KEY/.test(active[1]!)) expect(active[2], active[1]).toBe('');
      if (line.trim() !== '') expect(line, 'comment or NAME=value').toMatch(/^(#|[A-Z][A-Z0-9_]*=)/);
    }
    expect(read('.gitignore').split('\n')).toContain('.env');
  });
});
