CREATE TABLE "endpoints" (
	"key" text PRIMARY KEY NOT NULL,
	"disabled_at" timestamp with time zone,
	"disabled_by" text,
	"disabled_reason" text,
	"concurrency" integer,
	"rate_limit" double precision,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "deliveries" ADD COLUMN "endpoint_key" text;--> statement-breakpoint
CREATE INDEX "deliveries_held_idx" ON "deliveries" USING btree ("endpoint_key") WHERE "deliveries"."status" = 'held';