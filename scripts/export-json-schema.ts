/**
 * Writes the contract's JSON Schemas to docs/schema/ (the zod schemas are the one
 * source of truth; these files are generated from them for readers and non-TypeScript callers).
 * `npm run schema`; test/unit/contract/jsonSchema.test.ts fails when they are stale.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { SerializedHookSchema } from '../src/contract/hook.ts';
import { WebhookConfigSchema } from '../src/contract/webhook.ts';
import { IngestEventSchema, EventSchemas } from '../src/contract/events.ts';
import { ToolCallHookContextSchema, ToolCallResultSchema } from '../src/contract/toolContext.ts';
import { DeliverySchema } from '../src/contract/delivery.ts';

export const SCHEMA_DIR = path.resolve(import.meta.dirname, '../docs/schema');

/** name → JSON Schema text (stable key order from zod, 2-space indent, trailing newline). */
export function jsonSchemas(): Record<string, string> {
  const schemas: Record<string, z.ZodType> = {
    'webhook-config': WebhookConfigSchema,
    'serialized-hook': SerializedHookSchema,
    'ingest-event': IngestEventSchema,
    'tool-call-context': ToolCallHookContextSchema,
    'tool-call-result': ToolCallResultSchema,
    delivery: DeliverySchema,
    ...Object.fromEntries(Object.entries(EventSchemas).map(([type, schema]) => [`event-${type}`, schema])),
  };
  return Object.fromEntries(
    Object.entries(schemas).map(([name, schema]) => [name, `${JSON.stringify(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }), null, 2)}\n`]),
  );
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  mkdirSync(SCHEMA_DIR, { recursive: true });
  for (const [name, text] of Object.entries(jsonSchemas())) writeFileSync(path.join(SCHEMA_DIR, `${name}.schema.json`), text);
  process.stdout.write(`wrote ${Object.keys(jsonSchemas()).length} schemas to docs/schema/\n`);
}
