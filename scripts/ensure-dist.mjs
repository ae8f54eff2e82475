// `prestart` in a clone: build dist/ when it is missing or older than the sources, and only then.
// The build runs at pack time (`prepack`), never at install time: `npm install`, `npx hookrelay`
// in a clone and a tarball install leave dist/ alone (issue 50). A tarball has no src/: nothing to do.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const built = path.join(root, 'dist/.tsbuildinfo'); // written by every build (tsconfig.build.json)

/** The newest modification time under the folders and files the build reads. */
function newest(entries) {
  let latest = 0;
  const visit = (p) => {
    const s = statSync(p, { throwIfNoEntry: false });
    if (!s) return;
    if (s.isDirectory()) for (const name of readdirSync(p)) visit(path.join(p, name));
    else latest = Math.max(latest, s.mtimeMs);
  };
  for (const e of entries) visit(path.join(root, e));
  return latest;
}

if (existsSync(path.join(root, 'src'))) {
  const missing = !existsSync(path.join(root, 'dist/entry/cli.js')) || !existsSync(built);
  const stale = !missing && newest(['src', 'workers', 'migrations', 'tsconfig.json', 'tsconfig.build.json', 'tsconfig.workers.json']) > statSync(built).mtimeMs;
  if (missing || stale) {
    process.stderr.write(`hookrelay: dist/ is ${missing ? 'missing' : 'older than src/'}: building it (npm run build)\n`);
    execFileSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
  }
}
