// The Details timeline of one run: plan, thinking, tool calls with their results,
// critique, verdict, citations, retries, errors, the gate, and token usage per agent.
import { h, jsonText } from './dom.js';

const LABEL = {
  plan: 'Planner', thinking: 'Thinking', tool: 'Tool', critique: 'Critic', verdict: 'Verify',
  citations: 'Citations', evidence: 'Evidence', retry: 'Retry', error: 'Error', gate: 'Paused',
};

function toolRow(e) {
  return [
    h('span', { class: 'what' }, h('b', { text: e.tool }), e.agent && e.agent !== 'researcher' ? h('span', { class: 'dim', text: ` · called by the ${e.agent}` }) : null,
      e.status === 'running' ? h('span', { class: 'dim', text: ' running…' }) : null),
    h('details', { class: 'io' }, h('summary', { text: 'arguments' }), h('pre', { text: jsonText(e.args ?? {}) })),
  ];
}

function resultRow(e) {
  const meta = [`${e.status} · ${e.code || ''}`];
  if (typeof e.durationMs === 'number') meta.push(`${Math.round(e.durationMs)} ms`);
  if (e.truncated) meta.push('truncated');
  if (e.blockedHost) meta.push(`blocked: ${e.blockedHost}`);
  return [
    h('span', { class: 'what' }, h('b', { text: e.tool }), ' ', h('span', { class: `chip ${e.status === 'ok' ? 'ok' : 'failed'}`, text: meta.join(' · ') }), e.message ? ` ${e.message}` : ''),
    h('details', { class: 'io' }, h('summary', { text: 'result' }), h('pre', { class: 'result', text: jsonText(e.result ?? null) })),
  ];
}

// An unreadable critique or verdict (UNKNOWN / unknown) is shown as neither a pass nor a fail.
function verdictClass(verdict) {
  if (verdict === 'OK' || verdict === 'pass') return 'pass';
  if (verdict === 'UNKNOWN' || verdict === 'unknown') return 'unknown';
  return 'fail';
}

function body(e) {
  switch (e.kind) {
    case 'plan': return h('ol', { class: 'plan' }, e.steps.map((s) => h('li', { text: s })));
    case 'thinking': return h('span', { class: 'what' }, `${e.agent || 'agent'}: `, h('span', { class: 'dim', text: e.ref ? e.ref.text : '' }));
    case 'tool': return toolRow(e);
    case 'critique': return h('span', { class: 'what' }, h('b', { class: `verdict-${verdictClass(e.verdict)}`, text: e.verdict }), ' ', e.reason || '');
    case 'verdict': return h('span', { class: 'what' }, h('b', { class: `verdict-${verdictClass(e.verdict)}`, text: e.verdict }), ' ', e.reasons.join('; '));
    case 'citations': return h('span', { class: 'what', text: `kept ${e.kept}, stripped ${e.stripped}` });
    case 'evidence': return h('span', { class: 'what', text: `${e.chunks} chunk(s) gathered, cited as [n]` });
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
    list.append(h('li', { class: `row kind-${e.kind}` }, h('span', { class: 'tag', text: LABEL[e.kind] || e.kind }), body(e)));
    if (e.kind === 'tool' && e.status !== 'running') {
      const cls = e.status === 'ok' ? 'res-ok' : 'res-fail';
      list.append(h('li', { class: `row kind-result ${cls}` }, h('span', { class: 'tag', text: 'Result' }), resultRow(e)));
    }
  }
  const usage = usageRows(model.usage);
  if (usage) list.append(usage);
  if (!list.childNodes.length) list.append(h('li', { class: 'row dim', text: 'nothing yet' }));
  return list;
}
