// Memory: what the signed-in user said about themselves ("I work in the Lisbon office"),
// which runs are given as notes. Only their own; edit a text or delete one. Every text is
// set as text, never parsed as HTML.
import { clear, h } from './dom.js';

export async function memoryPanel(api) {
  const list = h('ul', { class: 'memory-list' });
  const note = h('span', { class: 'note', 'aria-live': 'polite' });

  const act = async (what, done) => {
    try {
      await what();
      note.textContent = done;
    } catch (e) {
      note.textContent = `not done: ${e.message}`;
    }
    await refresh();
  };

  const item = (m) => {
    const path = `/memories/${encodeURIComponent(m.id)}`;
    const text = h('input', { type: 'text', name: 'memory-text', 'aria-label': `memory ${m.topic}`, value: m.text, maxlength: '500' });
    const said = m.run_id ? `said ${new Date(m.said_at).toLocaleString()} in run ${m.run_id}` : '';
    return h('li', { class: 'memory', 'data-memory-id': m.id },
      h('div', { class: 'memory-topic', text: m.topic }),
      h('div', { class: 'memory-text', text: m.text }),
      text,
      h('div', { class: 'dim small', text: `${said}${m.edited ? ' · edited' : ''}` }),
      h('div', { class: 'memory-actions' },
        h('button', {
          type: 'button', class: 'btn small', text: 'Save',
          on: { click: () => act(() => api.patch(path, { text: text.value }), 'saved') },
        }),
        h('button', {
          type: 'button', class: 'btn danger small', text: 'Delete',
          on: { click: () => act(() => api.del(path), 'deleted') },
        })));
  };

  const refresh = async () => {
    const { memories } = await api.get('/memories');
    clear(list);
    if (!memories.length) list.append(h('li', { class: 'dim', text: 'Nothing remembered yet.' }));
    for (const m of memories) list.append(item(m));
  };

  await refresh();
  return h('div', { class: 'panel-body' },
    h('p', { class: 'dim', text: 'What you said about yourself in your questions (where you work, how to answer you). Runs are given these as notes; only you see them.' }),
    h('div', { class: 'save-row' }, note),
    list);
}
