import { describe, expect, it } from 'vitest';
import { approvalIdentity, operationOfSession } from '../../../src/approvals/approvalIdentity.ts';
import { AgentContextBuilder, jcsSha256Identity } from '../../../src/intercept/index.ts';

function call(sessionId: string, args: Record<string, string>, id = 'c1', startSequence = 0) {
  const b = new AgentContextBuilder({ agentId: 'a', framework: 'hookrelay', sessionId, startSequence, now: () => new Date(Date.now() + startSequence * 1000) });
  return b.preToolCall({ id, name: 'delete_file', args });
}

describe('APR-2 (A2): what an approval is bound to', () => {
  it('APR-2 (A2): the identical call in another emission (session, sequence, timestamp) has the same approval identity; the emission identity differs', () => {
    const first = call('op-1/6f1c1e7e-2b0a-4d4b-9f59-0d7a3a1b2c3d', { path: '/x' }, 'c1', 3);
    const resumed = call('op-1/0a9c2f6e-7b41-4e0c-8f3a-9d2b6c1e4f5a', { path: '/x' }, 'c1', 41);
    expect(jcsSha256Identity(first)).not.toBe(jcsSha256Identity(resumed));
    expect(approvalIdentity(first, 'op-1')).toBe(approvalIdentity(resumed, 'op-1'));
  });

  it('APR-2 (A2): changed arguments, another call id or another operation never share it', () => {
    const base = approvalIdentity(call('op-1', { path: '/x' }), 'op-1');
    expect(approvalIdentity(call('op-1', { path: '/y' }), 'op-1')).not.toBe(base);
    expect(approvalIdentity(call('op-1', { path: '/x', recursive: 'true' }), 'op-1')).not.toBe(base);
    expect(approvalIdentity(call('op-1', { path: '/x' }, 'c2'), 'op-1')).not.toBe(base);
    expect(approvalIdentity(call('op-1', { path: '/x' }), 'op-2')).not.toBe(base);
  });

  it('APR-2 (A2): a run session <operation>/<uuid> belongs to its operation; any other session id is its own operation', () => {
    expect(operationOfSession('op-1/6f1c1e7e-2b0a-4d4b-9f59-0d7a3a1b2c3d')).toBe('op-1');
    expect(operationOfSession('op-1')).toBe('op-1');
    expect(operationOfSession('a/b')).toBe('a/b');
  });
});
