// An external MCP client for the MCP server's test: the official TypeScript SDK's Client over
// stdio. It starts the command given in argv (capctl mcp ...), lists the tools, calls each with
// the arguments of the JSON file in MCP_TOOL_ARGS, and prints one JSON summary line.
//
//   MCP_SDK_DIR=.../node_modules/@modelcontextprotocol/sdk MCP_TOOL_ARGS=args.json node client.mjs capctl mcp --kubeconfig K
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const sdk = process.env.MCP_SDK_DIR;
const { Client } = await import(pathToFileURL(join(sdk, "dist/esm/client/index.js")).href);
const { StdioClientTransport } = await import(pathToFileURL(join(sdk, "dist/esm/client/stdio.js")).href);

const args = JSON.parse(readFileSync(process.env.MCP_TOOL_ARGS, "utf8"));
const [command, ...commandArgs] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args: commandArgs, env: process.env, stderr: "inherit" });
const client = new Client({ name: "capctl-external-client", version: "1.0.0" });
await client.connect(transport);

const summary = { server: client.getServerVersion(), tools: [], calls: {} };
const { tools } = await client.listTools();
for (const t of tools) {
  summary.tools.push({ name: t.name, readOnly: t.annotations?.readOnlyHint === true, inputType: t.inputSchema?.type });
  const res = await client.callTool({ name: t.name, arguments: args[t.name] ?? {} });
  const text = res.content?.[0]?.type === "text" ? res.content[0].text : "";
  let json = true;
  try { JSON.parse(text); } catch { json = false; }
  summary.calls[t.name] = { isError: res.isError === true, json, structured: res.structuredContent !== undefined, bytes: text.length, error: res.isError ? text.slice(0, 300) : undefined };
}
await client.close();
console.log(JSON.stringify(summary));
