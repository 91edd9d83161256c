// The page: sign in, then the conversation list, the chat, the question box and (for
// admin keys) the settings panels.
import { Api } from './api.js';
import { clear, h } from './dom.js';
import { Chat } from './chat.js';
import { Composer } from './composer.js';
import { Sidebar } from './sidebar.js';
import { Socket } from './socket.js';
import { openMemory, openSettings } from './settings.js';
import { usageText } from './budgets_panel.js';
import {
  currentSession, forgetSession, sessionToken, signInWithKey, signInWithLoginToken, signOut, takeLoginToken,
} from './session.js';

const root = document.getElementById('app');
const api = new Api(sessionToken, () => showSignIn('Your session ended; sign in again.'));

function conversationFromHash() {
  const id = new URLSearchParams(location.hash.slice(1)).get('c');
  return id && /^[A-Za-z0-9_-]{1,64}$/.test(id) ? id : null;
}

function showSignIn(message = '') {
  forgetSession();
  const key = h('input', { type: 'password', class: 'key-input', placeholder: 'abk_…', autocomplete: 'off', 'aria-label': 'API key' });
  const note = h('p', { class: 'note', text: message, 'aria-live': 'polite' });
  const submit = async () => {
    note.textContent = 'signing in…';
    try {
      await signInWithKey(api, key.value);
      key.value = '';
      await boot();
    } catch (e) {
      note.textContent = e.message;
    }
  };
  key.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') submit(); });
  clear(root).append(h('div', { class: 'signin' },
    h('h1', { text: 'agentbus' }),
    h('p', { text: 'Open the link `agentbus up` printed, or paste an API key.' }),
    key, h('button', { type: 'button', class: 'btn primary', text: 'Sign in', on: { click: submit } }), note));
  key.focus();
}

function showApp(who) {
  const toast = h('div', { class: 'toast', role: 'status', hidden: true });
  let toastTimer = 0;
  const notify = (text) => {
    toast.textContent = text;
    toast.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { toast.hidden = true; }, 6000);
  };
  const state = h('span', { class: 'conn', text: 'connecting' });
  let chat;
  const socket = new Socket({
    token: sessionToken,
    onFrame: (f) => chat.handle(f),
    onState: (s) => { state.textContent = s; state.className = `conn ${s}`; },
    onUnauthorized: () => showSignIn('Your session ended; sign in again.'),
  });
  const composer = new Composer({ onSend: (q, s) => chat.ask(q, s), onStop: () => chat.stop() });
  const setUrl = (id) => history.replaceState(null, '', id ? `#c=${id}` : location.pathname);
  const sidebar = new Sidebar({
    api,
    notify,
    onOpen: (id) => { document.body.classList.remove('nav-open'); open(id); },
    onNew: () => { document.body.classList.remove('nav-open'); chat.reset(null); setUrl(null); sidebar.select(null); composer.input.focus(); },
    onDeleted: (id) => { if (chat.conversationId === id) { chat.reset(null); setUrl(null); } },
  });
  chat = new Chat({
    api, socket, notify,
    onConversation: (id) => { setUrl(id); sidebar.select(id); sidebar.refresh(); },
    onBusy: (busy) => composer.setBusy(busy),
    onRunEnd: () => { sidebar.refresh(); showUsage(); }, // a new conversation is listed once it is stored
    onRefused: (question) => composer.restore(question),
  });
  const open = async (id) => {
    setUrl(id);
    sidebar.select(id);
    try {
      await chat.open(id);
    } catch (e) {
      notify(`Could not open the conversation: ${e.message}`);
      chat.reset(null);
      setUrl(null);
    }
  };
  const usage = h('span', { class: 'usage dim', 'aria-live': 'polite' });
  const showUsage = () => api.get('/usage?period=day').then((u) => { usage.textContent = usageText(u); }).catch(() => {});
  const bar = h('header', { class: 'topbar' },
    h('button', { type: 'button', class: 'icon menu', 'aria-label': 'Conversations', 'aria-controls': 'sidebar', text: '☰', on: { click: () => document.body.classList.toggle('nav-open') } }),
    h('span', { class: 'brand', text: 'agentbus' }),
    state,
    h('span', { class: 'who', text: `${who.subject} · ${who.tenant_id}${who.is_admin ? ' · admin' : ''}` }),
    usage,
    h('button', { type: 'button', class: 'btn memory-open', text: 'Memory', on: { click: () => openMemory(api, root) } }),
    who.is_admin ? h('button', { type: 'button', class: 'btn settings-open', text: 'Settings', on: { click: () => openSettings(api, root, () => chat.conversationId) } }) : null,
    h('button', { type: 'button', class: 'btn', text: 'Sign out', on: { click: async () => { socket.close(); await signOut(api).catch(() => {}); showSignIn(); } } }));
  clear(root).append(bar, h('div', { class: 'layout' }, sidebar.el, h('div', { class: 'main' }, chat.el, composer.el)), toast);
  socket.connect();
  sidebar.refresh();
  showUsage();
  api.get('/settings').then((s) => composer.preset(s.effective)).catch(() => {});
  // The tenant's own teams (version 0 is a built-in mode, which the Mode switch offers).
  api.get('/teams').then((t) => composer.setTeams(t.teams.filter((team) => team.version > 0),
    (name) => api.get(`/teams/${encodeURIComponent(name)}`))).catch(() => {});
  const initial = conversationFromHash();
  if (initial) open(initial);
  composer.input.focus();
}

async function boot() {
  const loginToken = takeLoginToken();
  if (loginToken) {
    try {
      await signInWithLoginToken(api, loginToken);
    } catch (e) {
      showSignIn(`${e.message}${e.hint ? ` — ${e.hint}` : ''}`);
      return;
    }
  }
  let who = null;
  try {
    who = await currentSession(api);
  } catch (e) {
    showSignIn(`The API did not answer: ${e.message}`);
    return;
  }
  if (!who) showSignIn();
  else showApp(who);
}

boot();
