// The TypeScript SDK's client standing in for the clients of the README's
// quickstart (integration/quickstart_test.go): node quickstart.mjs SPEC,
// SPEC a JSON object, either
//   {"stdio": {"command", "args", "cwd", "env"}, "commands": [...]}: the
//     server launched as a client launches it, on stdio; or
//   {"http": {"url", "headers"}, "commands": [...]}: streamable HTTP.
// It calls the bash tool once per command and prints one JSON object per
// line: {"step": "tools", "value": [names]}, then {"step": "bash",
// "value": text} for each command.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const spec = JSON.parse(process.argv[2]);
const say = (step, value) => console.log(JSON.stringify({ step, value }));
const text = (res) => res.content.map((c) => c.text).join("");

const transport = spec.stdio
  ? new StdioClientTransport({ ...spec.stdio, stderr: "inherit" })
  : new StreamableHTTPClientTransport(new URL(spec.http.url), {
      requestInit: { headers: spec.http.headers },
    });
const client = new Client({ name: "quickstart", version: "0.0.0" });
await client.connect(transport);
const tools = await client.listTools();
say("tools", tools.tools.map((t) => t.name).sort());
for (const command of spec.commands) {
  say("bash", text(await client.callTool({ name: "bash", arguments: { command } })));
}
await client.close();
