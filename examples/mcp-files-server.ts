/**
 * A small MCP server over stdio for examples/mcp-run.ts: two tools on the folder FILES_DIR —
 * `read_file` (a file's text) and `delete_all` (removes every file in it). Started by the example
 * as a child process, as an MCP host starts a server:
 *
 *   FILES_DIR=/tmp/some-folder npx tsx examples/mcp-files-server.ts
 *
 * MCP_SDK=2 serves with `@modelcontextprotocol/server` 2.x instead of `@modelcontextprotocol/sdk` 1.x.
 */
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

const dir = process.env.FILES_DIR;
if (!dir) {
  process.stderr.write('set FILES_DIR to the folder this server serves\n');
  process.exit(2);
}

const readFile = async ({ name }: { name: string }) => ({
  content: [{ type: 'text' as const, text: readFileSync(path.join(dir, path.basename(name)), 'utf8') }],
});
const deleteAll = async () => {
  const files = readdirSync(dir);
  for (const f of files) rmSync(path.join(dir, f), { force: true });
  return { content: [{ type: 'text' as const, text: `deleted ${files.length} files` }] };
};

if (process.env.MCP_SDK === '2') {
  const { McpServer } = await import('@modelcontextprotocol/server');
  const { StdioServerTransport } = await import('@modelcontextprotocol/server/stdio');
  const server = new McpServer({ name: 'files', version: '2.0.0' });
  server.registerTool('read_file', { description: 'Read a file of the folder', inputSchema: z.object({ name: z.string() }) }, readFile);
  server.registerTool('delete_all', { description: 'Delete every file of the folder', inputSchema: z.object({}) }, deleteAll);
  await server.connect(new StdioServerTransport());
} else {
  const { McpServer } = await import('@modelcontextprotocol/sdk/server/mcp.js');
  const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
  const server = new McpServer({ name: 'files', version: '1.0.0' });
  server.registerTool('read_file', { description: 'Read a file of the folder', inputSchema: { name: z.string() } }, readFile);
  server.registerTool('delete_all', { description: 'Delete every file of the folder', inputSchema: {} }, deleteAll);
  await server.connect(new StdioServerTransport());
}
