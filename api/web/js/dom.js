// Building DOM nodes safely: text always goes through text nodes, never HTML parsing.
// Attributes that could carry script (on*, href, src, style) are refused here; links go
// through safeLink, which allows http(s) only.

const REFUSED = /^(on|href$|src$|srcdoc$|style$|formaction$|action$|xlink:href$)/i;

/** An element with attributes, event handlers and children (strings become text). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') el.className = value;
    else if (key === 'text') el.textContent = String(value);
    else if (key === 'on') for (const [ev, fn] of Object.entries(value)) el.addEventListener(ev, fn);
    else if (key === 'value') el.value = value;
    else if (key === 'checked' || key === 'disabled' || key === 'hidden' || key === 'multiple') el[key] = Boolean(value);
    else if (REFUSED.test(key)) throw new Error(`attribute ${key} is not set through h()`);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

/** Append children (nodes, strings, arrays, null) to a node. */
export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Remove every child of a node. */
export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

/** The URL if it is absolute http(s), else null. */
export function safeUrl(raw) {
  try {
    const url = new URL(String(raw));
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
  } catch {
    return null;
  }
}

/** A link opening in a new tab without access to this page; plain text when not http(s). */
export function safeLink(raw, label) {
  const href = safeUrl(raw);
  if (!href) return document.createTextNode(String(label ?? raw));
  const a = document.createElement('a');
  a.href = href;
  a.target = '_blank';
  a.rel = 'noopener noreferrer';
  a.textContent = String(label ?? raw);
  return a;
}

/** Pretty JSON as text, cut at `max` characters. */
export function jsonText(value, max = 4000) {
  let text;
  try {
    text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  } catch {
    text = String(value);
  }
  text = text ?? '';
  return text.length > max ? `${text.slice(0, max)}\n… (${text.length - max} more characters)` : text;
}

/** Compare two stream ids ("ms-seq"): negative, zero or positive. */
export function compareIds(a, b) {
  const [am, as] = String(a).split('-').map(Number);
  const [bm, bs] = String(b).split('-').map(Number);
  return am - bm || (as || 0) - (bs || 0);
}
