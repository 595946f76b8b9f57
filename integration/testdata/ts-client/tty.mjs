// The TypeScript SDK's stdio client drives terminal jobs of `dsh-host mcp`:
// node tty.mjs DSH_HOST FILE, where FILE is a long text file of lines
// "row N". It prints one JSON object per line: what each step saw.
// integration/mcp_tty_ts_test.go checks them.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, file] = process.argv.slice(2);
const say = (step, value) => console.log(JSON.stringify({ step, value }));
const text = (res) => res.content.map((c) => c.text).join("");

const client = new Client({ name: "ts-tty", version: "0.0.0" });
await client.connect(new StdioClientTransport({ command: bin, args: ["mcp"], env: process.env, stderr: "inherit" }));
const tool = async (name, args) => text(await client.callTool({ name, arguments: args }));
const jobOf = (s) => (s.match(/job-\d+/) || [""])[0];

// screenUntil reads a job's screen until it holds want (or 15 s passed).
async function screenUntil(id, want) {
  let s = "";
  for (const end = Date.now() + 15000; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) {
    s = await tool("job_output", { job_id: id, screen: true });
    if (s.includes(want)) break;
  }
  return s;
}

// ended reads a job's output until it no longer runs.
async function ended(id) {
  let all = "";
  for (const end = Date.now() + 15000; Date.now() < end; ) {
    const s = await tool("job_output", { job_id: id, wait_ms: 1000 });
    all += s;
    if (!s.includes(`[job ${id}: running]`)) break;
  }
  return all;
}

say("tools", (await client.listTools()).tools.map((t) => t.name).sort());

const prompt = await tool("bash", { command: `read -p 'your name? ' n; echo "hello, $n"`, tty: true, yield_ms: 5000 });
say("read prompt", prompt);
say("read answer", await tool("job_input", { job_id: jobOf(prompt), text: "Ada<Enter>", yield_ms: 5000 }));

const less = jobOf(await tool("bash", { command: `less ${file}`, tty: true, yield_ms: 3000 }));
say("less first", await screenUntil(less, "row 1\n"));
await tool("job_input", { job_id: less, text: "<Space>", yield_ms: 3000 });
say("less second", await screenUntil(less, "row 30\n"));
await tool("job_input", { job_id: less, text: "q", yield_ms: 3000 });
say("less end", await ended(less));
await client.close();
