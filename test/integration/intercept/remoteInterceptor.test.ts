import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { AgentContextBuilder, InterceptionEmitter, type InterceptionRecord } from '../../../src/intercept/index.ts';
import { createRemoteInterceptor } from '../../../src/send/remoteInterceptor.ts';
import { FetchTransport } from '../../../src/send/fetchTransport.ts';
import { startReceiver, type Receiver } from '../../support/receiver.ts';
import { leaksIn } from '../../support/secretForms.ts';

const TOKEN = 'tok-remote-5b1c0e9a';
const json = (body: unknown) => ({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('I3: remote interceptors over a real socket', () => {
  let receiver: Receiver;
  let transport: FetchTransport;
  const records: InterceptionRecord[] = [];
  // SEC-H2: templates are denied by default; the operator allows the one this suite reads.
  const env: Record<string, string | undefined> = { REMOTE_TOKEN: TOKEN, HOOKRELAY_TEMPLATE_ENV: 'REMOTE_TOKEN' };

  beforeAll(async () => {
    receiver = await startReceiver();
    transport = new FetchTransport({ allowedCidrs: '127.0.0.1/32' });
  });
  afterAll(async () => {
    await transport.close();
    await receiver.close();
  });

  const emitterWith = (timeoutMs?: number) =>
    new InterceptionEmitter({
      interceptors: [
        createRemoteInterceptor(
          {
            url: `${receiver.url}/verdict`,
            headers: { authorization: 'Bearer ${REMOTE_TOKEN}' },
            allowedEnvVars: ['REMOTE_TOKEN'],
            ...(timeoutMs ? { timeoutMs } : {}),
          },
          { fetchTransport: transport, env },
        ),
      ],
      recordSink: (r) => {
        records.push(r);
      },
    });
  const preToolCall = (b: AgentContextBuilder) => b.preToolCall({ id: 'call-1', name: 'search/web', args: { q: 'secret-query-text' } });

  it('I3: allow → the target proceeds; the POST carries the AgentContext, webhook-id <session>-<sequence> and the resolved token', async () => {
    receiver.setHandler(json({ decision: 'allow' }));
    const b = new AgentContextBuilder({ agentId: 'a', framework: 'hookrelay', sessionId: 'sess-allow', startSequence: 7 });
    const target = await emitterWith().emit(preToolCall(b));
    expect(target).toEqual({ q: 'secret-query-text' });
    const req = receiver.requests.at(-1)!;
    expect(req.headers['webhook-id']).toBe('sess-allow-7');
    expect(req.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(JSON.parse(req.body)).toMatchObject({ interception_point: 'pre_tool_call', session: { id: 'sess-allow' }, tool_call: { name: 'search/web' } });
  });

  it('I3: deny → InterceptionBlocked with the interceptor reason', async () => {
    receiver.setHandler(json({ decision: 'deny', reason: 'policy.no_web' }));
    const b = new AgentContextBuilder({ agentId: 'a', framework: 'hookrelay', sessionId: 'sess-deny' });
    await expect(emitterWith().emit(preToolCall(b))).rejects.toMatchObject({
      name: 'InterceptionBlocked',
      record: { verdict: { decision: 'deny', reason: 'policy.no_web' } },
    });
  });

  it('I3: transform → the effective target is rewritten', async () => {
    receiver.setHandler(json({ decision: 'transform', transform: { path: '$target.q', value: 'safe' } }));
    const b = new AgentContextBuilder({ agentId: 'a', framework: 'hookrelay', sessionId: 'sess-transform' });
    expect(await emitterWith().emit(preToolCall(b))).toEqual({ q: 'safe' });
  });

  it('I3: a transform value beyond 2^53 is read exactly and fails closed as context_invalid, never rounded into the args', async () => {
    // Raw text: JSON.stringify could not write the token, and JSON.parse would round it to …992.
    receiver.setHandler({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: '{"decision":"transform","transform":{"path":"$target.q","value":9007199254740993}}',
    });
    const b = new AgentContextBuilder({ agentId: 'a', framework: 'hookrelay', sessionId: 'sess-bigint' });
    const record = await emitterWith().emitUnchecked(preToolCall(b));
    expect(record.verdict).toMatchObject({ decision: 'deny', reason: 'host_error:context_invalid' });
    expect(record.verdict.message).toMatch(/2\^53/);
    expect(record.enforced_identity).toBeNull();
    // A safe integer in the same position still transforms.
    receiver.setHandler({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: '{"decision":"transform","transform":{"path":"$target.q","value":9007199254740991}}',
    });
    const b2 = new AgentContextBuilder({ agentId: 'a', framework: 'hookrelay', sessionId: 'sess-safe-int' });
    expect(await emitterWith().emit(preToolCall(b2))).toEqual({ q: 9007199254740991 });
  });

  const reasonFor = async (behaviour: Parameters<Receiver['setHandler']>[0], timeoutMs?: number) => {
    receiver.setHandler(behaviour);
    const b = new AgentContextBuilder({ agentId: 'a', framework: 'hookrelay', sessionId: `sess-${Math.random()}` });
    const record = await emitterWith(timeoutMs).emitUnchecked(preToolCall(b));
    return record.verdict.reason;
  };

  it('I3: a verdict slower than the interceptor timeout → host_error:interceptor_timeout', async () => {
    expect(await reasonFor({ ...json({ decision: 'allow' }), delayMs: 600 }, 150)).toBe('host_error:interceptor_timeout');
  });
  it('I3: HTTP 500 → host_error:interceptor_failed', async () => {
    expect(await reasonFor({ status: 500, body: '{"decision":"allow"}' })).toBe('host_error:interceptor_failed');
  });
  it('I3: a non-JSON body → host_error:interceptor_failed', async () => {
    expect(await reasonFor({ status: 200, body: 'allow please' })).toBe('host_error:interceptor_failed');
  });
  it('I3: a body over 65,536 bytes → host_error:interceptor_failed', async () => {
    expect(await reasonFor({ status: 200, body: `{"decision":"allow"}${' '.repeat(65_537)}` })).toBe('host_error:interceptor_failed');
  });
  it('I3: {"decision":"warn"} fails the verdict gate → host_error:verdict_invalid', async () => {
    expect(await reasonFor(json({ decision: 'warn' }))).toBe('host_error:verdict_invalid');
  });
  it('I3: a reserved host_error: reason from the wire → host_error:verdict_invalid', async () => {
    expect(await reasonFor(json({ decision: 'deny', reason: 'host_error:no_interceptor' }))).toBe('host_error:verdict_invalid');
  });
  it('I3 / Q5: a remote interceptor on a loopback address that is not allow-listed is refused before connecting', async () => {
    const before = receiver.requests.length;
    const guarded = new FetchTransport();
    try {
      const emitter = new InterceptionEmitter({
        interceptors: [createRemoteInterceptor({ url: `${receiver.url}/verdict` }, { fetchTransport: guarded, env })],
      });
      const b = new AgentContextBuilder({ agentId: 'a', framework: 'hookrelay', sessionId: 'sess-ssrf' });
      const record = await emitter.emitUnchecked(preToolCall(b));
      expect(record.verdict.reason).toBe('host_error:interceptor_failed');
      expect(receiver.requests.length).toBe(before);
    } finally {
      await guarded.close();
    }
  });

  it('I3 / W2: the token is resolved at send time (rotation) and never reaches records', async () => {
    receiver.setHandler(json({ decision: 'allow' }));
    env.REMOTE_TOKEN = `${TOKEN}-rotated`;
    try {
      const b = new AgentContextBuilder({ agentId: 'a', framework: 'hookrelay', sessionId: 'sess-rotate' });
      await emitterWith().emit(preToolCall(b));
      expect(receiver.requests.at(-1)!.headers.authorization).toBe(`Bearer ${TOKEN}-rotated`);
    } finally {
      env.REMOTE_TOKEN = TOKEN;
    }
    const dump = JSON.stringify(records);
    expect(records.length).toBeGreaterThan(5);
    expect(dump).not.toContain(TOKEN);
    expect(dump).not.toContain('secret-query-text'); // records are payload-free
  });

  it('LEAK-1 (W7): a remote verdict echoing the token (hex in its reason, base64 in its message, raw in evidence) reaches neither the agent nor the records', async () => {
    const hex = Buffer.from(TOKEN).toString('hex');
    const b64 = Buffer.from(`u:${TOKEN}`).toString('base64');
    receiver.setHandler(json({ decision: 'deny', reason: `policy ${hex}`, message: `basic ${b64}`, evidence: { got: TOKEN } }));
    const before = records.length;
    const b = new AgentContextBuilder({ agentId: 'a', framework: 'hookrelay', sessionId: 'sess-echo' });
    const outcome = await emitterWith().emitUnchecked(preToolCall(b));
    expect(receiver.requests.at(-1)!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(outcome.verdict).toMatchObject({ decision: 'deny', reason: 'policy [redacted]' });
    const shown = JSON.stringify([outcome.verdict, records.slice(before)]);
    expect(records.length).toBeGreaterThan(before);
    expect(leaksIn(shown, TOKEN)).toEqual([]);
    expect(leaksIn(JSON.stringify({ reason: `policy ${hex}`, message: `basic ${b64}` }), TOKEN).length).toBeGreaterThan(1); // the needles see what was sent
  });

  it('I3: configured like a webhook: `timeout` in seconds, transport and env from the process by default', async () => {
    vi.stubEnv('HOOKRELAY_ALLOWED_CIDRS', '127.0.0.1/32');
    vi.stubEnv('REMOTE_TOKEN', TOKEN);
    vi.stubEnv('HOOKRELAY_TEMPLATE_ENV', 'REMOTE_TOKEN');
    try {
      const remote = createRemoteInterceptor({
        url: `${receiver.url}/verdict`,
        timeout: 0.15,
        headers: { authorization: 'Bearer ${REMOTE_TOKEN}' },
        allowedEnvVars: ['REMOTE_TOKEN'],
      });
      const emitter = new InterceptionEmitter({ interceptors: [remote] });
      receiver.setHandler({ ...json({ decision: 'allow' }), delayMs: 500 });
      const slow = await emitter.emitUnchecked(preToolCall(new AgentContextBuilder({ agentId: 'a', framework: 'hookrelay', sessionId: 'sess-seconds' })));
      expect(slow.verdict.reason).toBe('host_error:interceptor_timeout');
      receiver.setHandler(json({ decision: 'allow' }));
      const fast = await emitter.emitUnchecked(preToolCall(new AgentContextBuilder({ agentId: 'a', framework: 'hookrelay', sessionId: 'sess-seconds-2' })));
      expect(fast.verdict.decision).toBe('allow');
      expect(receiver.requests.at(-1)!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    } finally {
      vi.unstubAllEnvs();
    }
    expect(() => createRemoteInterceptor({ url: 'https://example.com/v', timeout: 1, timeoutMs: 1000 })).toThrow(/timeout/);
  });

  it('I3: a config naming a template not in allowedEnvVars is rejected when the interceptor is created', () => {
    expect(() =>
      createRemoteInterceptor({ url: 'https://example.com/v', headers: { authorization: 'Bearer ${NOPE}' } }, { fetchTransport: transport, env }),
    ).toThrow(/headers\.authorization|allowedEnvVars/);
  });

  it("I3 / W2 template sources: a remote interceptor can never read hookrelay's own variables, and follows HOOKRELAY_TEMPLATE_ENV", () => {
    for (const variable of ['DATABASE_URL', 'QSTASH_CURRENT_SIGNING_KEY', 'HOOKRELAY_SIGNING_SECRETS']) {
      expect(() =>
        createRemoteInterceptor(
          { url: 'https://example.com/v', headers: { 'x-s': `\${${variable}}` }, allowedEnvVars: [variable] },
          { fetchTransport: transport, env },
        ),
      ).toThrow(new RegExp(variable));
    }
    expect(() =>
      createRemoteInterceptor(
        { url: 'https://example.com/v', headers: { 'x-s': '${BILLING_TOKEN}' }, allowedEnvVars: ['BILLING_TOKEN'] },
        { fetchTransport: transport, env: { ...env, HOOKRELAY_TEMPLATE_ENV: 'HOOK_*' } },
      ),
    ).toThrow(/BILLING_TOKEN is not allowed by HOOKRELAY_TEMPLATE_ENV/);
    expect(() =>
      createRemoteInterceptor({ url: 'https://example.com/v', headers: { 'webhook-signature': 'v1,x' } }, { fetchTransport: transport, env }),
    ).toThrow(/forbidden/);
    expect(() => createRemoteInterceptor({ url: 'https://example.com:0/v' }, { fetchTransport: transport, env })).toThrow(/port 0/);
  });
});
