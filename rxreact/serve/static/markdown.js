// A small, safe Markdown renderer for the answers on the chat page (no library: the page works
// offline and has no build step).
//
// It builds DOM nodes with createElement and textContent only, never innerHTML, so raw HTML in
// an answer (<img src=x onerror=...>, <script>) is shown as the text it is. It covers what chat
// answers use: paragraphs (a line break is kept), headings, emphasis, inline code, fenced code
// blocks with a copy button, ordered and unordered lists (nested by indentation), block
// quotes, rules, tables and links (see markdown_inline.js for which links are made).
//
// The text is an answer that is still growing: an unclosed fence renders as a code block so far
// and an unclosed ** as text; the next render, with more text, catches up.
//
// Block quotes and lists nest at most MAX_DEPTH deep; the level below that holds the rest as
// text. A browser cannot lay out thousands of nested elements: an answer of 3,000 nested `>`
// crashed the tab, and again on every load, since the transcript replays from localStorage.

import { el } from './dom.js';
import { inline } from './markdown_inline.js';

const FENCE = /^( {0,3})(`{3,}|~{3,})[ \t]*([^`\s]*)[^`]*$/;
const FENCE_END = /^ {0,3}(`{3,}|~{3,})[ \t]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}> ?/;
const ITEM = /^( {0,3})([-*+]|(\d{1,9})[.)])(?:[ \t]+|$)/;
export const MAX_DEPTH = 16;
const DIVIDER = /^ {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;

// The Markdown `text` as a fragment of DOM nodes.
export function renderMarkdown(text) {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  const fragment = document.createDocumentFragment();
  fragment.append(...blocks(lines.map((line) => line.replace(/^\t+/, (t) => '    '.repeat(t.length)))));
  return fragment;
}

const blank = (line) => !line.trim();
const indentOf = (line) => line.length - line.trimStart().length;

function blocks(lines, depth = 0) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (blank(line)) i++;
    else if ((m = FENCE.exec(line))) i = fence(lines, i, m, out);
    else if ((m = HEADING.exec(line))) {
      out.push(inline(m[2] || '', el('h' + m[1].length)));
      i++;
    } else if (RULE.test(line)) {
      out.push(el('hr'));
      i++;
    } else if (QUOTE.test(line)) i = quote(lines, i, out, depth);
    else if (ITEM.test(line)) i = list(lines, i, out, depth);
    else if (isTable(lines, i)) i = table(lines, i, out);
    else i = paragraph(lines, i, out);
  }
  return out;
}

// Whether `lines[i]` ends the paragraph before it: a new block starts there.
function interrupts(lines, i) {
  const line = lines[i];
  const item = ITEM.exec(line);
  // As in CommonMark, only a non-empty item, and of numbered ones only "1.", breaks a paragraph:
  // "in\n2024. we ..." is one paragraph.
  const listStarts = item && line.slice(item[0].length).trim() && (!item[3] || item[3] === '1');
  return (
    blank(line) ||
    FENCE.test(line) ||
    HEADING.test(line) ||
    RULE.test(line) ||
    QUOTE.test(line) ||
    !!listStarts ||
    isTable(lines, i)
  );
}

function paragraph(lines, start, out) {
  const body = [lines[start].trimStart()];
  let i = start + 1;
  while (i < lines.length && !interrupts(lines, i)) body.push(lines[i++].trimStart());
  out.push(inline(body.join('\n'), el('p')));
  return i;
}

function fence(lines, start, m, out) {
  const [, indent, mark, lang] = m;
  const body = [];
  let i = start + 1;
  for (; i < lines.length; i++) {
    const end = FENCE_END.exec(lines[i]);
    if (end && end[1][0] === mark[0] && end[1].length >= mark.length) {
      i++;
      break;
    }
    const line = lines[i];
    body.push(line.slice(Math.min(indent.length, indentOf(line))));
  }
  out.push(codeBlock(body.join('\n'), lang));
  return i;
}

function codeBlock(code, lang) {
  const box = el('div', 'code-block');
  const head = el('div', 'code-head');
  const button = el('button', 'copy', 'Copy');
  button.type = 'button';
  button.title = 'Copy the code';
  button.addEventListener('click', () => copy(code, button));
  head.append(el('span', 'lang', lang), button);
  const pre = el('pre');
  pre.append(el('code', null, code));
  box.append(head, pre);
  return box;
}

async function copy(text, button) {
  let copied = false;
  try {
    await navigator.clipboard.writeText(text);
    copied = true;
  } catch (_) {
    // navigator.clipboard exists only in secure contexts (https, localhost): a page served on
    // a LAN address over http copies the old way.
    const area = el('textarea');
    area.value = text;
    area.style.cssText = 'position:fixed;opacity:0';
    document.body.append(area);
    area.select();
    copied = document.execCommand('copy');
    area.remove();
  }
  button.textContent = copied ? 'Copied' : 'Copy failed';
  setTimeout(() => {
    button.textContent = 'Copy';
  }, 1500);
}

