// The conversation list: new, open, rename, delete (the caller's own conversations).
import { clear, h } from './dom.js';

export class Sidebar {
  constructor({ api, onOpen, onNew, onDeleted, notify }) {
    this.api = api;
    this.onOpen = onOpen;
    this.onNew = onNew;
    this.onDeleted = onDeleted;
    this.notify = notify;
    this.current = null;
    this.items = [];
    this.list = h('ul', { class: 'conversations', 'aria-label': 'Conversations' });
    this.el = h('nav', { class: 'sidebar', id: 'sidebar' },
      h('button', { type: 'button', class: 'btn primary new-chat', text: '+ New chat', on: { click: () => this.onNew() } }),
      this.list);
  }

  async refresh() {
    try {
      const data = await this.api.get('/conversations?limit=100');
      this.items = data.conversations;
    } catch (e) {
      this.notify(`Could not list conversations: ${e.message}`);
      return;
    }
    this.draw();
  }

  select(id) {
    this.current = id;
    this.draw();
  }

  draw() {
    clear(this.list);
    for (const c of this.items) this.list.append(this.item(c));
  }

  item(c) {
    const title = c.title || 'Untitled';
    const open = h('button', { type: 'button', class: 'conv-title', text: title, title, on: { click: () => this.onOpen(c.id) } });
    const li = h('li', { class: c.id === this.current ? 'conv active' : 'conv', 'data-id': c.id },
      open,
      h('button', { type: 'button', class: 'icon', title: 'Rename', 'aria-label': 'Rename', text: '✎', on: { click: () => this.rename(li, c) } }),
      h('button', { type: 'button', class: 'icon', title: 'Delete', 'aria-label': 'Delete', text: '×', on: { click: () => this.remove(li, c) } }));
    return li;
  }

  rename(li, c) {
    const input = h('input', { type: 'text', class: 'rename', value: c.title || '', maxlength: '120', 'aria-label': 'New title' });
    const done = async (save) => {
      if (save && input.value.trim() && input.value.trim() !== c.title) {
        try {
          await this.api.patch(`/conversations/${encodeURIComponent(c.id)}`, { title: input.value.trim() });
        } catch (e) {
          this.notify(`Rename failed: ${e.message}`);
        }
      }
      await this.refresh();
    };
    input.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') done(true);
      if (ev.key === 'Escape') done(false);
    });
    input.addEventListener('blur', () => done(true), { once: true });
    clear(li).append(input);
    input.focus();
    input.select();
  }

  remove(li, c) {
    const confirm = h('button', {
      type: 'button', class: 'btn danger', text: 'Delete?',
      on: {
        click: async () => {
          try {
            await this.api.del(`/conversations/${encodeURIComponent(c.id)}`);
            this.onDeleted(c.id);
          } catch (e) {
            this.notify(`Delete failed: ${e.message}`);
          }
          await this.refresh();
        },
      },
    });
    const cancel = h('button', { type: 'button', class: 'btn', text: 'Keep', on: { click: () => this.draw() } });
    clear(li).append(h('span', { class: 'conv-title', text: c.title || 'Untitled' }), confirm, cancel);
    confirm.focus();
  }
}
