// One turn of the chat: the question, and the run's answer as it streams (Markdown),
// reasoning (dimmed, collapsible), superseded drafts, citations, the approval card, the
// outcome, the Details timeline, and the turn's branches: "‹ 2/3 ›" when the question
// was edited or the answer regenerated, with Edit and Regenerate.
import { clear, h, safeLink } from './dom.js';
import { render, renderInto } from './markdown.js';
import { renderTimeline } from './details.js';
import { renderApproval } from './approvals.js';

const WHY = {
  critic: (s) => `superseded: the critic asked to ${s.verdict === 'REPLAN' ? 'replan' : 'revise'}`,
  verifier: (s) => `superseded: the verifier said ${s.verdict}`,
  judge: () => 'superseded: sent back for another attempt',
};

export class RunView {
  constructor(model, actions) {
    this.model = model;
    this.actions = actions;
    this.seen = -1;
    this.cache = {};
    this.question = h('div', { class: 'bubble question' });
    this.interpreted = h('p', { class: 'interpreted', hidden: true });
    this.reasoningText = h('div', { class: 'reasoning-text' });
    this.reasoning = h('details', { class: 'reasoning', hidden: true }, h('summary', { text: 'Reasoning' }), this.reasoningText);
    this.drafts = h('div', { class: 'drafts' });
    this.answer = h('div', { class: 'answer md' });
    this.sources = h('ol', { class: 'sources', hidden: true });
    this.approval = h('div', { class: 'approval-slot' });
    this.status = h('p', { class: 'status', hidden: true });
    this.timeline = h('div', { class: 'details-body', hidden: true });
    this.detailsButton = h('button', {
      type: 'button', class: 'link details-toggle', text: 'Details', 'aria-expanded': 'false',
      on: { click: () => this.toggleDetails() },
    });
    this.branches = h('span', { class: 'branches', hidden: true });
    this.editor = h('div', { class: 'edit-box', hidden: true });
    this.editButton = h('button', { type: 'button', class: 'link edit', text: 'Edit', on: { click: () => this.openEditor() } });
    this.regenButton = h('button', { type: 'button', class: 'link regenerate', text: 'Regenerate', on: { click: () => this.actions.branch?.(model)?.regenerate() } });
    this.el = h('article', { class: 'turn running', 'data-run-id': model.runId, 'data-status': model.status },
      this.question, this.editor,
      h('div', { class: 'bubble assistant' },
        this.interpreted, this.reasoning, this.drafts, this.answer, this.sources,
        this.approval, this.status,
        h('div', { class: 'turn-foot' }, this.branches, this.detailsButton, this.editButton, this.regenButton),
        this.timeline));
  }

  openEditor() {
    const branch = this.actions.branch?.(this.model);
    if (!branch) return;
    const box = h('textarea', { class: 'question-input', rows: '2', 'aria-label': 'Edited question' });
    box.value = this.model.question;
    const send = h('button', { type: 'button', class: 'btn primary', text: 'Send', on: { click: () => { if (box.value.trim()) branch.edit(box.value.trim()); } } });
    const cancel = h('button', { type: 'button', class: 'btn', text: 'Cancel', on: { click: () => { this.editor.hidden = true; clear(this.editor); } } });
    clear(this.editor);
    this.editor.append(box, h('div', { class: 'switches' }, send, cancel));
    this.editor.hidden = false;
    box.focus();
  }

  renderBranches() {
    const branch = this.actions.branch?.(this.model);
    const ready = Boolean(branch) && !this.model.running;
    this.editButton.hidden = !ready;
    this.regenButton.hidden = !ready;
    const key = branch ? `${branch.index}/${branch.count}` : '';
    if (!this.changed('b', key)) return;
    clear(this.branches);
    this.branches.hidden = !branch || branch.count < 2;
    if (!branch || branch.count < 2) return;
    this.branches.append(
      h('button', { type: 'button', class: 'link prev', text: '‹', 'aria-label': 'Previous version', disabled: branch.index <= 1, on: { click: () => branch.go(branch.index - 1) } }),
      h('span', { class: 'branch-index', text: ` ${branch.index}/${branch.count} ` }),
      h('button', { type: 'button', class: 'link next', text: '›', 'aria-label': 'Next version', disabled: branch.index >= branch.count, on: { click: () => branch.go(branch.index + 1) } }));
  }

  toggleDetails(open = this.timeline.hidden) {
    this.timeline.hidden = !open;
    this.detailsButton.setAttribute('aria-expanded', String(open));
    this.seen = -1;
    this.update();
  }

  changed(name, value) {
    if (this.cache[name] === value) return false;
    this.cache[name] = value;
    return true;
  }

  cite(n) {
    const c = this.model.citations.find((x) => x.ref === n);
    if (!c) return null;
    const title = c.title || c.source;
    return h('button', {
      type: 'button', class: 'cite', text: String(n),
      title: `${title}${c.snippet ? ` — ${c.snippet}` : ''}`, 'aria-label': `source ${n}: ${title}`,
      on: { click: () => this.showSource(n) },
    });
  }

