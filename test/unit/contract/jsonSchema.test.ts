import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { jsonSchemas, SCHEMA_DIR } from '../../../scripts/export-json-schema.ts';

describe('docs/schema: JSON Schemas generated from the zod contract', () => {
  it('are up to date (run `npm run schema` after changing src/contract)', () => {
    const generated = jsonSchemas();
    expect(Object.keys(generated)).toHaveLength(22);
    for (const [name, text] of Object.entries(generated)) {
      expect(readFileSync(path.join(SCHEMA_DIR, `${name}.schema.json`), 'utf8'), name).toBe(text);
    }
  });

  it('W1: the webhook schema is strict and carries the defaults', () => {
    const schema = JSON.parse(generatedText('webhook-config')) as { additionalProperties: boolean; properties: Record<string, { default?: unknown }> };
    expect(schema.additionalProperties).toBe(false);
    expect(schema.properties.timeout?.default).toBe(30);
    expect(schema.properties.fallback?.default).toBe('fetch');
  });
});

function generatedText(name: string): string {
  return jsonSchemas()[name]!;
}
