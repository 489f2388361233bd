// The web view of `runner serve` (docs/serve.md): the agents and a form for each, a run
// followed live from its server-sent events, the answer to a paused run, and past sessions.
// It only calls the API, as any client would. Text from the server is always set as text,
// never parsed as HTML.

const TOKEN_KEY = 'runner-token';
const $ = (selector) => document.querySelector(selector);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const path = (...parts) => parts.map(encodeURIComponent).join('/');

/** An element with attributes, listeners (`onclick`, ...) and children (nodes or text). */
function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else if (key === 'class') node.className = value;
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

const pretty = (value) => (typeof value === 'string' ? value : JSON.stringify(value, null, 2));

function showError(error) {
  const box = $('#error');
  box.textContent = String(error.message ?? error);
  box.hidden = false;
}

// The token: asked for once when the server answers 401, kept in this tab only.
let tokenWaiters = [];

function authorized(headers = {}) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return token ? { ...headers, Authorization: `Bearer ${token}` } : headers;
}

function askToken() {
  sessionStorage.removeItem(TOKEN_KEY);
  $('#token').hidden = false;
  $('#token-value').focus();
  return new Promise((resolve) => tokenWaiters.push(resolve));
}

$('#token').addEventListener('submit', (event) => {
  event.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $('#token-value').value.trim());
  $('#token-value').value = '';
  $('#token').hidden = true;
  const waiting = tokenWaiters;
  tokenWaiters = [];
  waiting.forEach((resolve) => resolve());
});

/** A request with the token; asks for a token (again) on 401. */
async function request(method, url, body, headers = {}, signal) {
  for (;;) {
    const init = { method, headers: authorized(headers), signal };
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const response = await fetch(url, init);
    if (response.status !== 401) return response;
    await askToken();
  }
}

/** A JSON request; an error answer becomes an Error with its code and message. */
async function api(method, url, body) {
  const response = await request(method, url, body);
  const text = await response.text();
  const value = text ? JSON.parse(text) : null;
  if (!response.ok) {
    const error = value?.error;
    throw new Error(error ? `${error.code}: ${error.message}` : `${method} ${url}: ${response.status}`);
  }
  return value;
}

// Agents, each with a form made from its input schema.

async function loadAgents() {
  const agents = await api('GET', '/api/agents');
  const list = $('#agent-list');
  if (agents.length === 0) {
    list.replaceChildren(el('p', { class: 'note' }, 'No agent files found.'));
    return;
  }
  const count = (name) => agents.filter((agent) => agent.name === name).length;
  list.replaceChildren(...agents.map((agent, n) => agentCard(agent, count(agent.name) > 1, `agent-${n}`)));
}

function agentCard(agent, ambiguous, id) {
  const card = el('article', { class: 'agent', 'data-agent': agent.name, 'aria-labelledby': `${id}-name` },
    el('h3', { id: `${id}-name` }, agent.name),
    agent.description && el('p', {}, agent.description),
    el('p', { class: 'note' }, agent.file));
  if (agent.diagnostics.length > 0) {
    card.append(el('details', { open: !agent.valid },
      el('summary', {}, agent.valid ? 'Warnings' : 'Not valid: not served'),
      el('pre', {}, agent.diagnostics.join('\n'))));
  }
  if (!agent.valid) return card;
  const fields = schemaFields(agent.input_schema, id);
  const text = el('textarea', { id: `${id}-input`, rows: 2 });
  const form = el('form', { class: 'start' },
    fields.map((field) => field.node),
    el('div', { class: 'field' },
      el('label', { for: `${id}-input` }, 'Input text ', el('small', {}, '(optional)')), text),
    el('button', { type: 'submit' }, `Run ${agent.name}`));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const body = { agent: ambiguous ? agent.file : agent.name };
      const inputs = {};
      for (const field of fields) {
        const value = field.value();
        if (value !== undefined) inputs[field.name] = value;
      }
      if (Object.keys(inputs).length > 0) body.inputs = inputs;
      if (text.value.trim()) body.input = text.value;
      const started = await api('POST', '/api/runs', body);
      openRun(started.run_id, started.session_id, true);
    } catch (error) {
      showError(error);
    }
  });
  card.append(form);
  return card;
}

