/**
 * vitest globalSetup: build dist/ once before the suite (incremental, ~2 s when nothing changed;
 * unlike `npm run build` it does not empty dist/ first, to stay fast),
 * so the e2e tests run the bin as shipped — plain node over the compiled JavaScript.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';

export default function setup(): void {
  const root = path.resolve(import.meta.dirname, '../..');
  const tsc = path.join(root, 'node_modules/typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  // Then the deployable worker entries (workers/ → dist/workers/), which import dist/entry/.
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.workers.json'], { cwd: root, stdio: 'inherit' });
  // As `npm run build`: the Redis scripts (.lua) are copied beside the compiled modules.
  execFileSync(process.execPath, [path.join(root, 'scripts/copy-lua.mjs')], { cwd: root, stdio: 'inherit' });
  // And the embedded store's pgdata template (skipped when up to date): `npm start` seeds from it.
  execFileSync(process.execPath, [path.join(root, 'scripts/pgdata-template.mjs')], { cwd: root, stdio: 'inherit' });
  // And the CLI bundle the bin runs for operator commands (issue 50), from the dist/ just compiled.
  execFileSync(process.execPath, [path.join(root, 'scripts/bundle-cli.mjs')], { cwd: root, stdio: 'inherit' });
}
