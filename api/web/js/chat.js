// The chat of one conversation: the turns of its active branch from the store, and live
// runs fed by the websocket. Each event is applied to its run's model as it arrives; the
// DOM catches up once per animation frame. A turn whose question was edited or whose
// answer was regenerated shows "‹ 2/3 ›" to move between its versions (the server keeps
// which branch is active); Edit and Regenerate ask again from the turn before it. A turn a
// later question interrupted says so; one it rolled back leaves the page, as it left the
// conversation.
import { clear, compareIds, h } from './dom.js';
import { RunModel, TERMINAL } from './run_model.js';
import { RunView } from './run_view.js';

const ACTIVE = 'agentbus.active';

function activeRuns() {
  try {
    return JSON.parse(sessionStorage.getItem(ACTIVE) || '{}');
  } catch {
    return {};
  }
}

function remember(runId, conversationId) {
  const runs = activeRuns();
  if (conversationId) runs[runId] = conversationId;
  else delete runs[runId];
  sessionStorage.setItem(ACTIVE, JSON.stringify(runs));
}

export class Chat {
  constructor({ api, socket, notify, onConversation, onBusy, onRunEnd, onRefused }) {
    this.onRunEnd = onRunEnd || (() => {});
    this.onRefused = onRefused || (() => {});
    this.api = api;
    this.socket = socket;
    this.notify = notify;
    this.onConversation = onConversation;
    this.onBusy = onBusy;
    this.conversationId = null;
    this.models = new Map();
    this.views = new Map();
    this.pending = new Map(); // request id -> question
    this.tree = []; // every message of the open conversation (each names its parent)
    this.dirty = new Set();
    this.frame = 0;
    this.soon = false;
    this.drawn = 0;
    this.turns = h('div', { class: 'turns', 'aria-live': 'polite' });
    this.empty = h('div', { class: 'empty' }, h('h2', { text: 'Ask anything' }), h('p', { class: 'dim', text: 'Answers stream in with their sources; open Details to see every step of the run.' }));
    this.el = h('main', { class: 'chat' }, this.empty, this.turns);
  }

  reset(conversationId) {
    this.conversationId = conversationId;
    this.tree = [];
    this.views.clear();
    clear(this.turns);
    this.empty.hidden = Boolean(conversationId);
    this.onBusy(false);
  }

  model(runId) {
    let model = this.models.get(runId);
    if (!model) {
      model = new RunModel(runId);
      this.models.set(runId, model);
    }
    return model;
  }

  show(model) {
    let view = this.views.get(model.runId);
    if (!view) {
      view = new RunView(model, { gate: (m) => this.gateActions(m), branch: (m) => this.branch(m) });
      this.views.set(model.runId, view);
      this.turns.append(view.el);
      this.empty.hidden = true;
    }
    this.touch(model);
    return view;
  }

  /**
   * Mark a run changed. It is drawn at once (after the current task) unless the page drew
   * less than half a frame ago: then on the next animation frame, so a burst of events
   * (a replay) costs one render per frame, not one per event.
   */
  touch(model) {
    this.dirty.add(model.runId);
    if (this.frame || this.soon) return;
    if (performance.now() - this.drawn > 8) {
      this.soon = true;
      queueMicrotask(() => this.flush());
    } else this.frame = requestAnimationFrame(() => this.flush());
  }

  flush() {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.soon = false;
    const follow = this.el.scrollHeight - this.el.scrollTop - this.el.clientHeight < 80;
    for (const runId of this.dirty) this.views.get(runId)?.update();
    this.dirty.clear();
    if (follow) this.el.scrollTop = this.el.scrollHeight;
    this.onBusy(this.streaming());
    this.drawn = performance.now();
  }

  /** Whether a shown run still streams (Send is then Stop). */
  streaming() {
    return [...this.views.values()].some((v) => v.model.running && v.model.status !== 'suspended');
  }

  /** Take a run off the page (it left the conversation). */
  drop(runId) {
    const view = this.views.get(runId);
    if (!view) return;
    view.el.remove();
    this.views.delete(runId);
    this.onBusy(this.streaming());
  }

