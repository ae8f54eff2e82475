// Build step after tsc: copy the Redis scripts (src/**/*.lua, e.g. src/isolation/commands/) into
// dist/ beside the compiled modules that read them (`new URL('./commands/x.lua', import.meta.url)`),
// since tsc emits only JavaScript and declarations.
import { cpSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
cpSync(`${root}src`, `${root}dist`, {
  recursive: true,
  filter: (source) => statSync(source).isDirectory() || source.endsWith('.lua'),
});
