// The official TypeScript SDK's client against runner's MCP server (`runner mcp` over stdio,
// `/mcp` of `runner serve` over Streamable HTTP), for tests/mcp.rs. It takes a plan (JSON,
// the first argument), does its steps in order and prints one JSON line per step:
//
//   {"stdio": {"command", "args", "cwd"}} or {"http": URL, "headers": {...}}
//   "elicit": null (no elicitation capability) or the replies to give, in order
//   "steps": [{"list": true}
//             | {"call": NAME, "arguments": {...}, "progress": true, "cancelOn": TEXT}
//             | {"waitStatus": STATUS, "dir": RUNS_DIR}]
//
// A call with `cancelOn` aborts (the SDK sends notifications/cancelled) when a progress
// message contains TEXT. `waitStatus` waits (up to 20 s) for a run's result.json under
// RUNS_DIR to have that status, the connection still open.
import fs from "node:fs";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const plan = JSON.parse(process.argv[2]);
setTimeout(() => {
  console.log(JSON.stringify({ error: "the client gave up after 60 s" }));
  process.exit(3);
}, 60_000).unref();

const capabilities = plan.elicit ? { elicitation: { form: {} } } : {};
const client = new Client({ name: "runner-test-client", version: "1.0.0" }, { capabilities });
const elicited = [];
if (plan.elicit) {
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    elicited.push(request.params);
    return plan.elicit[elicited.length - 1] ?? { action: "cancel" };
  });
}

const transport = plan.stdio
  ? new StdioClientTransport({ ...plan.stdio, env: process.env, stderr: "inherit" })
  : new StreamableHTTPClientTransport(new URL(plan.http), {
      requestInit: { headers: plan.headers ?? {} },
    });
await client.connect(transport);

const print = (value) => console.log(JSON.stringify(value));
for (const step of plan.steps) {
  if (step.list) {
    print({ tools: (await client.listTools()).tools });
  } else if (step.call) {
    print(await call(step));
  } else if (step.waitStatus) {
    print({ status: await waitStatus(step.dir, step.waitStatus) });
  }
}
await client.close();
process.exit(0);

async function call(step) {
  const progress = [];
  const controller = new AbortController();
  const options = { signal: controller.signal };
  if (step.progress || step.cancelOn) {
    options.onprogress = (note) => {
      progress.push(note);
      if (step.cancelOn && String(note.message).includes(step.cancelOn)) controller.abort();
    };
  }
  elicited.length = 0;
  try {
    const result = await client.callTool({ name: step.call, arguments: step.arguments ?? {} }, undefined, options);
    return { result, progress, elicited: [...elicited] };
  } catch (error) {
    return { error: String(error), cancelled: controller.signal.aborted, progress };
  }
}

async function waitStatus(dir, wanted) {
  const deadline = Date.now() + 20_000;
  let seen = [];
  while (Date.now() < deadline) {
    seen = fs.existsSync(dir) ? fs.readdirSync(dir).map((run) => status(path.join(dir, run, "result.json"))) : [];
    if (seen.includes(wanted)) return wanted;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return seen.join(",");
}

function status(file) {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8")).status;
  } catch {
    return null;
  }
}
