/**
 * A small MCP server over stdio for examples/mcp-run.ts: two tools on the folder FILES_DIR —
 * `read_file` (a file's text) and `delete_all` (removes every file in it). Started by the example
 * as a child process, as an MCP host starts a server:
 *
 *   FILES_DIR=/tmp/some-folder npx tsx examples/mcp-files-server.ts
 */
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const dir = process.env.FILES_DIR;
if (!dir) {
  process.stderr.write('set FILES_DIR to the folder this server serves\n');
  process.exit(2);
}

const server = new McpServer({ name: 'files', version: '1.0.0' });
server.registerTool('read_file', { description: 'Read a file of the folder', inputSchema: { name: z.string() } }, async ({ name }) => ({
  content: [{ type: 'text', text: readFileSync(path.join(dir, path.basename(name)), 'utf8') }],
}));
server.registerTool('delete_all', { description: 'Delete every file of the folder', inputSchema: {} }, async () => {
  const files = readdirSync(dir);
  for (const f of files) rmSync(path.join(dir, f), { force: true });
  return { content: [{ type: 'text', text: `deleted ${files.length} files` }] };
});
await server.connect(new StdioServerTransport());
