ALTER TABLE "deliveries" ADD COLUMN "deadline_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "deliveries" ADD COLUMN "failure_reason" text;--> statement-breakpoint
ALTER TABLE "endpoints" ADD COLUMN "hold" boolean DEFAULT false NOT NULL;