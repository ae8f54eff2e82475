/**
 * Ship like a library (issue 12): `npm pack` the repository, install the tarball into a scratch app
 * outside it (deps from the npm registry; the optional peers PGlite and @upstash/qstash are not
 * installed), then with plain `node`: every documented entry as ESM, `require('hookrelay')` from
 * CommonJS, the installed bin's `--help` and `migrate`, a TypeScript consumer checked against the
 * published .d.ts with `skipLibCheck: false`, and a resolution hook proving that `import 'hookrelay'`
 * loads none of the heavy packages.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestSchema, type TestSchema } from '../support/db.ts';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const NPM_TIMEOUT_MS = 240_000;
const HEAVY = ['bullmq', 'ioredis', 'pg', 'drizzle-orm', '@electric-sql/pglite', '@electric-sql/pglite-socket', '@upstash/qstash'];

const devVersion = (name: string) =>
  (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies[name];
const FRAMEWORKS = [
  `ai@${devVersion('ai')}`,
  `@openai/agents@${devVersion('@openai/agents')}`,
  `@modelcontextprotocol/sdk@${devVersion('@modelcontextprotocol/sdk')}`,
  `@modelcontextprotocol/client@${devVersion('@modelcontextprotocol/client')}`,
];

let scratch: string;
let tarball: string;
let files: string[];
let installOutput = '';

/** Runs `node` in the scratch app (plain node: no loader, no tsx). */
const node = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  run(process.execPath, args, { cwd: scratch, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? os.tmpdir(), ...env }, timeout: 60_000 });

