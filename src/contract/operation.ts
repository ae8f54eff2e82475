import { z } from 'zod';

export const OPERATION_STATUSES = ['running', 'parked', 'completed', 'error', 'interrupted'] as const;

/** An operation record as stored, with the caller hooks persisted for the operation (L2). */
export const OperationRecordSchema = z.object({
  id: z.string(),
  /** N1: the tenant the server app stored it for. */
  tenant: z.string(),
  parentOperationId: z.string().nullable(),
  userId: z.string().nullable(),
  status: z.string(),
  completionReason: z.string().nullable(),
  criticalDeliveryFailure: z.boolean(),
  createdAt: z.date(),
  updatedAt: z.date(),
});
export type OperationRecord = z.infer<typeof OperationRecordSchema>;
