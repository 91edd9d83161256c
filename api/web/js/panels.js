// Settings panels (admin keys only; the API refuses the writes to anyone else anyway):
// Preferences, Network, Agents (prompts, the researcher's tools, the run graph and the
// tenant's teams).
import { clear, h } from './dom.js';
import { drawGraph, teamEdges } from './graph.js';

const SOURCES = ['documents', 'graph', 'memory', 'web'];

function setValue(el, value) {
  el.value = value;
  return el;
}

function tri(name, value) {
  // null = the deployment default
  return setValue(h('select', { name, 'aria-label': name }, h('option', { value: '', text: 'default' }), h('option', { value: 'true', text: 'on' }), h('option', { value: 'false', text: 'off' })), value === null || value === undefined ? '' : String(value));
}

const triValue = (el) => (el.value === '' ? null : el.value === 'true');

/** PUT the preferences back with `changes`, keeping everything else as stored. */
export async function savePrefs(api, view, changes) {
  const prefs = { ...view.preferences, ...changes };
  if (prefs.mcp_servers && JSON.stringify(prefs.mcp_servers).includes('[REDACTED]')) {
    throw new Error("this tenant's MCP servers have secret headers: change them through the API, not here");
  }
  for (const k of Object.keys(prefs)) if (prefs[k] === null) delete prefs[k];
  return api.put('/settings', prefs);
}

export function saveRow(onSave) {
  const note = h('span', { class: 'note', 'aria-live': 'polite' });
  const button = h('button', {
    type: 'button', class: 'btn primary', text: 'Save',
    on: {
      click: async () => {
        button.disabled = true;
        note.textContent = 'saving…';
        try {
          await onSave();
          note.textContent = 'saved';
        } catch (e) {
          note.textContent = `not saved: ${e.message}`;
        } finally {
          button.disabled = false;
        }
      },
    },
  });
  return h('div', { class: 'save-row' }, button, note);
}

export async function preferencesPanel(api) {
  const view = await api.get('/settings');
  const p = view.preferences;
  const mode = setValue(h('select', { name: 'mode', 'aria-label': 'mode' }, ['', 'single', 'multi', 'custom'].map((o) => h('option', { value: o, text: o || 'default' }))), p.mode ?? '');
  const accuracy = setValue(h('select', { name: 'accuracy', 'aria-label': 'accuracy' }, ['', 'standard', 'accurate'].map((o) => h('option', { value: o, text: o || 'default' }))), p.accuracy ?? '');
  const think = tri('think', p.think);
  const tools = tri('use_tools', p.use_tools);
  const gate = tri('human_gate', p.human_gate);
  const context = tri('single_context', p.single_context);
  const memory = tri('memory', p.memory);
  // null: the sources that exist for the tenant (the default); a list, even empty: exactly those.
  const chosen = Array.isArray(p.sources);
  const useDefault = h('input', { type: 'radio', name: 'sources_choice', value: 'default', checked: !chosen });
  const useOnly = h('input', { type: 'radio', name: 'sources_choice', value: 'only', checked: chosen });
  const boxes = SOURCES.map((s) => h('input', { type: 'checkbox', name: 'source', value: s, checked: chosen && p.sources.includes(s) }));
  const sync = () => { for (const b of boxes) b.disabled = useDefault.checked; };
  for (const el of [useDefault, useOnly]) el.addEventListener('change', sync);
  for (const b of boxes) b.addEventListener('change', () => { if (b.checked) { useOnly.checked = true; sync(); } });
  sync();
  return h('div', { class: 'panel-body' },
    h('p', { class: 'dim', text: `Effective now: ${view.effective.mode}, ${view.effective.accuracy}, think ${view.effective.think ? 'on' : 'off'}, tools ${view.effective.use_tools ? 'on' : 'off'}, answer gate ${view.effective.human_gate ? 'on' : 'off'}.` }),
    h('div', { class: 'form' },
      h('label', {}, 'Mode', mode), h('label', {}, 'Accuracy', accuracy), h('label', {}, 'Think', think),
      h('label', {}, 'Tools', tools), h('label', {}, 'Answer gate (multi)', gate),
      h('label', {}, 'Documents first (single)', context),
      h('label', {}, 'Memory (what users say about themselves)', memory),
      h('fieldset', {}, h('legend', { text: 'Sources (multi)' }),
        h('label', { class: 'inline' }, useDefault, ' the default sources (those that exist: documents, graph, memory, web)'),
        h('label', { class: 'inline' }, useOnly, ' only these (none ticked: no sources):'),
        boxes.map((b) => h('label', { class: 'inline' }, b, ` ${b.value}`)))),
    saveRow(() => savePrefs(api, view, {
      mode: mode.value || null, accuracy: accuracy.value || null, think: triValue(think),
      use_tools: triValue(tools), human_gate: triValue(gate), single_context: triValue(context),
      memory: triValue(memory),
      sources: useDefault.checked ? null : boxes.filter((b) => b.checked).map((b) => b.value),
    })));
}

