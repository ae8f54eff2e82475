import { z } from 'zod';

/** R1/R6: the only decision shapes a control can return; extra keys are dropped. */
export const AllowDecisionSchema = z.object({ decision: z.literal('allow') }).transform(() => ({ decision: 'allow' as const }));
export const DenyDecisionSchema = z
  .object({ decision: z.literal('deny'), reason: z.string().optional() })
  .transform((d) => (d.reason === undefined ? { decision: 'deny' as const } : { decision: 'deny' as const, reason: d.reason }));
export const ToolCallDecisionSchema = z.union([AllowDecisionSchema, DenyDecisionSchema]);
export type ToolCallDecision = { decision: 'allow' } | { decision: 'deny'; reason?: string };
