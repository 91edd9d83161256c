// Approval cards of a paused run: the answer gate (draft + critique, Approve / Reject) and
// the egress gate (host, tool, redacted arguments; Allow once / Allow always / Deny /
// More info). A decision goes over the websocket `resume` frame.
import { h, jsonText } from './dom.js';
import { render } from './markdown.js';

const EGRESS = [
  ['egress_allow_once', 'Allow once', 'primary'],
  ['egress_allow_always', 'Allow always', ''],
  ['egress_deny', 'Deny', 'danger'],
];
const ANSWER = [['approve', 'Approve', 'primary'], ['reject', 'Reject', 'danger']];
const SAID = {
  approve: 'approved', reject: 'rejected', egress_allow_once: 'allowed once',
  egress_allow_always: 'allowed always', egress_deny: 'denied', closed: 'decided',
};

/** The card for `model.approval`, or null. `decide(decision)` sends the resume frame. */
export function renderApproval(model, { decide, moreInfo }) {
  const gate = model.approval;
  if (!gate) return null;
  const egress = gate.reason === 'egress_approval';
  const card = h('section', { class: `card approval ${egress ? 'egress' : 'answer-gate'}`, 'aria-live': 'polite' });
  if (egress) {
    card.append(
      h('h4', { text: 'Allow this outbound call?' }),
      h('p', {}, 'The ', h('b', { text: gate.tool || 'tool' }), ' tool wants to reach ', h('code', { class: 'host', text: gate.host || '?' }), ', which is not on the allowlist.'),
    );
  } else {
    card.append(h('h4', { text: 'Approve this answer?' }));
    if (gate.answer) card.append(h('div', { class: 'md draft-preview' }, render(gate.answer)));
    if (gate.critique) card.append(h('p', { class: 'critique' }, h('b', { text: 'Critic: ' }), gate.critique));
  }
  if (gate.decided) {
    card.append(h('p', { class: 'decided', text: `Decision: ${SAID[gate.decided] || gate.decided}` }));
    card.classList.add('is-decided');
    return card;
  }
  const buttons = h('div', { class: 'actions' });
  for (const [decision, label, cls] of egress ? EGRESS : ANSWER) {
    buttons.append(h('button', {
      type: 'button', class: `btn ${cls}`, text: label, 'data-decision': decision,
      on: { click: () => { for (const b of buttons.querySelectorAll('button')) b.disabled = true; decide(decision); } },
    }));
  }
  if (egress) {
    const info = h('pre', { class: 'args', hidden: true });
    buttons.append(h('button', {
      type: 'button', class: 'btn', text: 'More info', 'data-decision': 'more_info',
      on: {
        click: async () => {
          info.hidden = !info.hidden;
          if (!info.hidden) info.textContent = jsonText(gate.args ?? (await moreInfo()).args ?? {});
        },
      },
    }));
    card.append(buttons, info);
  } else card.append(buttons);
  if (gate.error) card.append(h('p', { class: 'error', text: gate.error }));
  return card;
}
