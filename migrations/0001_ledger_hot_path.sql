DROP INDEX "deliveries_idempotency_uq";--> statement-breakpoint
DROP INDEX "deliveries_due_idx";--> statement-breakpoint
CREATE UNIQUE INDEX "deliveries_idempotency_uq" ON "deliveries" USING btree ("idempotency_key","hook_id") WHERE "deliveries"."idempotency_key" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "deliveries_due_idx" ON "deliveries" USING btree ("status","next_attempt_at") WHERE "deliveries"."status" IN ('queued', 'retrying', 'in_flight');--> statement-breakpoint
-- Hand-written (not in the drizzle snapshot): the worker updates every row twice; keep the ~1 KiB
-- event payload out of line so those updates copy a TOAST pointer, not the payload, and leave
-- room on each page for updates.
ALTER TABLE "deliveries" ALTER COLUMN "payload" SET STORAGE EXTERNAL;--> statement-breakpoint
ALTER TABLE "deliveries" SET (toast_tuple_target = 128, fillfactor = 80);