export async function networkPanel(api) {
  const view = await api.get('/settings');
  const p = view.preferences;
  const enabled = tri('egress_enabled', p.egress_enabled);
  const hosts = h('textarea', { rows: '6', name: 'egress_hosts', 'aria-label': 'allowlist', placeholder: 'one host per line: example.com, *.example.org' });
  hosts.value = (p.egress_hosts ?? []).join('\n');
  return h('div', { class: 'panel-body' },
    h('p', { class: 'dim', text: `Effective now: egress ${view.effective.egress_enabled ? 'on' : 'off'}; ${view.effective.egress_hosts.length} allowed host(s). The SSRF guard always applies.` }),
    h('div', { class: 'form' }, h('label', {}, 'Egress', enabled), h('label', {}, 'Allowlist', hosts)),
    saveRow(() => savePrefs(api, view, {
      egress_enabled: triValue(enabled),
      egress_hosts: hosts.value.split(/\s+/).map((s) => s.trim()).filter(Boolean),
    })));
}

export async function agentsPanel(api) {
  const config = await api.get('/agents/config');
  const prompts = config.agents.map((a) => {
    const area = h('textarea', { rows: '3', name: a.name, 'aria-label': `${a.name} prompt`, placeholder: 'empty: the default prompt' });
    area.value = a.prompt;
    return { name: a.name, area, box: h('details', { class: 'agent' }, h('summary', { text: a.name }), h('div', { class: 'dim small', text: `Default: ${a.default_prompt}` }), area) };
  });
  const tools = h('input', { type: 'text', name: 'researcher_tools', 'aria-label': 'researcher tools', placeholder: 'all tools', value: (config.researcher_tools ?? []).join(', ') });
  // The tenant's teams are drawn beside the built-in modes (version 0 is a built-in one).
  const teams = (await api.get('/teams').catch(() => ({ teams: [] }))).teams.filter((t) => t.version > 0);
  const modes = [['multi', 'multi'], ['single', 'single'], ...teams.map((t) => [`team:${t.name}`, `team ${t.name} (v${t.version})`])];
  const graphMode = h('select', { 'aria-label': 'graph mode' }, modes.map(([value, text]) => h('option', { value, text })));
  const graphAccuracy = h('select', { 'aria-label': 'graph accuracy' }, ['standard', 'accurate'].map((o) => h('option', { value: o, text: o })));
  const graph = h('div', { class: 'graph-box' });
  const draw = async () => {
    const team = graphMode.value.startsWith('team:') ? graphMode.value.slice(5) : null;
    graphAccuracy.disabled = team !== null;
    if (team === null) {
      const data = await api.get(`/graph?mode=${graphMode.value}&accuracy=${graphAccuracy.value}`);
      clear(graph).append(drawGraph(data.edges));
      return;
    }
    const { document } = await api.get(`/teams/${encodeURIComponent(team)}`);
    clear(graph).append(drawGraph(teamEdges(document)));
  };
  graphMode.addEventListener('change', draw);
  graphAccuracy.addEventListener('change', draw);
  await draw();
  return h('div', { class: 'panel-body' },
    h('h4', { text: 'Run graph' }), h('div', { class: 'form inline-form' }, graphMode, graphAccuracy), graph,
    h('h4', { text: 'Prompts' }), prompts.map((p) => p.box),
    h('label', {}, "Researcher's tools (comma-separated; empty: all)", tools),
    saveRow(() => api.put('/agents/config', {
      agents: prompts.map((p) => ({ name: p.name, prompt: p.area.value })),
      researcher_tools: tools.value.trim() ? tools.value.split(',').map((s) => s.trim()).filter(Boolean) : null,
    })));
}