function schemaFields(schema, prefix) {
  const required = new Set(schema?.required ?? []);
  return Object.entries(schema?.properties ?? {}).map(([name, property], n) =>
    schemaField(name, property ?? {}, required.has(name), `${prefix}-field-${n}`));
}

/** One input of a form: its node, and how to read its value (undefined: not given). */
function schemaField(name, property, required, id) {
  const type = Array.isArray(property.type) ? property.type.find((t) => t !== 'null') : property.type;
  const label = el('label', { for: id }, name, required ? ' *' : '',
    property.description && el('small', {}, ` — ${property.description}`));
  const wrap = (...nodes) => el('div', { class: 'field' }, ...nodes);
  if (Array.isArray(property.enum)) {
    const input = el('select', { id, name, required },
      required ? null : el('option', { value: '' }, '(none)'),
      property.enum.map((choice) =>
        el('option', { value: JSON.stringify(choice), selected: property.default === choice }, String(choice))));
    return { name, node: wrap(label, input), value: () => (input.value === '' ? undefined : JSON.parse(input.value)) };
  }
  if (type === 'boolean') {
    const input = el('input', { id, name, type: 'checkbox', checked: property.default === true });
    return { name, node: el('div', { class: 'check' }, input, ' ', label), value: () => input.checked };
  }
  if (type === 'number' || type === 'integer') {
    const input = el('input', { id, name, type: 'number', step: type === 'integer' ? '1' : 'any', required, value: property.default });
    return { name, node: wrap(label, input), value: () => (input.value === '' ? undefined : Number(input.value)) };
  }
  if (type === 'array' || type === 'object') {
    const input = el('textarea', { id, name, rows: 3, required, placeholder: 'JSON' },
      property.default === undefined ? '' : JSON.stringify(property.default));
    const value = () => {
      if (!input.value.trim()) return undefined;
      try {
        return JSON.parse(input.value);
      } catch {
        throw new Error(`the input \`${name}\` is not JSON`);
      }
    };
    return { name, node: wrap(label, input), value };
  }
  const input = el('input', { id, name, type: 'text', required, value: property.default });
  return { name, node: wrap(label, input), value: () => (input.value === '' ? undefined : input.value) };
}

// A run, followed from its event stream.

const following = new Set();

function openRun(runId, sessionId, fresh) {
  const view = $('#run-view');
  if (fresh) {
    following.forEach((run) => run.stop());
    view.replaceChildren();
  }
  const run = new RunView(runId, sessionId);
  view.append(run.root);
  $('#run').focus();
  run.follow();
  return run;
}

/** Server-sent event blocks (`id:`, `event:`, `data:` lines; `:` comments skipped). */
function parseBlock(block) {
  const message = { id: null, event: 'message', data: [] };
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'id') message.id = Number(value);
    else if (field === 'event') message.event = value;
    else if (field === 'data') message.data.push(value);
  }
  return { ...message, data: message.data.join('\n') };
}

