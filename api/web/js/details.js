// The Details timeline of one run: plan, thinking, tool calls with their results,
// critique, verdict, citations, retries, errors, the gate, and token usage per agent.
import { h, jsonText } from './dom.js';

const LABEL = {
  plan: 'Planner', thinking: 'Thinking', tool: 'Tool', critique: 'Critic', verdict: 'Verify',
  citations: 'Citations', retry: 'Retry', error: 'Error', gate: 'Paused',
};

function toolRow(e) {
  const ok = e.status === 'ok';
  const state = e.status === 'running' ? 'running' : ok ? 'ok' : 'failed';
  const meta = [e.status === 'running' ? 'running…' : `${e.status} · ${e.code || ''}`];
  if (typeof e.durationMs === 'number') meta.push(`${Math.round(e.durationMs)} ms`);
  if (e.truncated) meta.push('truncated');
  return [
    h('span', { class: 'what' }, h('b', { text: e.tool }), ' ', h('span', { class: `chip ${state}`, text: meta.join(' · ') })),
    h('details', { class: 'io' },
      h('summary', { text: 'arguments and result' }),
      h('div', { class: 'io-label', text: 'arguments' }),
      h('pre', { text: jsonText(e.args ?? {}) }),
      e.status === 'running' ? null : h('div', { class: 'io-label', text: e.message ? `result · ${e.message}` : 'result' }),
      e.status === 'running' ? null : h('pre', { class: 'result', text: jsonText(e.result ?? null) })),
  ];
}

function body(e) {
  switch (e.kind) {
    case 'plan': return h('ol', { class: 'plan' }, e.steps.map((s) => h('li', { text: s })));
    case 'thinking': return h('span', { class: 'what' }, `${e.agent || 'agent'}: `, h('span', { class: 'dim', text: e.ref ? e.ref.text : '' }));
    case 'tool': return toolRow(e);
    case 'critique': return h('span', { class: 'what' }, h('b', { class: `verdict-${e.verdict === 'OK' ? 'pass' : 'fail'}`, text: e.verdict }), ' ', e.reason || '');
    case 'verdict': return h('span', { class: 'what' }, h('b', { class: `verdict-${e.verdict === 'pass' ? 'pass' : 'fail'}`, text: e.verdict }), ' ', e.reasons.join('; '));
    case 'citations': return h('span', { class: 'what', text: `kept ${e.kept}, stripped ${e.stripped}` });
    case 'retry': return h('span', { class: 'what', text: `a step ran again (delivery ${e.delivery}); what it streamed before was dropped` });
    case 'error': return h('span', { class: 'what' }, h('b', { text: e.code }), ' ', e.message || '');
    case 'gate': return h('span', { class: 'what', text: e.reason === 'egress_approval' ? `egress approval: ${e.tool} → ${e.host}` : 'answer approval' });
    default: return null;
  }
}

function usageRows(usage) {
  const rows = Object.entries(usage || {}).filter(([k]) => k.endsWith('_tokens') && !['prompt_tokens', 'completion_tokens', 'total_tokens'].includes(k));
  if (!rows.length && !usage?.prompt_tokens) return null;
  return h('li', { class: 'row kind-usage' },
    h('span', { class: 'tag', text: 'Usage' }),
    h('span', { class: 'what' },
      rows.map(([k, v]) => h('span', { class: 'usage', text: `${k.replace(/_tokens$/, '')} ${v}` })),
      usage.prompt_tokens !== undefined ? h('span', { class: 'usage', text: `prompt ${usage.prompt_tokens} · completion ${usage.completion_tokens ?? 0}` }) : null));
}

/** The timeline as a list element. */
export function renderTimeline(model) {
  const list = h('ol', { class: 'timeline' });
  for (const e of model.timeline) {
    const cls = e.kind === 'tool' ? `kind-tool ${e.status === 'running' ? '' : e.status === 'ok' ? 'res-ok' : 'res-fail'}` : `kind-${e.kind}`;
    list.append(h('li', { class: `row ${cls}` }, h('span', { class: 'tag', text: LABEL[e.kind] || e.kind }), body(e)));
  }
  const usage = usageRows(model.usage);
  if (usage) list.append(usage);
  if (!list.childNodes.length) list.append(h('li', { class: 'row dim', text: 'nothing yet' }));
  return list;
}
