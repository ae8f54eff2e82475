CREATE TABLE "deferred_placeholders" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"operation_id" text NOT NULL,
	"tool_call_id" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"result" jsonb,
	"approval" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"published_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "deliveries" (
	"id" text PRIMARY KEY NOT NULL,
	"operation_id" text NOT NULL,
	"event_type" text NOT NULL,
	"hook_id" text NOT NULL,
	"hook" jsonb NOT NULL,
	"transport" text NOT NULL,
	"status" text DEFAULT 'queued' NOT NULL,
	"attempt_count" integer DEFAULT 0 NOT NULL,
	"generation" integer DEFAULT 0 NOT NULL,
	"lease_expires_at" timestamp with time zone,
	"next_attempt_at" timestamp with time zone DEFAULT now(),
	"last_error_class" text,
	"last_http_status" integer,
	"payload" jsonb,
	"attempts" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"idempotency_key" text,
	"occurred_at" timestamp with time zone DEFAULT now() NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"delivered_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "interception_records" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"session_id" text NOT NULL,
	"sequence" integer NOT NULL,
	"point" text NOT NULL,
	"record" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "operation_hooks" (
	"operation_id" text NOT NULL,
	"position" integer NOT NULL,
	"hook" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "operation_hooks_operation_id_position_pk" PRIMARY KEY("operation_id","position")
);
--> statement-breakpoint
CREATE TABLE "operations" (
	"id" text PRIMARY KEY NOT NULL,
	"parent_operation_id" text,
	"user_id" text,
	"status" text DEFAULT 'running' NOT NULL,
	"completion_reason" text,
	"critical_delivery_failure" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"completed_at" timestamp with time zone
);
--> statement-breakpoint
CREATE UNIQUE INDEX "deferred_placeholders_operation_tool_call_uq" ON "deferred_placeholders" USING btree ("operation_id","tool_call_id");--> statement-breakpoint
CREATE UNIQUE INDEX "deliveries_idempotency_uq" ON "deliveries" USING btree ("idempotency_key","hook_id");--> statement-breakpoint
CREATE INDEX "deliveries_status_created_idx" ON "deliveries" USING btree ("status","created_at");--> statement-breakpoint
CREATE INDEX "deliveries_operation_idx" ON "deliveries" USING btree ("operation_id");--> statement-breakpoint
CREATE INDEX "deliveries_hook_idx" ON "deliveries" USING btree ("hook_id");--> statement-breakpoint
CREATE INDEX "deliveries_due_idx" ON "deliveries" USING btree ("status","next_attempt_at");--> statement-breakpoint
CREATE UNIQUE INDEX "interception_records_session_sequence_uq" ON "interception_records" USING btree ("session_id","sequence");