class RunView {
  constructor(runId, sessionId) {
    this.runId = runId;
    this.sessionId = sessionId;
    this.lastId = 0;
    this.ended = false;
    this.boxes = new Map(); // an agent run's id → where its events go
    this.calls = new Map(); // `runId/callId` → a tool call's view
    this.status = el('span', { class: 'status running', role: 'status' }, 'running');
    this.usage = el('p', { class: 'usage' });
    this.cancel = el('button', { type: 'button', class: 'secondary', onclick: () => this.doCancel() }, 'Cancel');
    this.body = el('div', { class: 'run-body' });
    this.end = el('div', { class: 'run-end' });
    const transcript = el('pre', {}, 'Loading…');
    const transcriptBox = el('details', { class: 'transcript' }, el('summary', {}, 'Transcript'), transcript);
    transcriptBox.addEventListener('toggle', () => transcriptBox.open && this.loadTranscript(transcript));
    this.root = el('article', { class: 'run', 'data-run': runId, 'aria-label': `Run ${runId}` },
      el('div', { class: 'run-head' }, el('h3', {}, 'Run ', el('code', {}, runId)), this.status, this.cancel),
      el('p', { class: 'note' }, 'Session ', el('code', {}, sessionId)),
      this.usage, this.body, this.end, transcriptBox);
  }

  stop() {
    this.abort?.abort();
    following.delete(this);
  }

  /** Reads the stream to its `end`; reconnects with `Last-Event-ID` if it breaks. */
  async follow() {
    following.add(this);
    this.abort = new AbortController();
    for (let attempt = 1; !this.ended && attempt <= 10; attempt++) {
      try {
        const headers = { Accept: 'text/event-stream' };
        if (this.lastId > 0) headers['Last-Event-ID'] = String(this.lastId);
        const response = await request('GET', `/api/runs/${path(this.runId)}/events`, undefined, headers, this.abort.signal);
        if (!response.ok) {
          const value = await response.json().catch(() => null);
          throw new Error(value?.error?.message ?? `the event stream answered ${response.status}`);
        }
        await this.read(response.body);
      } catch (error) {
        if (this.abort.signal.aborted) return;
        if (attempt === 10) showError(error);
      }
      if (!this.ended) await sleep(1000);
    }
    following.delete(this);
  }

