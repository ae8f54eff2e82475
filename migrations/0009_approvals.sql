CREATE TABLE "approvals" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant" text DEFAULT 'default' NOT NULL,
	"operation_id" text NOT NULL,
	"kind" text NOT NULL,
	"point" text NOT NULL,
	"tool_call_id" text,
	"tool_name" text,
	"context_identity" text NOT NULL,
	"context" jsonb NOT NULL,
	"escalation" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"requested_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"decided_by" text,
	"decided_at" timestamp with time zone,
	"reason" text,
	"applied_at" timestamp with time zone,
	"outcome" text,
	"answer_nonce" text,
	"requested_event_at" timestamp with time zone,
	"resolved_event_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "approvals_pending_identity_uq" ON "approvals" USING btree ("tenant","operation_id","point","context_identity") WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX "approvals_tenant_status_idx" ON "approvals" USING btree ("tenant","status","requested_at");--> statement-breakpoint
CREATE INDEX "approvals_operation_idx" ON "approvals" USING btree ("tenant","operation_id","point") WHERE applied_at IS NULL;--> statement-breakpoint
CREATE INDEX "approvals_pending_expiry_idx" ON "approvals" USING btree ("expires_at") WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX "approvals_unannounced_idx" ON "approvals" USING btree ("requested_at") WHERE requested_event_at IS NULL OR (status <> 'pending' AND resolved_event_at IS NULL);