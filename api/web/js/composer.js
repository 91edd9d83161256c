// The question box: Enter sends, Shift+Enter starts a new line; per-question mode,
// accuracy, think, tools and "allow high-risk tools" switches; the Send button turns into
// Stop while a run streams. Enter still sends while one streams: the "If busy" switch says
// what the new question does to the running one (the tenant's default, queue, interrupt,
// roll back, or refuse). A Team picker (when the tenant has teams) runs the question on
// one of them instead of a mode, and draws the chosen team under the switches.
import { append, clear, h } from './dom.js';
import { drawGraph, teamEdges } from './graph.js';

export class Composer {
  constructor({ onSend, onStop }) {
    this.onSend = onSend;
    this.onStop = onStop;
    this.busy = false;
    this.input = h('textarea', { class: 'question-input', rows: '2', placeholder: 'Ask a question…', 'aria-label': 'Question' });
    this.mode = h('select', { 'aria-label': 'Mode' }, ['single', 'multi', 'custom'].map((m) => h('option', { value: m, text: m })));
    this.accuracy = h('select', { 'aria-label': 'Accuracy' }, h('option', { value: 'standard', text: 'standard' }), h('option', { value: 'accurate', text: 'accurate' }));
    this.think = h('input', { type: 'checkbox' });
    this.tools = h('input', { type: 'checkbox', checked: true });
    this.highRisk = h('input', { type: 'checkbox', name: 'approve_high_risk', 'aria-label': 'Allow high-risk tools' });
    this.multitask = h('select', { 'aria-label': 'If busy', name: 'multitask' },
      [['', 'default'], ['enqueue', 'queue'], ['interrupt', 'interrupt'], ['rollback', 'roll back'], ['reject', 'refuse']]
        .map(([value, text]) => h('option', { value, text })));
    this.team = h('select', { 'aria-label': 'Team', name: 'team', on: { change: () => this.showTeam() } }, h('option', { value: '', text: 'none' }));
    this.teamLabel = h('label', { hidden: true, title: 'Run the question on one of your teams instead of a mode' }, 'Team ', this.team);
    this.teamGraph = h('div', { class: 'graph-box' });
    this.teamBox = h('details', { class: 'team-graph', hidden: true }, h('summary', { text: 'team' }), this.teamGraph);
    this.loadTeam = null;
    this.button = h('button', { type: 'button', class: 'btn primary send', text: 'Send', on: { click: () => this.submit() } });
    this.input.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        if (this.input.value.trim()) this.send();
        else this.submit();
      }
    });
    this.el = h('div', { class: 'composer' },
      this.input,
      h('div', { class: 'switches' },
        h('label', {}, 'Mode ', this.mode),
        this.teamLabel,
        h('label', {}, 'Accuracy ', this.accuracy),
        h('label', {}, this.think, ' Think'),
        h('label', {}, this.tools, ' Tools'),
        h('label', { title: 'HIGH-risk tools (such as http_fetch) may run for this question without asking' }, this.highRisk, ' Allow high-risk tools'),
        h('label', { title: 'What a question sent while an answer streams does to it' }, 'If busy ', this.multitask),
        this.button),
      this.teamBox);
  }

  /** Offer the tenant's teams ({name, version, description}); ``load(name)`` reads one. */
  setTeams(teams, load) {
    this.loadTeam = load;
    append(clear(this.team), [h('option', { value: '', text: 'none' }),
      teams.map((t) => h('option', { value: t.name, text: `${t.name} (v${t.version})`, title: t.description || '' }))]);
    this.teamLabel.hidden = teams.length === 0;
  }

  /** Draw the chosen team (its latest version: what a question sent now runs). */
  async showTeam() {
    const name = this.team.value;
    this.mode.disabled = this.accuracy.disabled = Boolean(name);
    this.teamBox.hidden = !name;
    clear(this.teamGraph);
    if (!name || !this.loadTeam) return;
    const team = await this.loadTeam(name);
    if (this.team.value !== name) return; // another team was chosen meanwhile
    const about = team.document.description;
    this.teamBox.querySelector('summary').textContent = `team ${team.name} v${team.version}${about ? ` · ${about}` : ''}`;
    this.teamGraph.append(drawGraph(teamEdges(team.document)));
  }

  /** Preset the switches from the tenant's effective settings. */
  preset(effective) {
    if (!effective) return;
    this.mode.value = ['multi', 'custom'].includes(effective.mode) ? effective.mode : 'single';
    this.accuracy.value = effective.accuracy || 'standard';
    this.think.checked = Boolean(effective.think);
    this.tools.checked = effective.use_tools !== false;
    this.highRisk.checked = Boolean(effective.approve_high_risk);
  }

  setBusy(busy) {
    this.busy = busy;
    this.button.textContent = busy ? 'Stop' : 'Send';
    this.button.classList.toggle('danger', busy);
    this.button.classList.toggle('primary', !busy);
  }

  /** Put a refused question back in the box (unless something new was typed there). */
  restore(question) {
    if (!this.input.value.trim()) this.input.value = question;
    this.input.focus();
  }

  submit() {
    if (this.busy) {
      this.onStop();
      return;
    }
    this.send();
  }

  /** Send the question, also while an answer streams (the server applies "If busy"). */
  send() {
    const question = this.input.value.trim();
    if (!question) return;
    this.input.value = '';
    const settings = {
      mode: this.mode.value, accuracy: this.accuracy.value,
      think: this.think.checked, use_tools: this.tools.checked,
      approve_high_risk: this.highRisk.checked,
    };
    if (this.multitask.value) settings.multitask = this.multitask.value;
    if (this.team.value) {
      settings.team = this.team.value;
      this.teamBox.open = false; // the answer needs the room; the summary still names the team
    }
    this.onSend(question, settings);
  }
}
