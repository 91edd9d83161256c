// One run folded from its events (live ones, a replay, or the stored trace): what the
// chat shows. A `step_retry` drops what that step streamed before. A `draft_superseded`
// event (or answer tokens of a later `attempt`) makes the answer so far a superseded draft
// and starts a new one, labelled with the critique or verdict that sent the run back;
// traces written before that event existed fall back to the critique/verdict alone.

export const TERMINAL = new Set(['done', 'error', 'timeout', 'cancelled', 'rejected', 'budget_exhausted']);

export class RunModel {
  constructor(runId) {
    this.runId = runId;
    this.question = '';
    this.conversationId = null;
    this.waiting = false; // accepted behind the conversation's running run (multitask)
    this.endCode = null; // the stored run's error code (interrupted: a later question cut it short)
    this.mode = null;
    this.status = 'queued';
    this.interpreted = null;
    this.reasoning = []; // {step, agent, text}
    this.drafts = [{ parts: [], superseded: null, attempt: null }];
    this.pendingSupersede = null;
    this.timeline = [];
    this.calls = new Map();
    this.citations = [];
    this.stripped = 0;
    this.approval = null;
    this.usage = {};
    this.error = null;
    this.finalAnswer = null;
    this.stopReason = null;
    this.verified = null; // what the judges concluded: true, false, null (unknown)
    this.verifiedReason = null; // null: not reported (single mode says "not judged")
    this.lastId = '0-0';
    this.version = 0;
  }

  get draft() { return this.drafts[this.drafts.length - 1]; }

  /** The answer as shown: the final one once `done` has it, else the current draft. */
  get answer() {
    return this.finalAnswer ?? this.draft.parts.map((p) => p.text).join('');
  }

  get reasoningText() { return this.reasoning.map((p) => p.text).join(''); }

  get running() { return !TERMINAL.has(this.status); }

  /** Apply one event (a live frame or a stored trace entry). */
  apply(ev) {
    this.version++;
    const step = ev.step_id ?? null;
    const text = ev.delta ?? ev.text ?? '';
    if (this.approval && !this.approval.decided && !['approval_request', 'done'].includes(ev.type)) {
      // The run moved on past its gate: it was decided (elsewhere, or before a reload).
      this.approval.decided = 'closed';
      if (this.status === 'suspended') this.status = 'running';
    }
    switch (ev.type) {
      case 'run_started':
        this.question = ev.question ?? this.question;
        this.mode = ev.mode ?? this.mode;
        this.conversationId = ev.conversation_id ?? this.conversationId;
        if (this.status === 'queued') this.status = 'running';
        break;
      case 'interpreted': this.interpreted = ev.text; break;
      case 'plan': this.timeline.push({ kind: 'plan', step, agent: ev.agent, steps: ev.steps || [] }); break;
      case 'reasoning': {
        const last = this.reasoning[this.reasoning.length - 1];
        if (last && last.step === step) last.text += text;
        else {
          this.reasoning.push({ step, agent: ev.agent, text });
          this.timeline.push({ kind: 'thinking', step, agent: ev.agent, ref: this.reasoning[this.reasoning.length - 1] });
        }
        break;
      }
      case 'answer': {
        const attempt = ev.attempt ?? null;
        const later = attempt !== null && this.draft.attempt !== null && attempt !== this.draft.attempt;
        if (later || this.pendingSupersede) this.supersede(null);
        if (attempt !== null) this.draft.attempt = attempt;
        const parts = this.draft.parts;
        const last = parts[parts.length - 1];
        if (last && last.step === step) last.text += text;
        else parts.push({ step, text });
        break;
      }
      case 'tool_call': {
        const entry = { kind: 'tool', step, agent: ev.agent, callId: ev.call_id, tool: ev.tool, args: ev.args, status: 'running' };
        this.calls.set(ev.call_id, entry);
        this.timeline.push(entry);
        break;
      }
      case 'tool_result': {
        let entry = this.calls.get(ev.call_id);
        if (!entry) {
          entry = { kind: 'tool', step, agent: ev.agent, callId: ev.call_id, tool: ev.tool };
          this.calls.set(ev.call_id, entry);
          this.timeline.push(entry);
        }
        Object.assign(entry, {
          status: ev.status, code: ev.code, message: ev.message, result: ev.result,
          truncated: Boolean(ev.truncated), durationMs: ev.duration_ms, blockedHost: ev.blocked_host,
        });
        break;
      }
      case 'critique':
        this.timeline.push({ kind: 'critique', step, verdict: ev.verdict, reason: ev.reason });
        if (ev.verdict === 'REVISE' || ev.verdict === 'REPLAN') this.pendingSupersede = { by: 'critic', verdict: ev.verdict, reason: ev.reason };
        break;
      case 'verdict':
        this.timeline.push({ kind: 'verdict', step, verdict: ev.verdict, reasons: ev.reasons || [] });
        if (ev.verdict === 'needs_revision' || ev.verdict === 'fail') this.pendingSupersede = { by: 'verifier', verdict: ev.verdict, reason: (ev.reasons || []).join('; ') };
        break;
      case 'citations':
        if (ev.agent === 'merge') { // the evidence gathered for the researcher, not the answer's citations
          this.timeline.push({ kind: 'evidence', step, chunks: (ev.items || []).length });
          break;
        }
        this.citations = ev.items || [];
        this.stripped = ev.stripped || 0;
        this.timeline.push({ kind: 'citations', step, kept: this.citations.length, stripped: this.stripped });
        break;
      case 'approval_request':
        this.approval = { ...(this.approval || {}), ...pickGate(ev), decided: null };
        this.status = 'suspended';
        this.timeline.push({ kind: 'gate', step, reason: ev.reason, host: ev.blocked_host, tool: ev.tool });
        break;
      case 'draft_superseded': this.supersede(ev.reason || ''); break;
      case 'step_retry': this.dropStep(step, ev.delivery); break;
      case 'error':
        this.error = { code: ev.code, message: ev.message };
        this.timeline.push({ kind: 'error', step, code: ev.code, message: ev.message });
        break;
      case 'done':
        this.status = ev.status;
        this.usage = ev.usage || {};
        this.stopReason = ev.stop_reason ?? null;
        this.verified = ev.verified ?? null;
        this.verifiedReason = ev.verified_reason ?? null;
        if (ev.answer) this.finalAnswer = ev.answer;
        if (this.approval && !this.approval.decided) this.approval.decided = 'closed';
        break;
      default: this.version--; // an unknown type changes nothing
    }
  }

