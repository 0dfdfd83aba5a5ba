// Markdown inside a block: emphasis, strikethrough, inline code, links and line breaks.
//
// Every span is built with createElement and its text set with textContent, so markup in an
// answer stays text. A link is made only for an http:, https: or mailto: target and opens in a
// new tab without an opener; any other target (javascript:, data:, a relative path) leaves the
// link as the Markdown the model wrote.

import { appendLines, el } from './dom.js';

// Sticky patterns, tried at one position of the text (lastIndex) without slicing it.
const ESCAPE = /\\([!-/:-@[-`{-~])/y;
const TICKS = /`+/y;
const CODE = /(`+)([\s\S]*?[^`])\1(?!`)/y;
const RUN = /([*_~])\1*/y;
const AUTOLINK = /<((?:https?:\/\/|mailto:)[^\s<>]*)>/iy;
const BARE_URL = /https?:\/\/[^\s<>]*[^\s<>.,;:!?'")\]*_~]/iy;
// The destination and optional title of [label](destination "title"), from after the "(".
const DESTINATION =
  /[ \t]*(?:<([^<>\n]*)>|((?:[^\s()\\]|\\.|\((?:[^\s()\\]|\\.)*\))*))(?:[ \t]+(?:"([^"]*)"|'([^']*)'))?[ \t]*\)/y;
const SAFE_SCHEME = /^(?:https?:\/\/|mailto:)/i;
const SAFE_PROTOCOLS = new Set(['http:', 'https:', 'mailto:']);
const WORD = /[\p{L}\p{N}_]/u;

// [pattern, where one can close, the tags it nests (outermost first), may it open in a word]
const SPANS = [
  [/\*\*\*(?=\S)([\s\S]*?\S)\*\*\*(?!\*)/y, /\S\*\*\*(?!\*)/g, ['strong', 'em'], true],
  [/\*\*(?=\S)([\s\S]*?\S)\*\*(?!\*)/y, /\S\*\*(?!\*)/g, ['strong'], true],
  [/\*(?=[^\s*])([\s\S]*?[^\s*])\*(?!\*)/y, /[^\s*]\*(?!\*)/g, ['em'], true],
  [/__(?=\S)([\s\S]*?\S)__(?![\p{L}\p{N}_])/uy, /\S__(?![\p{L}\p{N}_])/gu, ['strong'], false],
  [/_(?=[^\s_])([\s\S]*?[^\s_])_(?![\p{L}\p{N}_])/uy, /[^\s_]_(?![\p{L}\p{N}_])/gu, ['em'], false],
  [/~~(?=\S)([\s\S]*?\S)~~/y, /\S~~/g, ['del'], true],
];

function at(pattern, text, i) {
  pattern.lastIndex = i;
  return pattern.exec(text);
}

// True for a target the page may link to: it names http(s) or mailto itself (so no relative
// path, and no scheme hidden behind leading blanks) and parses as such.
export function isSafeUrl(href) {
  if (!SAFE_SCHEME.test(href)) return false;
  try {
    return SAFE_PROTOCOLS.has(new URL(href).protocol);
  } catch (_) {
    return false;
  }
}

function link(href, title) {
  const a = el('a');
  a.href = href;
  a.target = '_blank';
  a.rel = 'noopener noreferrer';
  if (title) a.title = title;
  return a;
}

// Where each "[" of `text` closes: its matching "]" (escaped brackets do not count), found in
// one pass, so a text of many unclosed "[" is not scanned to its end once per "[".
function brackets(text) {
  const ends = new Map();
  const open = [];
  for (let j = 0; j < text.length; j++) {
    if (text[j] === '\\') j++;
    else if (text[j] === '[') open.push(j);
    else if (text[j] === ']' && open.length) ends.set(open.pop(), j);
  }
  return ends;
}

// [label](destination "title") starting at text[i] === '[', or null.
function linkAt(scan, i) {
  const { text } = scan;
  scan.brackets ??= brackets(text);
  const j = scan.brackets.get(i);
  if (j === undefined || text[j + 1] !== '(') return null;
  const m = at(DESTINATION, text, j + 2);
  if (!m) return null;
  const href = (m[1] ?? m[2]).replace(/\\([!-/:-@[-`{-~])/g, '$1');
  return { label: text.slice(i + 1, j), href, title: m[3] ?? m[4], end: DESTINATION.lastIndex };
}

