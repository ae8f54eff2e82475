-- N1/N2 (issue 46): a tenant on every operation and delivery row (existing rows: 'default'), the queue a row belongs to (existing rows: NULL, any queue's), and operator endpoint state keyed by (tenant, endpoint) (existing rows: '*', every tenant, as before).
ALTER TABLE "deliveries" ADD COLUMN "tenant" text DEFAULT 'default' NOT NULL;--> statement-breakpoint
ALTER TABLE "deliveries" ADD COLUMN "queue" text;--> statement-breakpoint
ALTER TABLE "operations" ADD COLUMN "tenant" text DEFAULT 'default' NOT NULL;--> statement-breakpoint
ALTER TABLE "endpoints" ADD COLUMN "tenant" text DEFAULT '*' NOT NULL;--> statement-breakpoint
ALTER TABLE "endpoints" ADD COLUMN "timeout_floor_ms" integer;--> statement-breakpoint
ALTER TABLE "endpoints" DROP CONSTRAINT "endpoints_pkey";--> statement-breakpoint
ALTER TABLE "endpoints" ADD CONSTRAINT "endpoints_tenant_key_pk" PRIMARY KEY("tenant","key");
