-- SEC-H6: an endpoint key is named by the hook's own URL. A row whose hook labelled its endpoint
-- (webhook.endpoint) is re-keyed <origin>#<label>; the origin is the URL's scheme://host[:port],
-- lower-cased, without credentials or the default port (as the WHATWG URL parser gives it for
-- ASCII hosts); a relative URL's origin is app:. Operator state (disabled, hold, limits) kept
-- under an old label is copied to each new key its rows get, so a disabled label stays disabled.
WITH relabelled AS (
  SELECT id, endpoint_key AS old_key,
         CASE WHEN (hook -> 'webhook' ->> 'url') LIKE '/%' THEN 'app:'
              ELSE regexp_replace(regexp_replace(regexp_replace(
                     lower(substring(hook -> 'webhook' ->> 'url' from '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*')),
                     '^([a-z][a-z0-9+.-]*://)[^@]*@', '\1'), '^(https://.*):443$', '\1'), '^(http://.*):80$', '\1')
         END || '#' || (hook -> 'webhook' ->> 'endpoint') AS new_key
    FROM deliveries
   WHERE (hook -> 'webhook') ? 'endpoint' AND (hook -> 'webhook' ->> 'url') IS NOT NULL),
copied AS (
  INSERT INTO endpoints (key, disabled_at, disabled_by, disabled_reason, hold, concurrency, rate_limit, created_at, updated_at)
  SELECT DISTINCT ON (r.new_key) r.new_key, e.disabled_at, e.disabled_by, e.disabled_reason, e.hold, e.concurrency, e.rate_limit, e.created_at, now()
    FROM relabelled AS r JOIN endpoints AS e ON e.key = r.old_key
   WHERE r.new_key IS NOT NULL
   ORDER BY r.new_key, e.key
  ON CONFLICT (key) DO NOTHING
  RETURNING key)
UPDATE deliveries AS d SET endpoint_key = r.new_key FROM relabelled AS r WHERE d.id = r.id AND r.new_key IS NOT NULL;--> statement-breakpoint
-- Q1a: an idempotency key is unique per (operation, hook, key). The old index was unique per
-- (key, hook), which implies this one: existing rows always fit.
DROP INDEX "deliveries_idempotency_uq";--> statement-breakpoint
CREATE UNIQUE INDEX "deliveries_idempotency_uq" ON "deliveries" USING btree ("operation_id","hook_id","idempotency_key") WHERE "deliveries"."idempotency_key" IS NOT NULL;--> statement-breakpoint
-- SEC-H7: ordered deliveries are numbered per (operation, hook), no longer per (operation,
-- endpoint). Existing numbers stay (the gate compares every earlier number, so gaps are fine);
-- only a hook whose URL changed inside one operation (two orders before) is renumbered in its old order.
DROP INDEX "deliveries_sequence_uq";--> statement-breakpoint
DROP INDEX "deliveries_ordering_open_idx";--> statement-breakpoint
WITH clashing AS (
  SELECT DISTINCT operation_id, hook_id FROM deliveries WHERE sequence IS NOT NULL
   GROUP BY operation_id, hook_id, sequence HAVING count(*) > 1),
renumbered AS (
  SELECT d.id, row_number() OVER (PARTITION BY d.operation_id, d.hook_id ORDER BY d.sequence, d.id)::int AS n
    FROM deliveries AS d JOIN clashing AS c ON c.operation_id = d.operation_id AND c.hook_id = d.hook_id
   WHERE d.sequence IS NOT NULL)
UPDATE deliveries AS d SET sequence = r.n FROM renumbered AS r WHERE d.id = r.id;--> statement-breakpoint
CREATE UNIQUE INDEX "deliveries_sequence_uq" ON "deliveries" USING btree ("operation_id","hook_id","sequence") WHERE "deliveries"."sequence" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "deliveries_ordering_open_idx" ON "deliveries" USING btree ("operation_id","hook_id","sequence") WHERE sequence IS NOT NULL AND (status IN ('queued', 'retrying', 'in_flight', 'held') OR (status = 'failed' AND (hook -> 'webhook' ->> 'onFailure') = 'block'));--> statement-breakpoint
-- The counters restart per (operation, hook) after the highest number each hook already has.
DELETE FROM "delivery_sequences";--> statement-breakpoint
ALTER TABLE "delivery_sequences" DROP CONSTRAINT "delivery_sequences_operation_id_endpoint_key_pk";--> statement-breakpoint
ALTER TABLE "delivery_sequences" DROP COLUMN "endpoint_key";--> statement-breakpoint
ALTER TABLE "delivery_sequences" ADD COLUMN "hook_id" text NOT NULL;--> statement-breakpoint
ALTER TABLE "delivery_sequences" ADD CONSTRAINT "delivery_sequences_operation_id_hook_id_pk" PRIMARY KEY("operation_id","hook_id");--> statement-breakpoint
INSERT INTO "delivery_sequences" (operation_id, hook_id, last_sequence)
SELECT operation_id, hook_id, max(sequence) FROM deliveries WHERE sequence IS NOT NULL GROUP BY operation_id, hook_id;
