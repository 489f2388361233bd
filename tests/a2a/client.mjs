// The official A2A JavaScript SDK's client (`@a2a-js/sdk`, A2A 1.0) against `runner serve`'s
// A2A endpoints, for tests/a2a.rs. It takes a plan (JSON, the first argument), does its steps
// in order and prints one JSON line per step:
//
//   {"headers": {...}}  headers every request carries (a token)
//   "steps": [{"card": BASE}                      the agent's card, fetched by the SDK's resolver
//             | {"send": BASE, "message": M, "configuration": C}   SendMessage: the task
//             | {"stream": BASE, "message": M, "cancelOn": TEXT, "leaveOn": TEXT}
//                 SendStreamingMessage: every event; with `cancelOn`, CancelTask when a status
//                 message contains TEXT (reading on to the end); with `leaveOn`, stop reading there
//             | {"get": BASE, "id": ID} | {"cancel": BASE, "id": ID} | {"resubscribe": BASE, "id": ID}]
//
// BASE is an agent's base URL (`http://host/a2a/NAME/`); M is a message in the protocol's
// JSON, read with the SDK's own `Message.fromJSON`; an id or a string in M of `$task` or
// `$context` is the last task's. A step that fails prints {"error": {name, message, code}}.
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";
import { Message, SendMessageConfiguration, StreamResponse, Task, AgentCard } from "@a2a-js/sdk";

const plan = JSON.parse(process.argv[2]);
setTimeout(() => {
  console.log(JSON.stringify({ error: "the client gave up after 60 s" }));
  process.exit(3);
}, 60_000).unref();

const headers = plan.headers ?? {};
const fetchImpl = (url, init = {}) =>
  fetch(url, { ...init, headers: { ...Object.fromEntries(new Headers(init.headers ?? {})), ...headers } });
const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  }),
);
const clients = new Map();
const clientOf = async (base) => {
  if (!clients.has(base)) clients.set(base, await factory.createFromUrl(base));
  return clients.get(base);
};

let last = {};
const fill = (value) =>
  JSON.parse(JSON.stringify(value), (_, v) => (v === "$task" ? last.id : v === "$context" ? last.contextId : v));
const remember = (task) => {
  if (task?.id) last = { id: task.id, contextId: task.contextId };
};
const request = (step) => ({
  message: Message.fromJSON(fill({ messageId: crypto.randomUUID(), role: "ROLE_USER", ...step.message })),
  configuration: step.configuration ? SendMessageConfiguration.fromJSON(step.configuration) : undefined,
});
const textOf = (event) =>
  (event.payload?.value?.status?.message?.parts ?? []).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("\n");

const print = (value) => console.log(JSON.stringify(value));
for (const step of plan.steps) {
  try {
    print(await run(step));
  } catch (error) {
    print({ error: { name: error?.name, message: String(error?.message ?? error), code: error?.envelopeCode ?? error?.cause?.envelopeCode } });
  }
}
process.exit(0);

async function run(step) {
  if (step.card) {
    const client = await clientOf(step.card);
    return { card: AgentCard.toJSON(await client.getAgentCard()) };
  }
  if (step.send) {
    const result = await (await clientOf(step.send)).sendMessage(request(step));
    const task = Task.toJSON(result);
    remember(task);
    return { task };
  }
  if (step.stream || step.resubscribe) {
    const client = await clientOf(step.stream ?? step.resubscribe);
    const events = step.stream
      ? client.sendMessageStream(request(step))
      : client.resubscribeTask({ id: fill(step.id), tenant: "" });
    const seen = [];
    let cancelled = null;
    for await (const event of events) {
      seen.push(StreamResponse.toJSON(event));
      if (event.payload?.$case === "task") remember(event.payload.value);
      const text = textOf(event);
      if (step.cancelOn && !cancelled && text.includes(step.cancelOn)) {
        cancelled = client.cancelTask({ id: last.id, tenant: "", metadata: undefined }).then(Task.toJSON);
      }
      if (step.leaveOn && text.includes(step.leaveOn)) break;
    }
    return { events: seen, ...(cancelled ? { cancelled: await cancelled } : {}) };
  }
  if (step.get) {
    const task = Task.toJSON(await (await clientOf(step.get)).getTask({ id: fill(step.id), tenant: "" }));
    return { task };
  }
  if (step.cancel) {
    return { task: Task.toJSON(await (await clientOf(step.cancel)).cancelTask({ id: fill(step.id), tenant: "", metadata: undefined })) };
  }
  throw new Error(`unknown step ${JSON.stringify(step)}`);
}
