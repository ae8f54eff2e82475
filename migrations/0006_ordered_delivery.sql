CREATE TABLE "delivery_sequences" (
	"operation_id" text NOT NULL,
	"endpoint_key" text NOT NULL,
	"last_sequence" integer NOT NULL,
	CONSTRAINT "delivery_sequences_operation_id_endpoint_key_pk" PRIMARY KEY("operation_id","endpoint_key")
);
--> statement-breakpoint
ALTER TABLE "deliveries" ADD COLUMN "sequence" integer;--> statement-breakpoint
CREATE UNIQUE INDEX "deliveries_sequence_uq" ON "deliveries" USING btree ("operation_id","endpoint_key","sequence") WHERE "deliveries"."sequence" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "deliveries_ordering_open_idx" ON "deliveries" USING btree ("operation_id","endpoint_key","sequence") WHERE sequence IS NOT NULL AND (status IN ('queued', 'retrying', 'in_flight', 'held') OR (status = 'failed' AND (hook -> 'webhook' ->> 'onFailure') = 'block'));