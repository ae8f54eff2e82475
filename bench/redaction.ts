/**
 * W7 redaction cost (issue 49): `redactSecrets` (src/send/secretRedaction.ts) on the texts a
 * failed attempt keeps — a plain 512-byte JSON answer with no secret, a 2 KiB answer full of
 * escapes (JSON, entities, percent, non-ASCII) with no secret, and a 2 KiB answer echoing the token
 * in several encodings — with the two values a `Bearer ${TOKEN}` header yields. Median µs per call
 * of 5 samples after a warm-up. It runs only on attempts that keep an excerpt and sent templates.
 *
 * `runRedactionBench()` is called by `bench/run.ts`; `npx tsx bench/redaction.ts` runs it alone.
 */
import { pathToFileURL } from 'node:url';
import { redactSecrets } from '../src/send/secretRedaction.ts';

const SAMPLES = 5;
const CALLS = 2_000;
const TOKEN = 'sk+live/9f8e7d6c5b4a39281706=';
const SECRETS = [TOKEN, `Bearer ${TOKEN}`];

const TEXTS: Array<[string, string]> = [
  ['plain 512 B JSON, no secret', JSON.stringify({ error: 'unknown customer', detail: 'x'.repeat(470) }).slice(0, 512)],
  [
    'escaped 2 KiB, no secret',
    JSON.stringify({ error: 'bad\n"q" \\/', url: 'https:\\/\\/a%2Fb?x=1&amp;y=2', detail: 'é'.repeat(400) + 'y'.repeat(1200) }).slice(0, 2048),
  ],
  [
    'echo 2 KiB, 5 encodings',
    JSON.stringify({
      raw: TOKEN,
      b64: Buffer.from(TOKEN).toString('base64'),
      hex: Buffer.from(TOKEN).toString('hex'),
      url: encodeURIComponent(TOKEN),
      html: TOKEN.replace(/\+/g, '&plus;'),
      pad: 'z'.repeat(1700),
    }).slice(0, 2048),
  ],
];

/** The yardstick: what 0.2 did (split/join of raw, JSON, URI-component and base64 forms), on the same texts. */
function fixedForms(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) {
    for (const form of [s, JSON.stringify(s).slice(1, -1), encodeURIComponent(s), Buffer.from(s).toString('base64'), Buffer.from(s).toString('base64url')]) {
      out = out.split(form).join('[redacted]');
    }
  }
  return out;
}

function medianMicros(text: string, redact: (text: string, secrets: readonly string[]) => string): number {
  for (let i = 0; i < CALLS / 4; i++) redact(text, SECRETS);
  const samples: number[] = [];
  for (let s = 0; s < SAMPLES; s++) {
    const t0 = performance.now();
    for (let i = 0; i < CALLS; i++) redact(text, SECRETS);
    samples.push(((performance.now() - t0) * 1000) / CALLS);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(SAMPLES / 2)] as number;
}

export async function runRedactionBench(): Promise<{ rows: string[][]; summary: Record<string, number> }> {
  const rows: string[][] = [['text', 'µs per call (median)', 'fixed forms (0.2) µs', 'ratio']];
  const summary: Record<string, number> = {};
  for (const [name, text] of TEXTS) {
    const us = medianMicros(text, redactSecrets);
    const yardstick = medianMicros(text, fixedForms);
    rows.push([name, us.toFixed(1), yardstick.toFixed(1), (us / yardstick).toFixed(1)]);
    summary[name] = Math.round(us * 10) / 10;
  }
  return { rows, summary };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { rows } = await runRedactionBench();
  for (const r of rows) console.log(r.join('  |  '));
}
