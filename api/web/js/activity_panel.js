// Activity: the audit rows of the open conversation's tool calls, and whether the tenant's
// hash-chained audit log verifies.
import { h, jsonText } from './dom.js';

export async function activityPanel(api, conversationId) {
  if (!conversationId) return h('div', { class: 'panel-body' }, h('p', { class: 'dim', text: 'Open a conversation to see its activity.' }));
  const data = await api.get(`/activity?conversation_id=${encodeURIComponent(conversationId)}`);
  const chain = data.chain;
  const verified = data.chain_ok
    ? h('p', { class: 'chain ok', text: `Audit chain verified: ${chain ? chain.rows : 0} rows${chain && chain.head_hash ? `, head ${chain.head_hash.slice(0, 16)}…` : ''}` })
    : h('p', { class: 'chain broken', text: `Audit chain BROKEN${chain && chain.broken ? ` at seq ${chain.broken.seq}: ${chain.broken.reason}` : ''}` });
  const rows = data.rows.map((r) => h('tr', {},
    h('td', { text: new Date(r.created_at).toLocaleTimeString() }),
    h('td', { text: r.tool }),
    h('td', { class: r.status === 'ok' ? 'ok' : 'failed', text: `${r.status} · ${r.code}` }),
    h('td', { text: `${Math.round(r.duration_ms)} ms` }),
    h('td', {}, h('details', {}, h('summary', { text: r.blocked_host || 'args' }), h('pre', { text: jsonText(r.args) })))));
  return h('div', { class: 'panel-body' },
    verified,
    rows.length
      ? h('div', { class: 'table-wrap' }, h('table', { class: 'activity' },
        h('thead', {}, h('tr', {}, ['time', 'tool', 'outcome', 'took', 'arguments'].map((t) => h('th', { text: t })))),
        h('tbody', {}, rows)))
      : h('p', { class: 'dim', text: 'No tool calls in this conversation.' }));
}
