// A minimal MCP stdio server for tests: it writes every request it gets to the file named
// by its first argument (one JSON line each), answers `initialize` with the protocol
// version named by its second argument, or else the one the client asked for when it knows
// it (else 2025-06-18), lists two tools, `echo`, which says its text back, and `hang`,
// which never answers. Nothing else: it shows what a client sends.
const fs = require("fs");
const readline = require("readline");

const [log, forced] = process.argv.slice(2);
const known = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
const send = (message) => process.stdout.write(JSON.stringify(message) + "\n");

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  fs.appendFileSync(log, line + "\n");
  const request = JSON.parse(line);
  if (request.id === undefined) return; // a notification
  const reply = (result) => send({ jsonrpc: "2.0", id: request.id, result });
  switch (request.method) {
    case "initialize": {
      const asked = request.params.protocolVersion;
      reply({
        protocolVersion: forced || (known.includes(asked) ? asked : "2025-06-18"),
        capabilities: { tools: {} },
        serverInfo: { name: "handshake", version: "1.0.0" },
      });
      break;
    }
    case "tools/list":
      reply({
        tools: [
          {
            name: "echo",
            description: "Says the text back.",
            inputSchema: { type: "object", properties: { text: { type: "string" } } },
          },
          { name: "hang", description: "Never answers.", inputSchema: { type: "object" } },
        ],
      });
      break;
    case "tools/call":
      if (request.params.name === "hang") break;
      reply({ content: [{ type: "text", text: String(request.params.arguments.text) }] });
      break;
    default:
      send({ jsonrpc: "2.0", id: request.id, error: { code: -32601, message: "unknown method" } });
  }
});
