// Schedules: questions asked on a cron schedule, as the signed-in user (an admin sees the
// tenant's); add one, pause or resume it, delete it. Each run's answer lands in the
// schedule's own conversation.
import { clear, h } from './dom.js';

const localZone = () => {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
};

export async function schedulesPanel(api) {
  const list = h('ul', { class: 'schedule-list' });
  const note = h('span', { class: 'note', 'aria-live': 'polite' });
  const cron = h('input', { type: 'text', name: 'cron', 'aria-label': 'cron', placeholder: '0 8 * * MON-FRI' });
  const zone = h('input', { type: 'text', name: 'timezone', 'aria-label': 'time zone', value: localZone() });
  const question = h('input', { type: 'text', name: 'question', 'aria-label': 'question', placeholder: 'the question to ask' });
  const missed = h('select', { name: 'missed', 'aria-label': 'missed ticks' },
    h('option', { value: 'skip', text: 'skip missed ticks' }),
    h('option', { value: 'run_once', text: 'run once for missed ticks' }));

  const act = async (what) => {
    try {
      await what();
    } catch (e) {
      note.textContent = `not done: ${e.message}`;
    }
    await refresh();
  };

  const refresh = async () => {
    const { schedules } = await api.get('/schedules');
    clear(list);
    if (!schedules.length) list.append(h('li', { class: 'dim', text: 'No schedules yet.' }));
    for (const s of schedules) {
      const path = `/schedules/${encodeURIComponent(s.id)}`;
      const when = s.paused ? 'paused' : `next ${new Date(s.next_run_at).toLocaleString()}`;
      list.append(h('li', { class: 'schedule', 'data-schedule-id': s.id },
        h('div', { class: 'schedule-question', text: s.question }),
        h('div', { class: 'dim small', text: `${s.cron} (${s.timezone}) · ${when} · ${s.subject}` }),
        h('div', { class: 'schedule-actions' },
          h('button', {
            type: 'button', class: 'btn small', text: s.paused ? 'Resume' : 'Pause',
            on: { click: () => act(() => api.post(`${path}/${s.paused ? 'resume' : 'pause'}`)) },
          }),
          h('button', {
            type: 'button', class: 'btn danger small', text: 'Delete',
            on: { click: () => act(() => api.del(path)) },
          }))));
    }
  };

  const add = h('button', {
    type: 'button', class: 'btn primary', text: 'Add',
    on: {
      click: () => act(async () => {
        await api.post('/schedules', {
          cron: cron.value.trim(), timezone: zone.value.trim() || 'UTC',
          question: question.value, missed: missed.value,
        });
        note.textContent = 'added';
        question.value = '';
      }),
    },
  });
  await refresh();
  return h('div', { class: 'panel-body' },
    h('p', { class: 'dim', text: 'Questions asked on a cron schedule (minute hour day month weekday); each answer lands in the schedule\'s own conversation.' }),
    h('div', { class: 'form' }, h('label', {}, 'Cron', cron), h('label', {}, 'Time zone', zone),
      h('label', {}, 'Question', question), h('label', {}, 'Missed ticks', missed)),
    h('div', { class: 'save-row' }, add, note),
    list);
}