  /**
   * A cancelled run may have been cancelled by a later question (``multitask``): the store
   * says so in its error code. Interrupted: its partial answer stays, marked; rolled back:
   * it leaves the page.
   */
  async whyCancelled(model) {
    let run;
    try {
      run = await this.api.get(`/runs/${encodeURIComponent(model.runId)}`);
    } catch {
      return; // shown as stopped; the next open reads it again
    }
    if (run.error_code === 'rolled_back') this.drop(model.runId);
    else if (run.error_code === 'interrupted') {
      model.endCode = run.error_code;
      model.version++;
      this.touch(model);
    }
  }

  gateActions(model) {
    return {
      decide: (decision) => {
        const rid = this.socket.send({ type: 'resume', run_id: model.runId, decision, conversation_id: model.conversationId || undefined });
        this.pending.set(rid, { resume: model.runId, decision });
      },
      moreInfo: () => this.api.get(`/runs/${encodeURIComponent(model.runId)}/gate`),
    };
  }

  /** The versions of a turn (its question's siblings in the tree), or null before it is stored. */
  branch(model) {
    const asked = this.tree.find((m) => m.role === 'user' && m.run_id === model.runId);
    if (!asked) return null;
    const parent = asked.parent_id ?? null;
    const siblings = this.tree.filter((m) => m.role === 'user' && (m.parent_id ?? null) === parent);
    return {
      index: siblings.indexOf(asked) + 1,
      count: siblings.length,
      go: (i) => this.choose(siblings[i - 1]),
      edit: (text) => this.askFrom(model, text, parent ?? 0),
      regenerate: () => this.askFrom(model, model.question, parent ?? 0),
    };
  }

  /** Show another version of a turn: its branch becomes the active one. */
  async choose(message) {
    if (!message || !this.conversationId) return;
    const id = this.conversationId;
    await this.api.put(`/conversations/${encodeURIComponent(id)}/active`, { message_id: message.id });
    await this.open(id);
  }

  /** Ask again from the turn before ``model``'s: the turns from it on leave the page. */
  askFrom(model, question, parent) {
    let drop = false;
    for (const [runId, view] of [...this.views]) {
      if (runId === model.runId) drop = true;
      if (drop) {
        view.el.remove();
        this.views.delete(runId);
      }
    }
    this.ask(question, model.settings || {}, parent);
  }

  async refreshTree() {
    const id = this.conversationId;
    if (!id) return;
    try {
      const conversation = await this.api.get(`/conversations/${encodeURIComponent(id)}?limit=1`);
      if (this.conversationId !== id) return;
      this.tree = conversation.tree || [];
      for (const view of this.views.values()) this.touch(view.model);
    } catch {
      // The next open reads it again.
    }
  }

  /** Open a conversation: every earlier turn with its trace, then follow what still runs. */
  async open(conversationId) {
    this.reset(conversationId);
    const [conversation, page] = await Promise.all([
      this.api.get(`/conversations/${encodeURIComponent(conversationId)}?limit=500`),
      this.api.get('/runs?limit=200').catch(() => ({ runs: [] })),
    ]);
    if (this.conversationId !== conversationId) return;
    this.tree = conversation.tree || [];
    const ids = [];
    for (const m of conversation.messages) if (m.run_id && !ids.includes(m.run_id)) ids.push(m.run_id);
    // Runs on another branch stay out; runs that left no message (failed, still running) come in.
    const branched = new Set(this.tree.map((m) => m.run_id));
    const others = page.runs.filter((r) => r.conversation_id === conversationId && !ids.includes(r.id) && !branched.has(r.id)).reverse();
    for (const r of others) ids.push(r.id);
    for (const [runId, conv] of Object.entries(activeRuns())) if (conv === conversationId && !ids.includes(runId)) ids.push(runId);
    const found = await Promise.all(ids.map((id) => this.api.get(`/runs/${encodeURIComponent(id)}`).catch(() => ({ id, status: 'queued' }))));
    if (this.conversationId !== conversationId) return;
    const runs = found.filter((r) => r.error_code !== 'rolled_back'); // a later question removed it
    for (const run of runs) {
      const model = this.model(run.id);
      if (this.socket.following.has(run.id)) {
        // Followed all along in this tab (asked here, then another conversation was
        // open): its model has every event; a replay racing the live feed could skip some.
        this.show(model);
        continue;
      }
      if (TERMINAL.has(run.status)) {
        model.loadStored(run);
        remember(run.id, null);
      } else {
        // Still running or paused: replay its events from the start (the DOM is new).
        Object.assign(model, new RunModel(run.id));
        model.question = run.question ?? '';
        model.conversationId = conversationId;
        model.status = run.status;
        this.socket.follow(run.id, '0-0');
        if (run.status === 'suspended') this.loadGate(model);
      }
      this.show(model);
    }
  }

