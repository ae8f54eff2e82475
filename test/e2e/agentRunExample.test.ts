import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

describe('examples/agent-run.ts (the docs/tour.md run-adapter example) runs as written', () => {
  it('a streamed tool-using run through a Chat Completions loop: transform reaches the tool, a denied answer releases nothing and is not persisted', async () => {
    const env = { ...process.env };
    delete env.OPENAI_BASE_URL; // always the 127.0.0.1 stand-in
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'examples/agent-run.ts'], { cwd: ROOT, timeout: 30_000, env });
    expect(stdout.trim().split('\n')).toEqual([
      'run 1 released 7 chunks: It is sunny in Kyoto, 21 °C.', // 21 °C: the metric-units transform changed the args the tool got
      'run 1 get_weather: pre_tool_call transform (policy.metric_units)',
      'run 2 blocked at output (policy.secret_egress); released 0 chunks',
      'persisted: 3 history items, output "It is sunny in Kyoto, 21 °C."',
      'persisted runs: 1',
      'run 1 records: agent_startup input pre_model_call post_model_call pre_tool_call(transform) post_tool_call pre_model_call post_model_call output agent_shutdown',
      'run 2 records: agent_startup input pre_model_call post_model_call output(deny) agent_shutdown',
    ]);
  }, 40_000);
});
