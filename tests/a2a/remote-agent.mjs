// Remote A2A agents for tests/a2a.rs ("The A2A client"), written with the official SDK's
// server (@a2a-js/sdk 1.3.0 + express), so `runner`'s A2A client is tested against the
// protocol as the SDK speaks it. One process serves four agents on 127.0.0.1:$PORT:
//
//   /reviewer  streams a status update, then answers with an artifact echoing the message
//   /asker     asks a question (input-required), then answers with the follow-up's text
//   /failer    fails with a message (its card says: no streaming, so SendMessage is used)
//   /slow      works until it is cancelled with CancelTask (at most 60 s), then is canceled
//   /leaky     answers with the Authorization header it was sent (a token must not leak)
//   /flood     answers with an artifact larger than runner accepts (2 MiB of text)
//
// Each agent's card is at /NAME/.well-known/agent-card.json and its JSON-RPC endpoint at
// /NAME. Every request's method and headers that matter (Authorization, traceparent,
// A2A-Version) are appended as a JSON line to $A2A_LOG, so a test sees what arrived.

import { appendFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import express from 'express';
import { AGENT_CARD_PATH, Role, TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';

const port = Number(process.env.PORT);
const log = process.env.A2A_LOG;
// A test never waits on a forgotten server: it stops by itself.
setTimeout(() => process.exit(0), 120_000).unref();

const textPart = (text) => ({ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' });

const message = (ctx, text) => ({
  messageId: randomUUID(), contextId: ctx.contextId, taskId: ctx.taskId, role: Role.ROLE_AGENT,
  parts: [textPart(text)], metadata: undefined, extensions: [], referenceTaskIds: [],
});

const status = (ctx, state, text) => AgentEvent.statusUpdate({
  taskId: ctx.taskId, contextId: ctx.contextId, metadata: undefined,
  status: { state, message: text === undefined ? undefined : message(ctx, text), timestamp: new Date().toISOString() },
});

const artifact = (ctx, text) => AgentEvent.artifactUpdate({
  taskId: ctx.taskId, contextId: ctx.contextId, append: false, lastChunk: true, metadata: undefined,
  artifact: { artifactId: 'answer', name: 'answer', description: '', parts: [textPart(text)], metadata: undefined, extensions: [] },
});

// The first event of every execution: the task (a new one, or the one continued).
const task = (ctx) => AgentEvent.task(ctx.task ?? {
  id: ctx.taskId, contextId: ctx.contextId, artifacts: [], history: [ctx.userMessage], metadata: undefined,
  status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
});

const userText = (ctx) => ctx.userMessage.parts.map((p) => p.content?.$case === 'text' ? p.content.value : JSON.stringify(p.content?.value)).join('\n');

const cancelled = new Set();
let lastAuthorization = '';

const executors = {
  reviewer: async (ctx, bus) => {
    bus.publish(task(ctx));
    bus.publish(status(ctx, TaskState.TASK_STATE_WORKING, 'reading the change'));
    bus.publish(artifact(ctx, `Reviewed: ${userText(ctx)}`));
    bus.publish(status(ctx, TaskState.TASK_STATE_COMPLETED));
  },
  asker: async (ctx, bus) => {
    bus.publish(task(ctx));
    if (!ctx.task) {
      bus.publish(status(ctx, TaskState.TASK_STATE_INPUT_REQUIRED, 'Which branch should I merge into?'));
      return;
    }
    bus.publish(artifact(ctx, `Merged into ${userText(ctx)} (task ${ctx.taskId})`));
    bus.publish(status(ctx, TaskState.TASK_STATE_COMPLETED));
  },
  failer: async (ctx, bus) => {
    bus.publish(task(ctx));
    bus.publish(status(ctx, TaskState.TASK_STATE_FAILED, 'the change is too large to review'));
  },
  leaky: async (ctx, bus) => {
    bus.publish(task(ctx));
    bus.publish(status(ctx, TaskState.TASK_STATE_WORKING, `seen ${lastAuthorization}`));
    bus.publish(artifact(ctx, `You sent ${lastAuthorization}`));
    bus.publish(status(ctx, TaskState.TASK_STATE_COMPLETED));
  },
  flood: async (ctx, bus) => {
    bus.publish(task(ctx));
    bus.publish(artifact(ctx, 'x'.repeat(2 << 20)));
    bus.publish(status(ctx, TaskState.TASK_STATE_COMPLETED));
  },
  slow: async (ctx, bus) => {
    bus.publish(task(ctx));
    bus.publish(status(ctx, TaskState.TASK_STATE_WORKING, 'thinking for a long time'));
    for (let i = 0; i < 600 && !cancelled.has(ctx.taskId); i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    bus.publish(status(ctx, TaskState.TASK_STATE_CANCELED, 'cancelled'));
  },
};

const card = (name) => ({
  name, description: `The ${name} agent of runner's A2A client tests.`, version: '1.0.0',
  supportedInterfaces: [{ url: `http://127.0.0.1:${port}/${name}`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
  provider: undefined,
  capabilities: { streaming: name !== 'failer', pushNotifications: false, extensions: [] },
  securitySchemes: {}, securityRequirements: [], defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
  skills: [{ id: name, name, description: `What ${name} does.`, tags: [], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
  signatures: [],
});

const app = express();
app.use(express.json({ limit: '1mb' }), (req, _res, next) => {
  lastAuthorization = req.get('authorization') ?? '';
  if (log) {
    appendFileSync(log, JSON.stringify({
      path: req.path, method: req.body?.method ?? req.method,
      authorization: req.get('authorization') ?? null,
      traceparent: req.get('traceparent') ?? null,
      version: req.get('a2a-version') ?? null,
      params: req.body?.params ?? null,
    }) + '\n');
  }
  next();
});

for (const [name, execute] of Object.entries(executors)) {
  const handler = new DefaultRequestHandler(card(name), new InMemoryTaskStore(), {
    execute,
    cancelTask: async (taskId) => { cancelled.add(taskId); },
  });
  app.use(`/${name}/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }));
  app.use(`/${name}`, jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
}

app.listen(port, '127.0.0.1', () => console.log(`listening on ${port}`));