  async read(stream) {
    const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer = (buffer + value).replace(/\r\n?/g, '\n');
      let cut;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const message = parseBlock(buffer.slice(0, cut));
        buffer = buffer.slice(cut + 2);
        if (message.event === 'end') {
          await this.finish(JSON.parse(message.data).status);
          return;
        }
        if (message.data) {
          if (message.id) this.lastId = message.id;
          this.event(JSON.parse(message.data));
        }
      }
    }
  }

  /** Where an agent run's events go: the run's body, or a sub-agent's fold in its call. */
  box(event) {
    let box = this.boxes.get(event.runId);
    if (box) return box;
    if (this.boxes.size === 0) {
      box = { container: this.body, root: true };
    } else {
      // A run no sub-agent call announced (yet): folded where its parent's events go.
      const fold = this.fold(event.agent, null);
      const parent = this.boxes.get(event.parentRunId) ?? this.boxes.values().next().value;
      (parent.step ?? parent.container).append(fold.details);
      box = fold.box;
    }
    this.boxes.set(event.runId, box);
    return box;
  }

  fold(name, task) {
    const container = el('div', { class: 'sub-body' });
    const state = el('span', { class: 'status running' }, 'running');
    const details = el('details', { class: 'sub' },
      el('summary', {}, 'Sub-agent ', el('strong', {}, name), ' ', state),
      task && el('pre', { class: 'task' }, task), container);
    return { details, box: { container, details, state } };
  }

  line(box, ...children) {
    (box.step ?? box.container).append(el('p', { class: 'line' }, ...children));
  }

  call(box, runId, id, name, input) {
    const key = `${runId}/${id}`;
    let call = this.calls.get(key);
    if (!call) {
      const state = el('span', { class: 'status running' }, 'called');
      const inputView = el('pre', { class: 'input' });
      const body = el('div', { class: 'call-body' }, el('h5', {}, 'Input'), inputView);
      const details = el('details', { class: 'tool', 'data-call': id },
        el('summary', {}, 'Tool ', el('strong', {}, name), ' ', state), body);
      (box.step ?? box.container).append(details);
      call = { details, state, body, inputView, result: null };
      this.calls.set(key, call);
    }
    if (input !== undefined && !call.inputView.textContent) call.inputView.textContent = pretty(input);
    return call;
  }

  event(event) {
    const data = event.data ?? {};
    const box = this.box(event);
    switch (event.type) {
      case 'agent.run.step.created': {
        const { step, title } = data.details ?? {};
        box.step = el('section', { class: 'step', 'data-step': step },
          el('h4', {}, `Step ${step}`, title ? `: ${title}` : ''));
        box.container.append(box.step);
        box.text = null;
        break;
      }
      case 'agent.run.step.completed':
        if (data.status !== 'completed') this.line(box, `Step ${data.details?.step} ${data.status}.`);
        break;
      case 'thread.message.created':
        box.text = null;
        break;
      case 'thread.message.delta':
        if (event.depth === 0) this.delta(box, data.delta ?? {});
        break;
      case 'thread.message.completed': {
        const message = data.message ?? {};
        const content = typeof message.content === 'string' ? message.content : '';
        if (data.purpose === 'reasoning' && content) this.line(box, el('em', {}, 'Thinking: '), content);
        else if (content) this.text(box).textContent = content;
        box.text = null;
        break;
      }
      case 'agent.reasoning.created':
        this.line(box, el('em', {}, 'Reasoning: '), data.reasoning);
        break;
      case 'thread.run.step.tool_call.created':
        this.call(box, event.runId, data.toolCall?.id, data.toolCall?.name, data.toolCall?.arguments);
        break;
      case 'agent.tool.execution.started':
        this.call(box, event.runId, data.toolCallId, data.toolName, data.input).state.textContent = 'running';
        break;
      case 'agent.tool.progress': {
        const call = this.call(box, event.runId, data.toolCallId, data.toolName);
        call.state.textContent = `${data.progress}${data.total == null ? '' : ` / ${data.total}`}${data.message ? ` ${data.message}` : ''}`;
        break;
      }
      case 'agent.tool.output': {
        // A running program's lines, until its result replaces them (the transcript
        // reference: the static result replaces the live log).
        const call = this.call(box, event.runId, data.toolCallId, data.toolName);
        if (!call.live) {
          call.live = el('pre', { class: 'live' });
          call.liveHeading = el('h5', {}, 'Output so far');
          call.body.append(call.liveHeading, call.live);
        }
        let text = data.skipped ? `… ${data.skipped} lines not shown\n` : '';
        if (typeof data.line === 'string') text += `${data.stream === 'stderr' ? 'stderr: ' : ''}${data.line}\n`;
        call.live.append(document.createTextNode(text));
        break;
      }
      case 'agent.tool.permission.decided':
        this.call(box, event.runId, data.toolCallId, data.toolName).body.append(
          el('p', { class: 'line' }, `Permission: ${data.decision} (${data.rule}, by ${data.by})`, data.reason ? `: ${data.reason}` : ''));
        break;
      case 'agent.tool.hook.completed':
        this.call(box, event.runId, data.toolCallId, data.toolName).body.append(
          el('p', { class: 'line' }, `Hook ${data.hook} \`${data.command}\`: ${data.outcome}`, data.detail ? ` (${data.detail})` : ''));
        break;
      case 'agent.tool.execution.completed': {
        const call = this.call(box, event.runId, data.toolCallId, data.toolName);
        call.live?.remove();
        call.liveHeading?.remove();
        const result = data.result ?? {};
        call.state.textContent = `${result.success ? 'done' : 'failed'} in ${data.durationMs} ms`;
        call.state.className = `status ${result.success ? 'completed' : 'failed'}`;
        call.body.append(el('h5', {}, 'Result'), el('pre', { class: 'result' }, pretty(result.success ? result.data : result.error ?? result.data)));
        break;
      }
      case 'agent.sub_agent.invocation.started': {
        const call = this.call(box, event.runId, data.toolCallId, data.specialistId);
        const known = this.boxes.get(data.subAgentRunId);
        const fold = known ? { details: known.details, box: known } : this.fold(data.specialistId, data.subTaskDescription);
        call.body.append(fold.details);
        this.boxes.set(data.subAgentRunId, fold.box);
        break;
      }
      case 'agent.sub_agent.invocation.completed': {
        const sub = this.boxes.get(data.subAgentRunId);
        if (sub?.state) {
          sub.state.textContent = data.result?.success ? 'done' : 'failed';
          sub.state.className = `status ${data.result?.success ? 'completed' : 'failed'}`;
        }
        break;
      }
      case 'agent.handoff':
        this.line(box, el('strong', {}, 'Handoff: '), `${data.from} → ${data.to}`, ` (${data.toolName})`);
        break;
      case 'agent.plan.updated':
        (box.step ?? box.container).append(el('details', { class: 'plan', open: true }, el('summary', {}, 'Plan'),
          el('ol', {}, (data.plan ?? []).map((step) => el('li', {}, `${step.description} (${step.status})`)))));
        break;
      case 'agent.plan.step.status.changed':
        this.line(box, `Plan step ${data.planStepId}: ${data.status}`);
        break;
      case 'agent.llm.usage':
        this.showUsage(data.totalUsage, data.costUsd);
        break;
      case 'agent.llm.retry':
        this.line(box, `Model call retried (attempt ${data.attempt}): ${data.reason}`);
        break;
      case 'agent.user_input.provided':
        this.line(box, el('strong', {}, 'Answered: '), `${data.question} → ${data.answer}`);
        break;
      case 'thread.run.requires_action':
        this.line(box, el('strong', {}, 'Waiting: '), data.required_action?.question ?? '');
        break;
      case 'agent.definition.reloaded':
        this.line(box, `Definition reloaded (${(data.changes ?? []).join(', ')}).`);
        break;
      case 'thread.run.completed':
        if (box.root && data.totals) this.showUsage(data.totals.usage, data.totals.costUsd, data.totals);
        break;
      case 'thread.run.failed':
        if (!box.root) this.line(box, el('strong', {}, `${data.status}: `), data.error?.message ?? '');
        if (box.root && data.totals) this.showUsage(data.totals.usage, data.totals.costUsd, data.totals);
        break;
      default:
        break;
    }
  }

  text(box) {
    if (!box.text) {
      box.text = el('div', { class: 'text' });
      (box.step ?? box.container).append(box.text);
    }
    return box.text;
  }

  delta(box, delta) {
    if (delta.reset) this.text(box).textContent = '';
    else if (delta.contentChunk) this.text(box).append(delta.contentChunk);
    else if (delta.thinkingChunk) {
      if (!box.thinking) {
        box.thinking = el('pre', { class: 'thinking' });
        this.text(box).before(el('details', {}, el('summary', {}, 'Thinking'), box.thinking));
      }
      box.thinking.append(delta.thinkingChunk);
    }
  }

  showUsage(usage, cost, totals) {
    if (!usage) return;
    const parts = [`${usage.input_tokens ?? 0} tokens in, ${usage.output_tokens ?? 0} out`];
    if (totals) parts.push(`${totals.steps} steps, ${totals.llmCalls} model calls, ${totals.toolCalls} tool calls`);
    parts.push(cost == null ? 'cost unknown' : `$${Number(cost).toFixed(4)}`);
    this.usage.textContent = parts.join(' · ');
  }

  setStatus(status) {
    this.status.textContent = status;
    this.status.className = `status ${status}`;
  }

  async finish(status) {
    this.ended = true;
    this.setStatus(status);
    this.cancel.hidden = true;
    try {
      const result = await api('GET', `/api/runs/${path(this.runId)}`);
      if (result.output !== undefined && result.output !== null) {
        this.end.append(el('section', { class: 'output' }, el('h4', {}, 'Answer'), el('pre', { class: 'answer-text' }, pretty(result.output))));
      }
      if (result.error) {
        const paused = status === 'input_required';
        this.end.append(el('p', { class: paused ? 'note' : 'error' }, `${result.error.code}: ${result.error.message}`));
      }
      if (status === 'input_required') {
        const session = await api('GET', `/api/sessions/${path(this.sessionId)}`);
        if (session.waits_for) this.end.append(answerForm(this.sessionId, session.waits_for, (started) => openRun(started.run_id, this.sessionId, false)));
      } else if (['interrupted', 'failed', 'limit_reached'].includes(status)) {
        this.end.append(resumeButton(this.sessionId, (started) => openRun(started.run_id, this.sessionId, false)));
      }
    } catch (error) {
      showError(error);
    }
    loadSessions().catch(showError);
  }

  async doCancel() {
    try {
      await api('POST', `/api/runs/${path(this.runId)}/cancel`);
    } catch (error) {
      showError(error);
    }
  }

  async loadTranscript(node) {
    try {
      const response = await request('GET', `/api/runs/${path(this.runId)}/transcript?format=markdown`);
      node.textContent = response.ok ? await response.text() : `Not available (${response.status}).`;
    } catch (error) {
      node.textContent = String(error.message);
    }
  }
}

