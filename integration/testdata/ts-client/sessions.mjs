// The TypeScript SDK's streamable HTTP client, as the clients of
// integration/mcp_http_hostile_test.go: node sessions.mjs MODE URL TOKEN [N]
// prints one JSON object per line, what each step saw.
//   call:  a session that runs one foreground command, then closes.
//   calls: a session that starts N foreground `sleep 1014` calls at once,
//          says each that is refused, and waits (for the test to kill it).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, url, token, n] = process.argv.slice(2);
const say = (step, value) => console.log(JSON.stringify({ step, value }));
const text = (res) => res.content.map((c) => c.text).join("");

const client = new Client({ name: "ts-sessions", version: "0.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
}));
say("session", "open");

if (mode === "call") {
  say("call", text(await client.callTool({ name: "bash", arguments: { command: "echo alive" } })));
  await client.close();
} else if (mode === "calls") {
  for (let i = 0; i < Number(n); i++) {
    client
      .callTool({ name: "bash", arguments: { command: "sleep 1014" } }, undefined, { timeout: 600000 })
      .then((res) => say(res.isError ? "refused" : "ended", text(res)), (e) => say("failed", String(e)));
  }
  setInterval(() => {}, 1 << 30); // until killed
}