beforeAll(async () => {
  scratch = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-consumer-'));
  // dist/ was just built by the suite's globalSetup: pack it as it is.
  const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', scratch], {
    cwd: ROOT,
    timeout: NPM_TIMEOUT_MS,
    maxBuffer: 32 * 1024 * 1024,
  });
  const info = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
  tarball = path.join(scratch, info[0]!.filename);
  files = info[0]!.files.map((f) => f.path);
  writeFileSync(path.join(scratch, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  // The frameworks the integration entries are for (optional peers), at the versions the repository pins.
  const installed = await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball, '@types/node@20', ...FRAMEWORKS], {
    cwd: scratch,
    timeout: NPM_TIMEOUT_MS,
  });
  installOutput = `${installed.stdout}\n${installed.stderr}`;
}, NPM_TIMEOUT_MS * 2);

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('package: the tarball', () => {
  it('package: holds compiled JavaScript, declarations, migrations, docs, README and LICENSE', () => {
    for (const f of [
      'dist/entry/index.js',
      'dist/entry/index.d.ts',
      'dist/entry/queue.js',
      'dist/entry/store.d.ts',
      'dist/entry/worker.js',
      'dist/workers/delivery.js',
      'bin/hookrelay.mjs',
      'README.md',
      'CHANGELOG.md',
      'LICENSE',
      'package.json',
      'docs/README.md',
      'assets/console/console.js',
      'assets/console/console.css',
    ]) {
      expect(files, f).toContain(f);
    }
    expect(files.some((f) => f.startsWith('migrations/') && f.endsWith('.sql'))).toBe(true);
  });

  it('package: holds no tests, bench, CI, Docker files, TypeScript sources or build info', () => {
    const unwanted = files.filter(
      (f) =>
        /^(test|bench|\.ci|scripts|examples|src)\//.test(f) ||
        /^(Dockerfile|docker-compose\.yml|tsconfig.*\.json|vitest.*)$/.test(f) ||
        f.endsWith('.tsbuildinfo') ||
        (f.endsWith('.ts') && !f.endsWith('.d.ts')),
    );
    expect(unwanted).toEqual([]);
  });

  it('DEP-3: installing the tarball runs no script of hookrelay and npm warns about none (the build ran at pack time)', () => {
    expect(installOutput).not.toMatch(/hookrelay@[\d.]+ \((prepare|preinstall|install|postinstall)/);
    expect(installOutput).not.toMatch(/npm run build/);
  });

  it('package: the optional peers (PGlite, @upstash/qstash) are not installed in the scratch app', () => {
    expect(existsSync(path.join(scratch, 'node_modules/hookrelay/package.json'))).toBe(true);
    for (const peer of ['@electric-sql/pglite', '@electric-sql/pglite-socket', '@upstash/qstash'])
      expect(existsSync(path.join(scratch, 'node_modules', peer)), peer).toBe(false);
  });
});

describe('package: plain node in a scratch app', () => {
  it('package: every entry imports as ESM with its documented names', async () => {
    const script = `
      const root = await import('hookrelay');
      const queue = await import('hookrelay/queue');
      const store = await import('hookrelay/store');
      const worker = await import('hookrelay/worker');
      const names = (m) => Object.keys(m).sort();
      console.log(JSON.stringify({ root: names(root), queue: names(queue), store: names(store), worker: names(worker) }));
      const d = new root.HookDispatcher({ env: {} });
      d.register('op', [{ id: 'h', type: 'afterStep', handler: () => {} }]);
      await d.dispatch('op', 'afterStep', { operationId: 'op' });
      await d.close();`;
    const { stdout } = await node(['--input-type=module', '-e', script]);
    const out = JSON.parse(stdout) as Record<string, string[]>;
    for (const name of [
      'HookDispatcher',
      'CriticalHookDeliveryError',
      'parseToolCallHookResponse',
      'buildToolCallHookContext',
      'createWebhookPayloadBuilder',
      'redactResultForEvents',
      'resolveHeaderTemplates',
      'loadEnvHooks',
      'createHookProducer',
      'createOperationStore',
      'createStoreRecordSink',
      'startDeliveryWorker',
      'InterceptionEmitter',
      'AgentContextBuilder',
      'Verdict',
      'ALLOW',
      'InterceptionBlocked',
      'WebhookConfigSchema',
      'createAgentHooks',
      'AgentHooks',
      'ToolError',
      'parseJsonLossless',
    ]) {
      expect(out.root, name).toContain(name);
    }
    expect(out.queue).toContain('createHookProducer');
    expect(out.store).toEqual(expect.arrayContaining(['createOperationStore', 'createStoreRecordSink', 'migrateStore']));
    expect(out.worker).toContain('startDeliveryWorker');
  });

  it('package: CommonJS require("hookrelay") works (require(esm), Node ≥ 20.19)', async () => {
    writeFileSync(
      path.join(scratch, 'consumer.cjs'),
      "const h = require('hookrelay'); console.log(typeof h.HookDispatcher, typeof h.createHookProducer, typeof require('hookrelay/queue').createHookProducer);\n",
    );
    const { stdout } = await node(['consumer.cjs']);
    expect(stdout.trim()).toBe('function function function');
  });

  it('package: import "hookrelay" loads none of BullMQ, ioredis, pg, drizzle, PGlite or @upstash/qstash', async () => {
    // A resolution hook records every package a specifier resolves into.
    writeFileSync(
      path.join(scratch, 'record-hook.mjs'),
      `export async function resolve(specifier, context, next) {
         const r = await next(specifier, context);
         const m = /\\/node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(r.url);
         if (m && m[1] !== 'hookrelay') process.stderr.write('PKG ' + m[1] + '\\n');
         return r;
       }`,
    );
    writeFileSync(path.join(scratch, 'register-hook.mjs'), "import { register } from 'node:module'; register('./record-hook.mjs', import.meta.url);\n");
    const light = await node(['--import', './register-hook.mjs', '--input-type=module', '-e', "await import('hookrelay'); console.log('ok')"]);
    const lightPkgs = new Set(
      light.stderr
        .split('\n')
        .filter((l) => l.startsWith('PKG '))
        .map((l) => l.slice(4)),
    );
    expect([...lightPkgs].filter((p) => HEAVY.includes(p))).toEqual([]);
    // The hook does see them when they load: the queue entry pulls BullMQ and ioredis in.
    const heavy = await node(['--import', './register-hook.mjs', '--input-type=module', '-e', "await import('hookrelay/queue'); console.log('ok')"]);
    expect(heavy.stderr).toContain('PKG bullmq');
    expect(heavy.stderr).toContain('PKG ioredis');
  });

  it('package: AI-SDK / Agents-SDK hookrelay/ai-sdk loads ai but not @openai/agents, hookrelay/openai-agents not ai; neither loads BullMQ, ioredis or pg (issue 29)', async () => {
    // Both frameworks are installed in the scratch app: each entry must still load only its own.
    writeFileSync(
      path.join(scratch, 'record-hook.mjs'),
      `export async function resolve(specifier, context, next) {
         const r = await next(specifier, context);
         const m = /\\/node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(r.url);
         if (m && m[1] !== 'hookrelay') process.stderr.write('PKG ' + m[1] + '\\n');
         return r;
       }`,
    );
    writeFileSync(path.join(scratch, 'register-hook.mjs'), "import { register } from 'node:module'; register('./record-hook.mjs', import.meta.url);\n");
    const loaded = async (entry: string) => {
      const out = await node(['--import', './register-hook.mjs', '--input-type=module', '-e', `await import('${entry}'); console.log('ok')`]);
      expect(out.stdout.trim()).toBe('ok');
      return new Set(
        out.stderr
          .split('\n')
          .filter((l) => l.startsWith('PKG '))
          .map((l) => l.slice(4)),
      );
    };
    const ai = await loaded('hookrelay/ai-sdk');
    expect(ai.has('ai')).toBe(true); // the hook sees a framework when it loads
    expect([...ai].filter((p) => HEAVY.includes(p) || p.startsWith('@openai/') || p === 'openai')).toEqual([]);
    const agents = await loaded('hookrelay/openai-agents');
    expect([...agents].filter((p) => HEAVY.includes(p) || p === 'ai' || p.startsWith('@ai-sdk/'))).toEqual([]);
  });

  it('package: MCP hookrelay/mcp imports from the tarball without loading ai, @openai/agents, BullMQ, ioredis, pg or the MCP SDK itself', async () => {
    writeFileSync(
      path.join(scratch, 'record-hook.mjs'),
      `export async function resolve(specifier, context, next) {
         const r = await next(specifier, context);
         const m = /\\/node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(r.url);
         if (m && m[1] !== 'hookrelay') process.stderr.write('PKG ' + m[1] + '\\n');
         return r;
       }`,
    );
    writeFileSync(path.join(scratch, 'register-hook.mjs'), "import { register } from 'node:module'; register('./record-hook.mjs', import.meta.url);\n");
    const script = "const m = await import('hookrelay/mcp'); console.log(Object.keys(m).sort().join(','))";
    const out = await node(['--import', './register-hook.mjs', '--input-type=module', '-e', script]);
    expect(out.stdout.trim().split(',')).toEqual(expect.arrayContaining(['createMcpHooks', 'McpHooks', 'McpRun', 'InterceptionBlocked']));
    const pkgs = out.stderr
      .split('\n')
      .filter((l) => l.startsWith('PKG '))
      .map((l) => l.slice(4));
    // The caller's MCP client is wrapped structurally: no framework, no queue or store, not even @modelcontextprotocol/sdk.
    expect(
      pkgs.filter(
        (p) =>
          HEAVY.includes(p) || p === 'ai' || p.startsWith('@ai-sdk/') || p.startsWith('@openai/') || p === 'openai' || p.startsWith('@modelcontextprotocol/'),
      ),
    ).toEqual([]);
  });

  it('package: the installed library sends user-agent hookrelay/<its package.json version> (issue 28)', async () => {
    const version = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    const seen: string[] = [];
    const server = http.createServer((req, res) => {
      seen.push(String(req.headers['user-agent']));
      res.writeHead(204).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ua`;
    try {
      const script = `import { HookDispatcher } from 'hookrelay';
        const d = new HookDispatcher({ env: {}, allowedCidrs: '127.0.0.1/32' });
        d.register('op', [{ id: 'ua', type: 'onComplete', webhook: { url: ${JSON.stringify(url)} } }]);
        await d.dispatch('op', 'onComplete', { operationId: 'op' });
        await d.close();`;
      await node(['--input-type=module', '-e', script]);
    } finally {
      server.close();
    }
    expect(seen).toEqual([`hookrelay/${version}`]);
  });

  it('package: the installed bin answers --help and --version', async () => {
    const bin = path.join(scratch, 'node_modules/.bin/hookrelay');
    const help = await run(bin, ['--help'], { cwd: scratch, timeout: 30_000 });
    expect(help.stdout).toContain('Usage: hookrelay');
    expect(help.stdout).toContain('migrate');
    const version = await run(bin, ['--version'], { cwd: scratch, timeout: 30_000 });
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  describe('package: migrate from the installed package', () => {
    let schema: TestSchema;
    beforeAll(async () => {
      schema = await createTestSchema('pkg');
    });
    afterAll(async () => {
      await schema?.drop();
    });

    it('package: the installed `hookrelay migrate` applies the shipped migrations to Postgres', async () => {
      const bin = path.join(scratch, 'node_modules/.bin/hookrelay');
      const { stdout } = await run(bin, ['migrate'], { cwd: scratch, env: { PATH: process.env.PATH ?? '', DATABASE_URL: schema.url }, timeout: 60_000 });
      expect(stdout).toContain('migrations applied');
      const { stdout: tables } = await node(
        [
          '--input-type=module',
          '-e',
          "import pg from 'pg'; const c = new pg.Client(process.env.DATABASE_URL); await c.connect(); const r = await c.query(\"select table_name from information_schema.tables where table_schema = current_schema() order by 1\"); console.log(r.rows.map((x) => x.table_name).join(',')); await c.end();",
        ],
        { DATABASE_URL: schema.url },
      );
      expect(tables.trim().split(',')).toEqual(
        expect.arrayContaining(['deliveries', 'operations', 'operation_hooks', 'deferred_placeholders', 'interception_records']),
      );
    });

    it('package: the installed `hookrelay console` serves its pages, script, styles and uPlot from the installed package', async () => {
      const { spawn } = await import('node:child_process');
      const token = `pkg-console-${Math.random().toString(36).slice(2)}-token`;
      const port = 20_000 + Math.floor(Math.random() * 20_000);
      const child = spawn(path.join(scratch, 'node_modules/.bin/hookrelay'), ['console', '--port', String(port)], {
        cwd: scratch,
        env: { PATH: process.env.PATH ?? '', DATABASE_URL: schema.url, REDIS_URL: 'redis://127.0.0.1:6379', HOOKRELAY_CONSOLE_TOKEN: token, LOG_LEVEL: 'warn' },
      });
      const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
      try {
        let up = false;
        for (let i = 0; i < 100 && !up; i++) {
          up = await fetch(`http://127.0.0.1:${port}/healthz`).then(
            (r) => r.ok,
            () => false,
          );
          if (!up) await new Promise((r) => setTimeout(r, 100));
        }
        expect(up).toBe(true);
        expect((await fetch(`http://127.0.0.1:${port}/console`)).status).toBe(401);
        const auth = { authorization: `Bearer ${token}` };
        expect((await fetch(`http://127.0.0.1:${port}/console/deliveries`, { headers: auth })).status).toBe(200);
        for (const asset of ['console.js', 'console.css', 'uplot.js', 'uplot.css']) {
          const res = await fetch(`http://127.0.0.1:${port}/console/assets/${asset}`);
          expect(res.status, asset).toBe(200);
          expect((await res.arrayBuffer()).byteLength, asset).toBeGreaterThan(1000);
        }
      } finally {
        child.kill('SIGTERM');
      }
      expect(await exited).toBe(0);
    });

    it('package: OTEL_EXPORTER_OTLP_ENDPOINT without the optional @opentelemetry/sdk-node says what to install (exit 2)', async () => {
      const bin = path.join(scratch, 'node_modules/.bin/hookrelay');
      const failed = await run(bin, ['worker'], {
        cwd: scratch,
        env: { PATH: process.env.PATH ?? '', DATABASE_URL: schema.url, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' },
        timeout: 60_000,
      }).then(
        () => undefined,
        (e: { code: number; stderr: string }) => e,
      );
      expect(failed?.code).toBe(2);
      expect(failed?.stderr).toContain('npm install @opentelemetry/sdk-node');
    });

    it('package: the installed dist/workers/delivery.js (the image CMD) loads hookrelay/worker and fails as `hookrelay worker` does (exit 2)', async () => {
      const entry = path.join(scratch, 'node_modules/hookrelay/dist/workers/delivery.js');
      const failed = await run(process.execPath, [entry], {
        cwd: scratch,
        env: { PATH: process.env.PATH ?? '', DATABASE_URL: schema.url, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' },
        timeout: 60_000,
      }).then(
        () => undefined,
        (e: { code: number; stderr: string }) => e,
      );
      expect(failed?.code).toBe(2);
      expect(failed?.stderr).toContain('npm install @opentelemetry/sdk-node');
    });

    it('package: without DATABASE_URL and without the optional PGlite peer, the embedded store says what to install', async () => {
      const bin = path.join(scratch, 'node_modules/.bin/hookrelay');
      const failed = await run(bin, ['migrate'], {
        cwd: scratch,
        env: { PATH: process.env.PATH ?? '', HOOKRELAY_DATA_DIR: path.join(scratch, '.hookrelay') },
        timeout: 60_000,
      }).then(
        () => undefined,
        (e: { code: number; stderr: string }) => e,
      );
      expect(failed?.code).toBe(2);
      expect(failed?.stderr).toContain('npm install @electric-sql/pglite @electric-sql/pglite-socket');
    });
  });

  it('package: a TypeScript consumer type-checks against the published .d.ts with skipLibCheck false', async () => {
    writeFileSync(
      path.join(scratch, 'consumer.ts'),
      `import { HookDispatcher, createHookProducer, createOperationStore, CriticalHookDeliveryError, type SerializedHook, type HookProducer } from 'hookrelay';
       import { createHookProducer as eagerProducer, type EnqueueInput } from 'hookrelay/queue';
       import { createStoreRecordSink, type Store } from 'hookrelay/store';
       import { startDeliveryWorker, type RunningDeliveryWorker } from 'hookrelay/worker';
       import { createAgentHooks, Verdict, type ModelStreamPart, type PersistEntry } from 'hookrelay';
       const agentHooks = createAgentHooks({ interceptors: [() => Verdict.allow()], persist: (e: PersistEntry) => void e.kind });
       async function* stream(): AsyncGenerator<ModelStreamPart> { yield 'hel'; yield { type: 'text-delta', text: 'lo' }; }
       export async function agentLoop(): Promise<string | null> {
         const run = agentHooks.startRun({ input: 'hi', onRelease: (t: string) => void t });
         const r = await run.modelCall([{ role: 'user', content: 'hi' }], () => stream());
         const out = await run.output(r.content);
         await run.end();
         return typeof out === 'string' ? out : null;
       }
       const hooks: SerializedHook[] = [{ id: 'h', type: 'onComplete', webhook: { url: 'https://example.com/hook' } }];
       const producer: HookProducer = createHookProducer({ env: {} });
       const input: EnqueueInput = { operationId: 'op', type: 'onComplete', event: { operationId: 'op' }, hooks };
       const d = new HookDispatcher({ mode: 'queue', producer });
       export async function main(store: Store): Promise<RunningDeliveryWorker | undefined> {
         await producer.enqueue(input);
         void eagerProducer; void createOperationStore; void createStoreRecordSink(store.db);
         try { await d.dispatch('op', 'onComplete', { operationId: 'op', reason: 'done' }); } catch (e) { if (e instanceof CriticalHookDeliveryError) throw e; }
         return process.env.START ? startDeliveryWorker({}) : undefined;
       }`,
    );
    writeFileSync(
      path.join(scratch, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          skipLibCheck: false,
          noEmit: true,
          types: ['node'],
        },
        files: ['consumer.ts'],
      }),
    );
    // The repository's TypeScript, run over the scratch app's files and node_modules.
    const result = await run(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], {
      cwd: scratch,
      timeout: 120_000,
    }).then(
      (r) => ({ code: 0, out: r.stdout }),
      (e: { code: number; stdout: string }) => ({ code: e.code, out: e.stdout }),
    );
    expect(result.out).toBe('');
    expect(result.code).toBe(0);
  });

  it('package: AI-SDK / Agents-SDK the tarball type-checks examples/ai-sdk-run.ts, examples/openai-agents-run.ts and the docs/integrations.md examples (issue 29)', async () => {
    mkdirSync(path.join(scratch, 'integrations'), { recursive: true });
    const checked = ['ai-sdk-run.ts', 'openai-agents-run.ts', 'mcp-run.ts', 'openai-agents-handoff.ts'];
    for (const f of checked) copyFileSync(path.join(ROOT, 'examples', f), path.join(scratch, 'integrations', f));
    // Each ```ts block of the page, as a user would paste it into a file of their own.
    const page = readFileSync(path.join(ROOT, 'docs/integrations.md'), 'utf8');
    const blocks = [...page.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    blocks.forEach((code, i) => {
      writeFileSync(path.join(scratch, 'integrations', `docs-${i}.ts`), `${code}\nexport {};\n`);
      checked.push(`docs-${i}.ts`);
    });
    writeFileSync(
      path.join(scratch, 'tsconfig.integrations.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          // The AI SDK's own declarations need @types/json-schema (not a dependency of it): libraries
          // are not re-checked here; the user code is, against hookrelay's and the frameworks' types.
          skipLibCheck: true,
          noEmit: true,
          types: ['node'],
        },
        files: checked.map((f) => `integrations/${f}`),
      }),
    );
    const result = await run(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.integrations.json'], {
      cwd: scratch,
      timeout: 180_000,
    }).then(
      (r) => ({ code: 0, out: r.stdout }),
      (e: { code: number; stdout: string }) => ({ code: e.code, out: e.stdout }),
    );
    expect(result.out).toBe('');
    expect(result.code).toBe(0);
  }, 200_000);
});
