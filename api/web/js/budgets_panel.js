// The Budgets panel (admin keys): token and cost limits per run, per user a day, per
// tenant a month, the tenant's fair-share weight, and what the tenant spent so far.
import { h } from './dom.js';
import { savePrefs, saveRow } from './panels.js';

const FIELDS = [
  ['token_budget', 'Tokens per run', '1'],
  ['cost_budget_usd', 'US dollars per run', '0.0001'],
  ['user_daily_tokens', 'Tokens per user a day', '1'],
  ['user_daily_cost_usd', 'US dollars per user a day', '0.0001'],
  ['tenant_monthly_tokens', 'Tokens for the tenant a month', '1'],
  ['tenant_monthly_cost_usd', 'US dollars for the tenant a month', '0.0001'],
  ['weight', 'Fair-share weight (1-100)', '1'],
];

const number = (el) => (el.value.trim() === '' ? null : Number(el.value));

/** One line saying what was spent in a period, and of what limit. */
export function usageText(u) {
  const limit = u.limit_tokens ? ` of ${u.limit_tokens.toLocaleString()}` : '';
  const money = u.limit_cost_usd ? ` of $${u.limit_cost_usd}` : '';
  const when = u.period === 'day' ? 'today' : 'this month';
  return `${u.scope === 'tenant' ? 'Tenant' : 'You'} ${when}: ${u.tokens.toLocaleString()}${limit} tokens, $${u.cost_usd.toFixed(4)}${money}`;
}

export async function budgetsPanel(api) {
  const view = await api.get('/settings');
  const p = view.preferences;
  const inputs = FIELDS.map(([name, label, step]) => {
    const input = h('input', { type: 'number', min: step, step, name, 'aria-label': name, placeholder: 'no limit' });
    input.value = p[name] ?? '';
    return { name, label, input };
  });
  const month = await api.get('/usage?period=month&scope=tenant').catch(() => null);
  return h('div', { class: 'panel-body' },
    h('p', { class: 'dim usage-tenant', text: month ? usageText(month) : 'Usage unavailable.' }),
    h('div', { class: 'form' }, inputs.map((f) => h('label', {}, f.label, f.input))),
    saveRow(() => savePrefs(api, view, Object.fromEntries(inputs.map((f) => [f.name, number(f.input)])))));
}
