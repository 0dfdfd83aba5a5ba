// The one way the chat page makes elements: text goes in through textContent, never as markup,
// so whatever a model or a user wrote (<img onerror=...>, <script>) is shown, not run.

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// Appends `text` to `parent` as text nodes, a <br> for each line break.
export function appendLines(parent, text) {
  text.split('\n').forEach((line, i) => {
    if (i) parent.append(el('br'));
    if (line) parent.append(document.createTextNode(line));
  });
}
