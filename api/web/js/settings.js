// The settings dialog (admin keys): Preferences, Network, Budgets, Agents, Documents,
// Schedules, Activity; and the Memory dialog every user opens.
import { clear, h } from './dom.js';
import { activityPanel } from './activity_panel.js';
import { budgetsPanel } from './budgets_panel.js';
import { documentsPanel } from './documents_panel.js';
import { memoryPanel } from './memory_panel.js';
import { schedulesPanel } from './schedules_panel.js';
import { agentsPanel, networkPanel, preferencesPanel } from './panels.js';

const TABS = [
  ['Preferences', (api) => preferencesPanel(api)],
  ['Network', (api) => networkPanel(api)],
  ['Budgets', (api) => budgetsPanel(api)],
  ['Agents', (api) => agentsPanel(api)],
  ['Documents', (api) => documentsPanel(api)],
  ['Schedules', (api) => schedulesPanel(api)],
  ['Activity', (api, conversation) => activityPanel(api, conversation())],
];

export function openSettings(api, root, conversation) {
  openSheet('Settings', TABS, api, root, conversation);
}

/** The Memory dialog (every user): their own memories. */
export function openMemory(api, root) {
  openSheet('Memory', [['Memory', (a) => memoryPanel(a)]], api, root, () => null);
}

function openSheet(title, tabList, api, root, conversation) {
  const body = h('div', { class: 'panel' });
  const tabs = h('div', { class: 'tabs', role: 'tablist' });
  const close = () => { dialog.remove(); };
  // The tab shown (or loading), and a count of tab choices: a panel that loads after
  // another tab was chosen is dropped, and choosing the tab already shown keeps its edits.
  let current = null;
  let chosen = 0;
  const show = async (name, make) => {
    if (name === current) return;
    current = name;
    const mine = ++chosen;
    for (const t of tabs.children) t.setAttribute('aria-selected', String(t.textContent === name));
    clear(body).append(h('p', { class: 'dim', text: 'loading…' }));
    try {
      const panel = await make(api, conversation);
      if (mine === chosen) clear(body).append(panel);
    } catch (e) {
      if (mine !== chosen) return;
      current = null; // choosing the tab again, or Try again, tries again
      const again = h('button', { type: 'button', class: 'retry', text: 'Try again', on: { click: () => show(name, make) } });
      clear(body).append(h('p', { class: 'error', text: `${name}: ${e.message}` }), again);
    }
  };
  for (const [name, make] of tabList) {
    tabs.append(h('button', { type: 'button', role: 'tab', class: 'tab', text: name, on: { click: () => show(name, make) } }));
  }
  const dialog = h('div', { class: 'overlay', role: 'dialog', 'aria-modal': 'true', 'aria-label': title },
    h('div', { class: 'sheet' },
      h('div', { class: 'sheet-head' }, h('h3', { text: title }), h('button', { type: 'button', class: 'icon close', 'aria-label': 'Close', text: '×', on: { click: close } })),
      tabs, body));
  dialog.addEventListener('keydown', (ev) => { if (ev.key === 'Escape') close(); });
  root.append(dialog);
  show(...tabList[0]);
}
