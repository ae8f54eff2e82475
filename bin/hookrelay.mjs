#!/usr/bin/env node
// Runs the TypeScript sources through tsx's loader: the bin works straight after `npm ci`,
// with no build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
const code = await main(process.argv);
process.exit(code);