// Answering a paused session.

function answerForm(sessionId, waitsFor, onStarted) {
  const action = waitsFor.required_action ?? {};
  const form = el('form', { class: 'answer', 'aria-label': 'Answer' }, el('h4', {}, 'The run waits for you'),
    action.agent && el('p', { class: 'note' }, `Asked by the sub-agent ${action.agent}.`),
    el('p', {}, action.question ?? ''));
  let body;
  if (action.type === 'tool_approval') {
    const choices = (action.calls ?? []).map((call, n) => {
      const approve = el('input', { type: 'radio', name: `decide-${n}`, id: `approve-${n}`, value: 'approve', checked: true });
      const deny = el('input', { type: 'radio', name: `decide-${n}`, id: `deny-${n}`, value: 'deny' });
      // Each denied call has its own reason: the model reads it as that call's result.
      const reason = el('input', { type: 'text', id: `deny-reason-${n}`, class: 'deny-reason' });
      form.append(el('fieldset', { class: 'call', 'data-call': call.id },
        el('legend', {}, el('strong', {}, call.name), ` (${call.rule})`),
        el('pre', {}, pretty(call.arguments)),
        el('div', {}, approve, el('label', { for: `approve-${n}` }, ' Approve '), deny, el('label', { for: `deny-${n}` }, ' Deny')),
        el('div', { class: 'field' }, el('label', { for: reason.id }, 'Reason if denied ', el('small', {}, '(optional)')), reason)));
      return { call, deny, reason };
    });
    body = () => {
      const approve = choices.filter((choice) => !choice.deny.checked).map((choice) => choice.call.id);
      const deny = choices.filter((choice) => choice.deny.checked).map((choice) => {
        const reason = choice.reason.value.trim();
        return { id: choice.call.id, ...(reason ? { reason } : {}) };
      });
      return { ...(approve.length ? { approve } : {}), ...(deny.length ? { deny } : {}) };
    };
  } else if (action.type === 'submit_tool_outputs') {
    // The outputs of the agent's external tools: JSON, or text, which is sent as a string.
    const outputs = (action.submit_tool_outputs?.tool_calls ?? []).map((call, n) => {
      const output = el('textarea', { id: `output-${n}`, rows: 3, required: true });
      form.append(el('fieldset', { class: 'call', 'data-call': call.id },
        el('legend', {}, el('strong', {}, call.name)),
        el('pre', {}, pretty(call.arguments)),
        el('div', { class: 'field' }, el('label', { for: output.id }, 'Its output ', el('small', {}, '(JSON, or text)')), output)));
      return { call, output };
    });
    const parsed = (text) => {
      try { return JSON.parse(text); } catch { return text; }
    };
    body = () => ({
      tool_outputs: outputs.map(({ call, output }) => ({ tool_call_id: call.id, output: parsed(output.value) })),
    });
  } else {
    const answer = el('textarea', { id: `answer-${sessionId}`, rows: 3, required: true });
    form.append(el('div', { class: 'field' }, el('label', { for: answer.id }, 'Your answer'), answer));
    body = () => ({ answer: answer.value });
  }
  const send = el('button', { type: 'submit' }, 'Send the answer');
  form.append(send);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    send.disabled = true;
    try {
      const started = await api('POST', `/api/sessions/${path(sessionId)}/answer`, body());
      form.replaceChildren(el('p', { class: 'note' }, 'Answered: the session goes on in run ', el('code', {}, started.run_id), '.'));
      onStarted(started);
    } catch (error) {
      send.disabled = false;
      showError(error);
    }
  });
  return form;
}

