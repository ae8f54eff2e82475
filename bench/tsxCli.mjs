// The CLI as it ran before the package build: TypeScript sources through the tsx loader.
// Only the startup benchmark uses it, as the "before" side of its comparison.
const cli = await import('../src/entry/cli.ts');
await cli.runCli(process.argv);
