// The TypeScript SDK's streamable HTTP client against `dsh-host mcp
// --http`: node client.mjs URL TOKEN. It prints one JSON object per line:
// what each step saw. integration/mcp_http_ts_test.go checks them.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token] = process.argv.slice(2);
const say = (step, value) => console.log(JSON.stringify({ step, value }));

async function connect(withToken) {
  const client = new Client({ name: "ts-client", version: "0.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${withToken}` } },
  });
  await client.connect(transport);
  return client;
}

const text = (res) => res.content.map((c) => c.text).join("");

try {
  await connect("not-" + token);
  say("wrong token", "connected");
} catch (e) {
  say("wrong token", "refused: " + e.message);
}

const client = await connect(token);
say("protocol", client.getServerVersion()?.name);
const tools = await client.listTools();
say("tools", tools.tools.map((t) => t.name).sort());
say("bash", text(await client.callTool({ name: "bash", arguments: { command: "echo from ts; exit 5" } })));
const started = text(await client.callTool({ name: "bash", arguments: { command: "echo job out", run_in_background: true } }));
const id = started.match(/Started background job (job-\d+)/)[1];
say("job_output", text(await client.callTool({ name: "job_output", arguments: { job_id: id, wait_ms: 5000 } })));
await client.close();