function resumeButton(sessionId, onStarted) {
  return el('button', {
    type: 'button', class: 'secondary',
    onclick: async () => {
      try {
        onStarted(await api('POST', `/api/sessions/${path(sessionId)}/resume`));
      } catch (error) {
        showError(error);
      }
    },
  }, 'Resume the session');
}

// Past sessions and their runs.

async function loadSessions() {
  const sessions = await api('GET', '/api/sessions');
  sessions.sort((a, b) => String(b.updated).localeCompare(String(a.updated)));
  const list = $('#session-list');
  if (sessions.length === 0) {
    list.replaceChildren(el('p', { class: 'note' }, 'No sessions yet.'));
    return;
  }
  list.replaceChildren(el('table', {},
    el('thead', {}, el('tr', {}, el('th', {}, 'Session'), el('th', {}, 'Agent'), el('th', {}, 'Status'),
      el('th', { class: 'hide-narrow' }, 'Steps'), el('th', { class: 'hide-narrow' }, 'Updated'))),
    el('tbody', {}, sessions.map((session) => el('tr', { 'data-session': session.session_id },
      el('td', {}, el('a', { href: '#history', onclick: () => showSession(session.session_id).catch(showError) }, session.session_id)),
      el('td', {}, session.agent),
      el('td', {}, el('span', { class: `status ${session.status}` }, session.status)),
      el('td', { class: 'hide-narrow' }, session.steps),
      el('td', { class: 'hide-narrow' }, session.updated))))));
}

