/** GET /console/assets/<name>: the console's script and styles, and uPlot's bundle — a fixed list, cached in memory. */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { send } from '../respond.ts';
import { HttpError } from '../httpError.ts';
import { type PublicRoute, underBase } from '../router.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
/** src/console/routes or dist/console/routes → the package's assets/console. */
const ASSET_DIR = path.resolve(HERE, '../../../assets/console');
const requireFromHere = createRequire(import.meta.url);

/** The only files served: a Map, so a name such as `__proto__` or `constructor` is just unknown (404). */
const ASSETS: ReadonlyMap<string, { file: () => string; type: string }> = new Map([
  ['console.js', { file: () => path.join(ASSET_DIR, 'console.js'), type: 'text/javascript; charset=utf-8' }],
  ['console.css', { file: () => path.join(ASSET_DIR, 'console.css'), type: 'text/css; charset=utf-8' }],
  // Charts: uPlot's prebuilt browser bundle, served from the installed package (no CDN).
  ['uplot.js', { file: () => requireFromHere.resolve('uplot/dist/uPlot.iife.min.js'), type: 'text/javascript; charset=utf-8' }],
  ['uplot.css', { file: () => requireFromHere.resolve('uplot/dist/uPlot.min.css'), type: 'text/css; charset=utf-8' }],
]);

const cache = new Map<string, Buffer>();

export const assetsRoute: PublicRoute = {
  method: 'GET',
  path: underBase('/assets/(.*)', 's'),
  async handle({ res, params: [name = ''] }) {
    const asset = ASSETS.get(name);
    if (!asset) throw new HttpError(404, 'no such asset');
    let body = cache.get(name);
    if (!body) {
      body = await readFile(asset.file());
      cache.set(name, body);
    }
    return send(res, 200, body, asset.type, { 'cache-control': 'private, max-age=300' });
  },
};
