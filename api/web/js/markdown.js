// A small, safe Markdown renderer: it builds DOM nodes and puts every piece of text in a
// text node, so nothing in the source is ever parsed as HTML. Links become anchors only
// for http(s) URLs (new tab, rel=noopener noreferrer). Streaming-friendly: renderInto()
// reuses the nodes of blocks whose source did not change, so a growing answer re-renders
// only its last block.
import { safeLink, safeUrl } from './dom.js';

const LIST_ITEM = /^(\s{0,3})([-*+]|\d{1,9}[.)])\s+(.*)$/;
const FENCE = /^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)\s*$/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^\s{0,3}>\s?(.*)$/;
const TABLE_SEP = /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/;
const MAX_DEPTH = 4;

function startsBlock(line, next) {
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line)
    || LIST_ITEM.test(line) || (line.includes('|') && next !== undefined && TABLE_SEP.test(next));
}

/** Split Markdown into blocks: {kind, raw, ...}; `raw` identifies a block for reuse. */
export function splitBlocks(src) {
  const lines = String(src).replace(/\r\n?/g, '\n').split('\n');
  const blocks = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const start = i;
    if (!line.trim()) { i++; continue; }
    const fence = line.match(FENCE);
    if (fence) {
      const body = [];
      i++;
      while (i < lines.length && !(lines[i].trim().startsWith(fence[1]) && !lines[i].trim().replace(/[`~]/g, ''))) {
        body.push(lines[i++]);
      }
      i++; // the closing fence (or the end while it is still streaming)
      blocks.push({ kind: 'code', lang: fence[2], text: body.join('\n'), raw: lines.slice(start, i).join('\n') });
      continue;
    }
    const heading = line.match(HEADING);
    if (heading) {
      blocks.push({ kind: 'heading', level: heading[1].length, text: heading[2], raw: line });
      i++;
      continue;
    }
    if (RULE.test(line)) { blocks.push({ kind: 'rule', raw: line }); i++; continue; }
    if (QUOTE.test(line)) {
      const inner = [];
      while (i < lines.length && lines[i].trim() && QUOTE.test(lines[i])) inner.push(lines[i++].match(QUOTE)[1]);
      blocks.push({ kind: 'quote', text: inner.join('\n'), raw: lines.slice(start, i).join('\n') });
      continue;
    }
    const item = line.match(LIST_ITEM);
    if (item) {
      const ordered = /\d/.test(item[2]);
      const items = [];
      while (i < lines.length) {
        const m = lines[i].match(LIST_ITEM);
        if (m && m[1].length <= item[1].length && /\d/.test(m[2]) === ordered) {
          items.push([m[3]]);
          i++;
        } else if (lines[i].trim() && (/^\s{2,}/.test(lines[i]) || !startsBlock(lines[i], lines[i + 1]))) {
          items[items.length - 1].push(lines[i].replace(/^\s{2,4}/, ''));
          i++;
        } else if (!lines[i].trim() && i + 1 < lines.length && LIST_ITEM.test(lines[i + 1])) {
          i++;
        } else break;
      }
      blocks.push({
        kind: 'list', ordered, start: ordered ? parseInt(item[2], 10) : 1,
        items: items.map((parts) => parts.join('\n')), raw: lines.slice(start, i).join('\n'),
      });
      continue;
    }
    if (line.includes('|') && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1])) {
      const rows = [line];
      i += 2;
      while (i < lines.length && lines[i].includes('|') && lines[i].trim()) rows.push(lines[i++]);
      const cells = (row) => row.trim().replace(/^\|/, '').replace(/\|$/, '').split('|').map((c) => c.trim());
      blocks.push({ kind: 'table', head: cells(rows[0]), rows: rows.slice(1).map(cells), raw: lines.slice(start, i).join('\n') });
      continue;
    }
    const para = [line];
    i++;
    while (i < lines.length && lines[i].trim() && !startsBlock(lines[i], lines[i + 1])) para.push(lines[i++]);
    blocks.push({ kind: 'para', text: para.join('\n'), raw: para.join('\n') });
  }
  return blocks;
}

const INLINE = new RegExp([
  '(?<tick>`+)(?<code>[\\s\\S]*?[^`])\\k<tick>(?!`)',
  '\\*\\*(?<b1>(?=\\S)[\\s\\S]*?\\S)\\*\\*',
  '(?<![\\w])__(?<b2>(?=\\S)[\\s\\S]*?\\S)__(?![\\w])',
  '\\*(?<i1>[^\\s*]|[^\\s*][^*]*?[^\\s*])\\*',
  '(?<![\\w])_(?<i2>[^\\s_]|[^\\s_][^_]*?[^\\s_])_(?![\\w])',
  '~~(?<del>(?=\\S)[\\s\\S]*?\\S)~~',
  '\\[(?<label>[^\\[\\]]+)\\]\\((?<url>[^()\\s]+)(?:\\s+"[^"]*")?\\)',
  '\\[(?<cite>[1-9]\\d{0,2}(?:,[ \\t]{0,2}[1-9]\\d{0,2})*)\\](?![(:])',
  '(?<auto>https?:\\/\\/[^\\s<>()\\[\\]]*[^\\s<>()\\[\\].,;:!?\'"*_~])',
].join('|'), 'g');

// The server's rules for a marker in citation position (retrieval/citation_scan.py), so
// an index (`arr[1]`), a value (`x = [1, 2]`, `it returns [1]`) or a list whose numbers
// were not all shown stays text.
const GLUE = '.!?;';
const CODE_BEFORE = '=([{,+-*/%<>&^~\\';
const VALUE_WORDS = new Set(['return', 'yield', 'await', 'assert', 'print', 'is', 'are', 'was',
  'equals', 'returns', 'gives', 'yields', 'prints', 'outputs']);

function inCitationPosition(source, at, lastCiteEnd) {
  const before = source.slice(0, at);
  if (!before || /\n$/.test(before)) return true;
  // Right after a marker that was a citation: `[1][2]`, `[1], [2]`.
  const after = /\](,?[ \t]{0,2})$/.exec(before);
  if (after && at - after[1].length === lastCiteEnd) return true;
  const last = before[before.length - 1];
  if (GLUE.includes(last)) return true;
  if (!/[ \t]$/.test(before)) return false;
  const trimmed = before.replace(/[ \t]+$/, '');
  if (!trimmed) return true;
  const prev = trimmed[trimmed.length - 1];
  if (CODE_BEFORE.includes(prev)) return false;
  if (prev === ':' && /["')\]\d]:$/.test(trimmed)) return false;
  const word = /(\\?[A-Za-z_]\w*)$/.exec(trimmed);
  return !(word && (word[1].startsWith('\\') || VALUE_WORDS.has(word[1])));
}

function citeNodes(group, source, at, opts, state) {
  const text = `[${group}]`;
  if (!opts.cite || !inCitationPosition(source, at, state.citeEnd)) return [document.createTextNode(text)];
  const nodes = group.split(',').map((n) => opts.cite(Number(n.trim())));
  if (nodes.some((n) => !n)) return [document.createTextNode(text)];  // not all shown: text
  state.citeEnd = at + text.length;
  return nodes;
}

/** Inline Markdown as a list of nodes (text nodes, code, strong, em, del, links, cites). */
export function inline(text, opts = {}, depth = 0) {
  const out = [];
  const source = String(text);
  const push = (s) => {
    if (!s) return;
    const parts = s.split('\n');
    parts.forEach((part, n) => {
      if (n > 0) out.push(document.createElement('br'));
      if (part) out.push(document.createTextNode(part));
    });
  };
  if (depth > MAX_DEPTH) { push(source); return out; }
  const re = new RegExp(INLINE.source, 'g');
  const state = { citeEnd: -1 };
  let last = 0;
  let m;
  while ((m = re.exec(source)) !== null) {
    push(source.slice(last, m.index));
    last = re.lastIndex;
    const g = m.groups;
    const wrap = (tag, inner) => {
      const el = document.createElement(tag);
      el.append(...inline(inner, opts, depth + 1));
      return el;
    };
    if (g.tick) {
      const code = document.createElement('code');
      code.textContent = g.code.replace(/^ (.*) $/s, '$1');
      out.push(code);
    } else if (g.b1 || g.b2) out.push(wrap('strong', g.b1 || g.b2));
    else if (g.i1 || g.i2) out.push(wrap('em', g.i1 || g.i2));
    else if (g.del) out.push(wrap('del', g.del));
    else if (g.label !== undefined) {
      // Not http(s) (javascript:, data:, relative...): the source stays visible as text.
      out.push(safeUrl(g.url) ? safeLink(g.url, g.label) : document.createTextNode(m[0]));
    }
    else if (g.cite) {
      out.push(...citeNodes(g.cite, source, m.index, opts, state));
    } else if (g.auto) out.push(safeLink(g.auto));
  }
  push(source.slice(last));
  return out;
}

function renderBlock(block, opts, depth) {
  const el = (tag, ...kids) => {
    const node = document.createElement(tag);
    node.append(...kids);
    return node;
  };
  switch (block.kind) {
    case 'code': {
      const code = document.createElement('code');
      if (/^[\w+#.-]+$/.test(block.lang)) code.className = `lang-${block.lang}`;
      code.textContent = block.text;
      return el('pre', code);
    }
    case 'heading': return el(`h${Math.min(6, block.level + 2)}`, ...inline(block.text, opts, depth));
    case 'rule': return document.createElement('hr');
    case 'quote': return el('blockquote', ...renderBlocks(block.text, opts, depth + 1));
    case 'list': {
      const list = document.createElement(block.ordered ? 'ol' : 'ul');
      if (block.ordered && block.start !== 1) list.start = block.start;
      for (const text of block.items) {
        const nested = text.includes('\n') && depth < MAX_DEPTH && /\n\s*([-*+]|\d+[.)])\s/.test(text);
        list.append(el('li', ...(nested ? renderBlocks(text, opts, depth + 1) : inline(text, opts, depth))));
      }
      return list;
    }
    case 'table': {
      const row = (cells, tag) => el('tr', ...cells.map((c) => el(tag, ...inline(c, opts, depth))));
      const table = el('table', el('thead', row(block.head, 'th')), el('tbody', ...block.rows.map((r) => row(r, 'td'))));
      return el('div', table);
    }
    default: return el('p', ...inline(block.text, opts, depth));
  }
}

function renderBlocks(src, opts, depth) {
  if (depth > MAX_DEPTH) return [document.createTextNode(String(src))];
  return splitBlocks(src).map((b) => {
    const node = renderBlock(b, opts, depth);
    if (b.kind === 'table') node.className = 'table-wrap';
    return node;
  });
}

/** Markdown as a DocumentFragment. */
export function render(src, opts = {}) {
  const frag = document.createDocumentFragment();
  frag.append(...renderBlocks(src, opts, 0));
  return frag;
}

const cache = new WeakMap();

/**
 * Render Markdown into `el`, reusing the nodes of unchanged blocks from the last call.
 * `opts.key` changes force a full re-render (e.g. when citations arrive).
 */
export function renderInto(el, src, opts = {}) {
  const previous = cache.get(el);
  const old = previous && previous.key === opts.key ? previous.blocks : [];
  const blocks = splitBlocks(src).map((b, n) => {
    const reuse = old[n] && old[n].raw === b.raw ? old[n].node : null;
    const node = reuse || renderBlock(b, opts, 0);
    if (!reuse && b.kind === 'table') node.className = 'table-wrap';
    return { raw: b.raw, node };
  });
  blocks.forEach((b, n) => {
    const current = el.childNodes[n];
    if (current !== b.node) {
      if (current) el.replaceChild(b.node, current);
      else el.appendChild(b.node);
    }
  });
  while (el.childNodes.length > blocks.length) el.removeChild(el.lastChild);
  cache.set(el, { key: opts.key, blocks });
}