async function showSession(id) {
  const session = await api('GET', `/api/sessions/${path(id)}`);
  const view = $('#session-view');
  const opened = (started) => openRun(started.run_id, id, true);
  view.replaceChildren(el('article', { class: 'session', 'data-session': id, 'aria-label': `Session ${id}` },
    el('h3', { tabindex: '-1' }, 'Session ', el('code', {}, id), ' ', el('span', { class: `status ${session.status}` }, session.status)),
    el('p', {}, `${session.agent} (${session.agentFile}), ${session.steps} steps, updated ${session.updated}`),
    session.parent && el('p', {}, `A branch of ${session.parent.sessionId} at step ${session.parent.step}`,
      session.branchName ? ` (${session.branchName})` : ''),
    el('h4', {}, 'Runs'),
    el('ol', {}, session.runIds.map((run) => el('li', {},
      el('button', { type: 'button', class: 'secondary', 'data-open-run': run, onclick: () => openRun(run, id, true) }, `Open run ${run}`),
      session.running === run ? ' (running now)' : ''))),
    session.waits_for && answerForm(id, session.waits_for, opened),
    ['interrupted', 'failed', 'limit_reached'].includes(session.status) && !session.running && resumeButton(id, opened),
    el('details', {}, el('summary', {}, 'Thread tree'), el('pre', {}, pretty(session.threadTree)))));
  view.querySelector('h3').focus();
}

$('#refresh').addEventListener('click', () => {
  loadAgents().catch(showError);
  loadSessions().catch(showError);
});

loadAgents().catch(showError);
loadSessions().catch(showError);