  showSource(n) {
    const item = this.sources.querySelector(`[data-ref="${n}"]`);
    if (item) {
      item.classList.add('flash');
      item.scrollIntoView({ block: 'nearest' });
      setTimeout(() => item.classList.remove('flash'), 1200);
    }
  }

  update() {
    const m = this.model;
    this.renderBranches(); // the tree may have changed without the run (another turn ended)
    if (m.version === this.seen) return;
    this.seen = m.version;
    this.el.classList.toggle('running', m.running);
    this.el.dataset.status = m.status; // what tests and scripts can wait on
    if (this.changed('q', m.question)) this.question.textContent = m.question;
    if (this.changed('i', m.interpreted)) {
      this.interpreted.hidden = !m.interpreted;
      this.interpreted.textContent = m.interpreted ? `Interpreted as: ${m.interpreted}` : '';
    }
    const reasoning = m.reasoningText;
    if (this.changed('r', reasoning)) {
      this.reasoning.hidden = !reasoning;
      this.reasoningText.textContent = reasoning;
    }
    const old = m.drafts.slice(0, -1);
    const draftKey = old.map((d) => d.parts.map((p) => p.text).join('').length + (d.superseded?.verdict || '')).join('|');
    if (this.changed('d', draftKey)) {
      clear(this.drafts);
      old.forEach((d, n) => {
        const text = d.parts.map((p) => p.text).join('');
        const why = d.superseded ? WHY[d.superseded.by](d.superseded) : 'superseded';
        this.drafts.append(h('details', { class: 'draft superseded' },
          h('summary', {}, h('span', { class: 'badge', text: `Draft ${n + 1}` }), ' ', why, d.superseded?.reason ? ` — ${d.superseded.reason}` : ''),
          h('div', { class: 'md' }, render(text))));
      });
    }
    const citeKey = m.citations.map((c) => `${c.ref}:${c.title}`).join('|');
    renderInto(this.answer, m.answer, { key: citeKey, cite: (n) => this.cite(n) });
    this.answer.classList.toggle('streaming', m.running && m.status !== 'suspended');
    // A run that ended other than done keeps what it wrote, shown as a partial answer.
    const partial = !m.running && m.status !== 'done' && m.status !== 'suspended' && Boolean(m.answer);
    this.answer.classList.toggle('partial', partial);
    this.el.dataset.partial = partial ? 'true' : 'false';
    if (this.changed('c', `${citeKey}/${m.stripped}`)) this.renderSources();
    if (this.changed('a', JSON.stringify(m.approval))) {
      const card = renderApproval(m, this.actions.gate(m));
      clear(this.approval);
      if (card) this.approval.append(card);
    }
    const outcome = this.outcome();
    if (this.changed('s', outcome)) {
      this.status.hidden = !outcome;
      this.status.textContent = outcome;
      this.status.className = `status ${m.status}`;
    }
    if (!this.timeline.hidden) {
      clear(this.timeline);
      this.timeline.append(renderTimeline(m));
    }
  }

  renderSources() {
    const m = this.model;
    clear(this.sources);
    this.sources.hidden = !m.citations.length;
    for (const c of m.citations) {
      const title = c.title || c.source;
      const head = /^https?:/i.test(c.source) ? safeLink(c.source, title) : h('b', { text: title });
      this.sources.append(h('li', { 'data-ref': String(c.ref) },
        h('span', { class: 'ref', text: `[${c.ref}]` }), ' ', head,
        c.source && c.source !== title ? h('span', { class: 'dim', text: ` · ${c.source}` }) : null,
        c.snippet ? h('div', { class: 'snippet', text: c.snippet }) : null));
    }
  }

  outcome() {
    const m = this.model;
    if (m.status === 'suspended') return 'Waiting for your decision.';
    if (m.status === 'queued' && m.waiting) return 'Waiting for the answer before it to end.';
    if (m.status === 'cancelled' && m.endCode === 'interrupted') return 'Interrupted by your next question. The answer above is partial; it stays in the conversation.';
    if (m.status === 'cancelled') return 'Stopped.';
    if (m.status === 'rejected') return 'The answer was rejected.';
    if (m.status === 'timeout') return 'The run ran out of time.';
    if (m.status === 'budget_exhausted') return `Budget spent${m.error && m.error.message ? `: ${m.error.message}` : ''}. The answer above is partial.`;
    if (m.status === 'error') return `The run failed${m.error ? `: ${m.error.code}${m.error.message ? ` — ${m.error.message}` : ''}` : '.'}`;
    const notes = [];
    if (m.status === 'done' && m.stopReason) notes.push(`Note: ${m.stopReason.replaceAll('_', ' ')}`);
    if (m.status === 'done' && m.verifiedReason && m.verified !== null) {
      notes.push(`${m.verified ? 'Verified' : 'Not verified'}: ${m.verifiedReason}`);
    } else if (m.status === 'done' && m.verifiedReason && !m.verifiedReason.startsWith('not judged')) {
      notes.push(`Verification unknown: ${m.verifiedReason}`);
    }
    return notes.join(' · ');
  }
}
