/**
 * `hookrelay completion bash|zsh`: the script is generated from the commander program, so it
 * offers exactly the commands, subcommands and options `--help` lists. Both scripts are loaded
 * into the real shells (the bin, compiled dist) and asked for completions.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../support/hookrelayProcess.ts';

const BIN = path.join(ROOT, 'bin/hookrelay.mjs');
const hasZsh = spawnSync('zsh', ['-c', 'true']).status === 0;

function hookrelay(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' }, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The command names `--help` lists under "Commands:". */
function helpCommands(args: string[]): string[] {
  const help = hookrelay([...args, '--help']).stdout;
  const section = (help.split('Commands:')[1] ?? '').split('\n\n')[0] ?? '';
  return [...section.matchAll(/^ {2}([a-z][a-z-]*)/gm)].map((m) => m[1]!).filter((name) => name !== 'help');
}

describe('UX-6 completion: hookrelay completion bash|zsh', () => {
  let dir: string;
  let bashFile: string;
  let zshFile: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'hookrelay-completion-'));
    const bash = hookrelay(['completion', 'bash']);
    const zsh = hookrelay(['completion', 'zsh']);
    expect(bash.code).toBe(0);
    expect(zsh.code).toBe(0);
    bashFile = path.join(dir, 'hookrelay.bash');
    zshFile = path.join(dir, '_hookrelay');
    writeFileSync(bashFile, bash.stdout);
    writeFileSync(zshFile, zsh.stdout);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** What bash's completion function answers for the words typed so far (the last one is being completed). */
  const bashComplete = (...words: string[]): string[] => {
    const script = `source ${JSON.stringify(bashFile)}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _hookrelay; printf '%s\\n' "\${COMPREPLY[@]}"`;
    return execFileSync('bash', ['--norc', '-c', script], { cwd: dir, encoding: 'utf8' }).split('\n').filter(Boolean);
  };

  it('UX-6 completion bash: commands, subcommands and options come from the program (the same as --help), option values are not taken for commands', () => {
    expect(bashComplete('hookrelay', '').filter((w) => !w.startsWith('-'))).toEqual(helpCommands([]));
    for (const group of ['deliveries', 'endpoints', 'records'])
      expect(
        bashComplete('hookrelay', group, '').filter((w) => !w.startsWith('-')),
        group,
      ).toEqual(helpCommands([group]));
    expect(bashComplete('hookrelay', 'del')).toEqual(['deliveries']);
    expect(bashComplete('hookrelay', 'endpoints', 'disable', '--h')).toEqual(['--hold', '--help']);
    // `list` after `--status` is the option's value, not the `list` command; --limit is offered after it.
    expect(bashComplete('hookrelay', 'deliveries', 'list', '--status', 'list', '--l')).toEqual(['--limit']);
    expect(bashComplete('hookrelay', 'completion', '').filter((w) => !w.startsWith('-'))).toEqual(['bash', 'zsh']);
    // A value option without choices completes file names.
    writeFileSync(path.join(dir, 'hooks-plugin.mjs'), '');
    expect(bashComplete('hookrelay', 'start', '--plugin', 'hooks-')).toEqual(['hooks-plugin.mjs']);
  });

  it.skipIf(!hasZsh)('UX-6 completion zsh: loads in zsh and offers each command with its description, the options of a subcommand and the shells', () => {
    // compsys' helpers stubbed to print what the function hands them.
    const script = `compdef() { :; }
_describe() { local -a arr; arr=("\${(@P)4}"); print -r -- "\${(j:|:)arr}"; }
compadd() { shift; print -r -- "$*"; }
_files() { print -r -- files; }
source ${JSON.stringify(zshFile)}
c() { words=("$@"); CURRENT=\${#words}; _hookrelay; }
c hookrelay ''
c hookrelay endpoints disable --h
c hookrelay completion ''`;
    const [top, options, shells] = execFileSync('zsh', ['-f', '-c', script], { encoding: 'utf8' }).trimEnd().split('\n');
    expect(top!.split('|').map((e) => e.split(':')[0])).toEqual(helpCommands([]));
    expect(top).toContain('deliveries:inspect the delivery ledger');
    expect(options!.split('|').map((e) => e.split(':')[0])).toEqual(['--tenant', '--reason', '--hold', '--wait', '--json', '--help', '-h']);
    expect(shells).toBe('bash zsh');
  });

  it('UX-6 completion: an unknown shell exits 2 naming the choices', () => {
    const r = hookrelay(['completion', 'fish']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('bash, zsh');
    expect(r.stdout).toBe('');
  });
});