  async loadGate(model) {
    try {
      model.loadGate(await this.api.get(`/runs/${encodeURIComponent(model.runId)}/gate`));
      this.touch(model);
    } catch {
      // The gate was decided meanwhile: the replayed events say how.
    }
  }

  ask(question, settings, parent) {
    const frame = { type: 'ask', question, settings };
    if (this.conversationId) frame.conversation_id = this.conversationId;
    if (this.conversationId && parent !== undefined) frame.parent_message_id = parent;
    const rid = this.socket.send(frame);
    this.pending.set(rid, { question, settings, from: this.conversationId });
    this.onBusy(true);
  }

  stop() {
    for (const view of this.views.values()) {
      if (view.model.running) this.socket.send({ type: 'cancel', run_id: view.model.runId });
    }
  }

  /** Every frame from the socket. */
  handle(frame) {
    const pending = frame.request_id ? this.pending.get(frame.request_id) : null;
    switch (frame.type) {
      case 'accepted': {
        this.pending.delete(frame.request_id);
        const model = this.model(frame.run_id);
        model.question = pending ? pending.question : model.question;
        model.conversationId = frame.conversation_id;
        model.waiting = Boolean(frame.queued);
        remember(frame.run_id, frame.conversation_id);
        this.socket.follow(frame.run_id, model.lastId, false);
        if (pending && pending.from !== this.conversationId) return; // the user moved on
        if (this.conversationId !== frame.conversation_id) {
          this.conversationId = frame.conversation_id;
          this.onConversation(frame.conversation_id);
        }
        this.show(model);
        return;
      }
      case 'snapshot': {
        const model = this.model(frame.run_id);
        model.loadStored(frame.run);
        model.lastId = frame.last_event_id;
        if (model.status === 'suspended') this.loadGate(model);
        if (this.views.has(frame.run_id)) this.touch(model);
        return;
      }
      case 'resumed': {
        this.pending.delete(frame.request_id);
        const model = this.model(frame.run_id);
        model.decided(pending?.decision || 'sent');
        this.touch(model);
        return;
      }
      case 'request_error': {
        this.pending.delete(frame.request_id);
        if (pending && pending.resume) {
          const model = this.model(pending.resume);
          if (model.approval) model.approval = { ...model.approval, error: frame.message };
          model.version++;
          this.touch(model);
        } else if (pending && pending.question) {
          // Refused: nothing was written. The question goes back in the box, not lost.
          const why = frame.code === 'conversation_busy'
            ? 'Not sent: this conversation is still answering (If busy: refuse).'
            : `Not sent: ${frame.message}${frame.hint ? ` (${frame.hint})` : ''}`;
          this.notify(`${why} Your question is back in the box.`);
          this.onRefused(pending.question);
          this.onBusy(this.streaming());
        } else {
          this.notify(`${frame.message}${frame.hint ? ` (${frame.hint})` : ''}`);
        }
        return;
      }
      case 'pong': case 'cancel_requested': case 'slow_consumer': return;
      default:
        if (frame.run_id && frame.id) this.event(frame);
    }
  }

  event(ev) {
    const model = this.model(ev.run_id);
    if (compareIds(ev.id, model.lastId) <= 0) return; // already applied: no repeats
    model.lastId = ev.id;
    model.apply(ev);
    if (ev.type === 'done') {
      remember(ev.run_id, null);
      if (model.conversationId === this.conversationId) {
        this.onRunEnd(model);
        this.refreshTree();
        if (ev.status === 'cancelled') this.whyCancelled(model);
      }
    }
    if (this.views.has(ev.run_id)) this.touch(model);
  }
}