  /** Close the current draft (when it has text) as superseded, by the judge that sent the run back. */
  supersede(reason) {
    const why = this.pendingSupersede || { by: 'judge', verdict: null, reason: reason || '' };
    if (this.draft.parts.length) {
      this.draft.superseded = why;
      this.drafts.push({ parts: [], superseded: null, attempt: null });
    }
    this.pendingSupersede = null;
  }

  dropStep(step, delivery) {
    this.reasoning = this.reasoning.filter((p) => p.step !== step);
    for (const d of this.drafts) d.parts = d.parts.filter((p) => p.step !== step);
    this.drafts = this.drafts.filter((d, n) => d.parts.length || n === this.drafts.length - 1);
    this.timeline = this.timeline.filter((e) => e.step !== step || e.kind === 'retry');
    for (const [id, e] of this.calls) if (e.step === step) this.calls.delete(id);
    this.timeline.push({ kind: 'retry', step, delivery });
  }

  /** A run as the store keeps it (REST `GET /runs/{id}`, or a websocket snapshot). */
  loadStored(run) {
    const keep = { lastId: this.lastId, approval: this.approval };
    Object.assign(this, new RunModel(this.runId), keep);
    this.question = run.question ?? '';
    this.conversationId = run.conversation_id ?? null;
    this.mode = run.mode ?? null;
    for (const entry of run.trace || []) this.apply(entry);
    this.status = run.status;
    if (run.answer) this.finalAnswer = run.answer;
    this.usage = run.usage || {};
    if (run.error_code && !this.error) this.error = { code: run.error_code, message: '' };
    this.endCode = run.error_code ?? null;
    if (TERMINAL.has(this.status) && this.approval && !this.approval.decided) this.approval.decided = 'closed';
    this.version++;
  }

  /** The open gate as `GET /runs/{id}/gate` returns it (after a reload or a restart). */
  loadGate(gate) {
    this.approval = { ...(this.approval || {}), ...pickGate(gate), decided: null };
    this.status = 'suspended';
    this.version++;
  }

  decided(decision) {
    if (this.approval) this.approval.decided = decision;
    if (this.status === 'suspended') this.status = 'running';
    this.version++;
  }
}

function pickGate(g) {
  const out = { reason: g.reason };
  for (const [from, to] of [['answer', 'answer'], ['critique', 'critique'], ['blocked_host', 'host'], ['tool', 'tool'], ['args', 'args']]) {
    if (g[from] !== undefined && g[from] !== null) out[to] = g[from];
  }
  return out;
}