// The blocks of a quote's or an item's `body`, one level down: past MAX_DEPTH, its text.
function nested(body, depth) {
  return depth < MAX_DEPTH ? blocks(body, depth + 1) : [el('p', 'too-deep', body.join('\n'))];
}

function quote(lines, start, out, depth) {
  const body = [];
  let i = start;
  // Quoted lines, and unquoted ones that continue a quoted paragraph (a "lazy" line).
  while (i < lines.length && (QUOTE.test(lines[i]) || (body.length && !interrupts(lines, i)))) {
    body.push(lines[i].replace(QUOTE, ''));
    i++;
  }
  const node = el('blockquote');
  node.append(...nested(body, depth));
  out.push(node);
  return i;
}

function list(lines, start, out, depth) {
  const first = ITEM.exec(lines[start]);
  const ordered = first[3] !== undefined;
  const marker = first[2].slice(-1); // '-', '*', '+', '.' or ')': another one starts a new list
  const node = el(ordered ? 'ol' : 'ul');
  if (ordered && Number(first[3]) !== 1) node.start = Number(first[3]);
  const items = [];
  let loose = false;
  let i = start;
  for (;;) {
    const m = ITEM.exec(lines[i]); // an item: the first, or one the end of the last found
    // The item's content starts after its marker; deeper lines belong to it.
    const width = blank(lines[i].slice(m[0].length)) ? m[2].length + m[1].length + 1 : m[0].length;
    const body = [lines[i].slice(m[0].length)];
    i++;
    while (i < lines.length) {
      const line = lines[i];
      if (blank(line)) {
        let j = i;
        while (j < lines.length && blank(lines[j])) j++;
        if (j >= lines.length || indentOf(lines[j]) < width) break;
        body.push(...lines.slice(i, j).map(() => ''));
        loose = loose || !ITEM.test(lines[j].slice(width)); // a blank line between paragraphs
        i = j;
      } else if (indentOf(line) >= width) {
        body.push(line.slice(width));
        i++;
      } else if (!ITEM.test(line) && !interrupts(lines, i)) {
        body.push(line.trimStart()); // a lazy continuation of the item's paragraph
        i++;
      } else break;
    }
    items.push(body);
    let j = i;
    while (j < lines.length && blank(lines[j])) j++;
    const next = j < lines.length && ITEM.exec(lines[j]);
    if (!next || RULE.test(lines[j]) || next[2].slice(-1) !== marker) break;
    if (j > i) loose = true; // items apart: paragraphs in them
    i = j;
  }
  for (const body of items) {
    const li = el('li');
    for (const block of nested(body, depth)) {
      // A tight list's items hold their text, not paragraphs (as CommonMark draws them).
      if (!loose && block.tagName === 'P') li.append(...block.childNodes);
      else li.append(block);
    }
    node.append(li);
  }
  out.push(node);
  return i;
}

// The cells of a table row: split on the pipes that are not escaped; outer pipes optional.
function cells(line) {
  let row = line.trim();
  if (row.startsWith('|')) row = row.slice(1);
  if (row.endsWith('|') && !row.endsWith('\\|')) row = row.slice(0, -1);
  return row.split(/(?<!\\)\|/).map((cell) => cell.trim().replace(/\\\|/g, '|'));
}

function isTable(lines, i) {
  return (
    i + 1 < lines.length &&
    lines[i].includes('|') &&
    DIVIDER.test(lines[i + 1]) &&
    cells(lines[i]).length === cells(lines[i + 1]).length
  );
}

function table(lines, start, out) {
  const head = cells(lines[start]);
  const aligns = cells(lines[start + 1]).map((d) =>
    d.endsWith(':') ? (d.startsWith(':') ? 'center' : 'right') : d.startsWith(':') ? 'left' : '',
  );
  const row = (values, tag) => {
    const tr = el('tr');
    head.forEach((_, n) => {
      const cell = inline(values[n] || '', el(tag));
      if (aligns[n]) cell.style.textAlign = aligns[n];
      tr.append(cell);
    });
    return tr;
  };
  const thead = el('thead');
  thead.append(row(head, 'th'));
  const tbody = el('tbody');
  let i = start + 2;
  for (; i < lines.length && lines[i].includes('|') && !interrupts(lines, i); i++) {
    tbody.append(row(cells(lines[i]), 'td'));
  }
  const wrap = el('div', 'table-wrap');
  wrap.append(el('table'));
  wrap.firstChild.append(thead, tbody);
  out.push(wrap);
  return i;
}