function codeSpan(body) {
  const text = body.replace(/\n/g, ' ');
  const padded = text.length > 2 && text[0] === ' ' && text.at(-1) === ' ' && text.trim();
  return el('code', null, padded ? text.slice(1, -1) : text);
}

// The last place in `text` where the span `n` of SPANS could close (-1: nowhere), found in one
// pass, so an opener with no closer after it is not tried by a scan to the end of the text.
function lastCloser(scan, n) {
  if (scan.closers[n] === undefined) {
    let last = -1;
    for (const m of scan.text.matchAll(SPANS[n][1])) last = m.index;
    scan.closers[n] = last;
  }
  return scan.closers[n];
}

function emphasisAt(scan, i, links) {
  const { text } = scan;
  const inWord = i > 0 && WORD.test(text[i - 1]);
  for (let n = 0; n < SPANS.length; n++) {
    const [pattern, , tags, intraword] = SPANS[n];
    if (inWord && !intraword) continue; // snake_case_names are not emphasis
    if (lastCloser(scan, n) <= i) continue;
    const m = at(pattern, text, i);
    if (!m) continue;
    const outer = el(tags[0]);
    let inner = outer;
    for (const tag of tags.slice(1)) inner = inner.appendChild(el(tag));
    inline(m[1], inner, links);
    return { node: outer, end: i + m[0].length };
  }
  return null;
}

// Renders the Markdown spans of `text` into `parent`; inside a link (links=false) no other
// link is made.
export function inline(text, parent, links = true) {
  const scan = { text, closers: [], brackets: null };
  let buf = '';
  const flush = () => {
    appendLines(parent, buf);
    buf = '';
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    let m;
    if (c === '\\' && (m = at(ESCAPE, text, i))) {
      buf += m[1];
      i += 2;
    } else if (c === '`') {
      m = at(CODE, text, i);
      if (m) {
        flush();
        parent.append(codeSpan(m[2]));
        i += m[0].length;
      } else {
        const run = at(TICKS, text, i)[0]; // an unclosed run is text, whole
        buf += run;
        i += run.length;
      }
    } else if (c === '*' || c === '_' || c === '~') {
      const span = emphasisAt(scan, i, links);
      if (span) {
        flush();
        parent.append(span.node);
        i = span.end;
      } else {
        const run = at(RUN, text, i)[0]; // '**' that opens nothing is not read again as '*'
        buf += run;
        i += run.length;
      }
    } else if (links && c === '[' && (m = linkAt(scan, i))) {
      if (isSafeUrl(m.href)) {
        flush();
        const a = link(m.href, m.title);
        inline(m.label, a, false);
        parent.append(a);
      } else {
        buf += text.slice(i, m.end); // shown as written, never as a link
      }
      i = m.end;
    } else if (links && c === '<' && (m = at(AUTOLINK, text, i)) && isSafeUrl(m[1])) {
      flush();
      parent.append(Object.assign(link(m[1]), { textContent: m[1] }));
      i += m[0].length;
    } else if (
      links &&
      (c === 'h' || c === 'H') &&
      !(i > 0 && WORD.test(text[i - 1])) &&
      (m = at(BARE_URL, text, i)) &&
      isSafeUrl(m[0])
    ) {
      flush();
      parent.append(Object.assign(link(m[0]), { textContent: m[0] }));
      i += m[0].length;
    } else {
      buf += c;
      i++;
    }
  }
  flush();
  return parent;
}
