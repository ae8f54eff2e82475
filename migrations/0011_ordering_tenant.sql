-- N2 (issue 46b): ordered delivery is per (tenant, operation, hook): two tenants given one operation id and hook id by the app never share an order. Existing counters and rows are the default tenant's (deliveries.tenant already defaults to it).
ALTER TABLE "delivery_sequences" ADD COLUMN "tenant" text DEFAULT 'default' NOT NULL;--> statement-breakpoint
ALTER TABLE "delivery_sequences" DROP CONSTRAINT "delivery_sequences_operation_id_hook_id_pk";--> statement-breakpoint
ALTER TABLE "delivery_sequences" ADD CONSTRAINT "delivery_sequences_tenant_operation_id_hook_id_pk" PRIMARY KEY("tenant","operation_id","hook_id");--> statement-breakpoint
DROP INDEX "deliveries_sequence_uq";--> statement-breakpoint
DROP INDEX "deliveries_ordering_open_idx";--> statement-breakpoint
CREATE UNIQUE INDEX "deliveries_sequence_uq" ON "deliveries" USING btree ("tenant","operation_id","hook_id","sequence") WHERE "deliveries"."sequence" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "deliveries_ordering_open_idx" ON "deliveries" USING btree ("tenant","operation_id","hook_id","sequence") WHERE sequence IS NOT NULL AND (status IN ('queued', 'retrying', 'in_flight', 'held') OR (status = 'failed' AND (hook -> 'webhook' ->> 'onFailure') = 'block'));
