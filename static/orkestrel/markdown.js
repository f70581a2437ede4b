// @ts-check
// Markdown to safe DOM in the browser, for stored messages and for answers as they stream.
//
// The same parser as the server's (markdown-it; the server runs its Python port with the same
// options: CommonMark, tables, raw HTML off, images as links), then DOMPurify with the server's
// allow-list (conversations/rendering.py; tests/web/ui/test_markdown_parity.py keeps the two in
// step). On top: task lists, math (KaTeX, MathML output, loaded only when a page has math) and
// code blocks with highlighting (highlight.js, loaded only when a page has code), a language
// label and a copy button. No `style` attribute is ever produced: table alignment is a class.
//
// A streaming answer is rendered incrementally (`MarkdownStream`): the finished blocks are
// rendered once and kept, only the last (still growing) block is rendered again on each frame.

import markdownit from "../vendor/markdown-it/markdown-it.esm.min.mjs";
import DOMPurify from "../vendor/dompurify/purify.es.mjs";

const VENDOR = new URL("../vendor/", import.meta.url);

/** The server's ALLOWED_TAGS (conversations/rendering.py), and what only the browser adds. */
export const ALLOWED_TAGS = [
  "a", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "li",
  "ol", "p", "pre", "s", "strong", "table", "tbody", "td", "th", "thead", "tr", "ul",
];
/** Tags only the browser renders: a task list's check box. */
export const BROWSER_TAGS = ["input"];
const ALLOWED_ATTR = ["href", "title", "class", "start", "type", "checked", "disabled"];
// Classes the renderer itself writes; any other class could dress text up as the UI's badges.
const CLASS_PATTERN = /^(language-[\w+#.-]+|align-(left|center|right)|math-(inline|block)|task-item|task-list)$/;

const md = markdownit("commonmark", { html: false, linkify: false }).enable("table");

// An image becomes a plain link to it: the reader chooses whether to load it (as the server).
md.renderer.rules.image = (tokens, idx) => {
  const token = tokens[idx];
  const href = md.utils.escapeHtml(token.attrGet("src") || "");
  return `<a href="${href}">${md.utils.escapeHtml(token.content || "image")}</a>`;
};

// Table alignment as a class: the policy refuses `style` attributes.
md.core.ruler.push("align_classes", (state) => {
  for (const token of state.tokens) {
    const style = token.attrGet("style");
    if (!style) continue;
    const match = /text-align:\s*(left|center|right)/.exec(String(style));
    token.attrs = (token.attrs || []).filter(([name]) => name !== "style");
    if (match) token.attrJoin("class", `align-${match[1]}`);
  }
});

// Task lists: a list item starting `[ ] ` or `[x] ` gets a disabled check box.
md.core.ruler.push("task_lists", (state) => {
  const tokens = state.tokens;
  for (let index = 2; index < tokens.length; index += 1) {
    const inline = tokens[index];
    if (inline.type !== "inline" || tokens[index - 1].type !== "paragraph_open") continue;
    if (tokens[index - 2].type !== "list_item_open") continue;
    const match = /^\[([ xX])\] /.exec(inline.content);
    const first = inline.children?.[0];
    if (!match || !first || first.type !== "text" || !first.content.startsWith(match[0])) continue;
    first.content = first.content.slice(match[0].length);
    const box = new state.Token("html_inline", "", 0);
    box.content = `<input type="checkbox" disabled${match[1] === " " ? "" : " checked"}> `;
    inline.children?.unshift(box);
    tokens[index - 2].attrJoin("class", "task-item");
  }
});
// The check box is the renderer's own markup (raw HTML from the text stays off).
md.renderer.rules.html_inline = (tokens, idx) => {
  const content = tokens[idx].content;
  return /^<input type="checkbox" disabled( checked)?> $/.test(content) ? content : md.utils.escapeHtml(content);
};

// Math: $…$, \(…\) inline (and $$…$$ within a line); $$…$$, \[…\] on lines of their own as
// blocks. Parsed before escapes (`\,` is kept), shown as code until KaTeX replaces it.
md.inline.ruler.before("escape", "math_inline", (state, silent) => {
  const src = state.src;
  const start = state.pos;
  let open = "";
  let close = "";
  if (src.startsWith("\\(", start)) [open, close] = ["\\(", "\\)"];
  // `$$…$$` inside a line of text is math too (typeset inline), not a `$` and a `$…$`.
  else if (src.startsWith("$$", start)) [open, close] = ["$$", "$$"];
  else if (src[start] === "$") [open, close] = ["$", "$"];
  else return false;
  if (open === "$") {
    const next = src[start + 1];
    if (!next || /\s/.test(next)) return false;
  }
  let end = src.indexOf(close, start + open.length);
  while (open === "$" && end > 0 && src[end - 1] === "\\") end = src.indexOf(close, end + 1);
  if (end < 0) return false;
  const tex = src.slice(start + open.length, end);
  if (!tex.trim()) return false;
  // A closing `$` after a space or before a digit is a price, not math ("$5 and $6").
  if (open === "$" && (/\s/.test(src[end - 1]) || /\d/.test(src[end + 1] || ""))) return false;
  if (!silent) {
    const token = state.push("math_inline", "code", 0);
    token.content = tex;
  }
  state.pos = end + close.length;
  return true;
});
md.block.ruler.before("fence", "math_block", (state, startLine, endLine, silent) => {
  if (state.sCount[startLine] - state.blkIndent >= 4) return false; // indented: code
  const begin = state.bMarks[startLine] + state.tShift[startLine];
  const first = state.src.slice(begin, state.eMarks[startLine]);
  const open = first.startsWith("$$") ? "$$" : first.startsWith("\\[") ? "\\[" : "";
  if (!open) return false;
  const close = open === "$$" ? "$$" : "\\]";
  if (silent) return true;
  let line = startLine;
  let text = first.slice(open.length);
  let found = text.trimEnd().endsWith(close);
  if (found) text = text.trimEnd().slice(0, -close.length);
  while (!found && line + 1 < endLine) {
    line += 1;
    const current = state.src.slice(state.bMarks[line] + state.tShift[line], state.eMarks[line]);
    if (current.trimEnd().endsWith(close)) {
      text += `\n${current.trimEnd().slice(0, -close.length)}`;
      found = true;
    } else {
      text += `\n${current}`;
    }
  }
  const token = state.push("math_block", "pre", 0);
  token.content = text.trim();
  token.map = [startLine, line + 1];
  token.block = true;
  state.line = line + 1;
  return true;
});
md.renderer.rules.math_inline = (tokens, idx) =>
  `<code class="math-inline">${md.utils.escapeHtml(tokens[idx].content)}</code>`;
md.renderer.rules.math_block = (tokens, idx) =>
  `<pre class="math-block"><code>${md.utils.escapeHtml(tokens[idx].content)}</code></pre>\n`;

// (Outside a browser, as in the Node checks of tests/web/ui/, DOMPurify has no hooks.)
DOMPurify.addHook?.("uponSanitizeAttribute", (node, data) => {
  if (data.attrName === "class") {
    const kept = data.attrValue.split(/\s+/).filter((name) => CLASS_PATTERN.test(name));
    data.attrValue = kept.join(" ");
    if (!kept.length) data.keepAttr = false;
  } else if (node.nodeName === "INPUT" && data.attrName === "type") {
    data.attrValue = "checkbox";
  } else if (data.attrName === "href" && !/^(https?:|mailto:)/i.test(data.attrValue.trim())) {
    data.keepAttr = false; // the server keeps http(s) and mailto links only
  }
});
DOMPurify.addHook?.("afterSanitizeAttributes", (node) => {
  if (node.nodeName === "A" && node.hasAttribute("href")) node.setAttribute("rel", "noopener noreferrer nofollow");
  if (node.nodeName === "INPUT") {
    node.setAttribute("disabled", "");
    // A task's check box says what it shows (a form field needs a name, axe's `label`).
    node.setAttribute("aria-label", node.hasAttribute("checked") ? "Done" : "Not done");
  }
});

/** Markdown `text` as sanitized nodes (not yet decorated: see `decorate`). */
function toFragment(text) {
  return DOMPurify.sanitize(md.render(text), {
    ALLOWED_TAGS: [...ALLOWED_TAGS, ...BROWSER_TAGS],
    ALLOWED_ATTR,
    ALLOW_DATA_ATTR: false,
    RETURN_DOM_FRAGMENT: true,
  });
}

// -- code blocks and math: what the sanitized HTML becomes in the page ----------------------

/** @type {Promise<any> | null} */
let highlighter = null;
/** @type {Promise<any> | null} */
let katexLoading = null;

/** highlight.js, imported the first time a page shows code. */
function loadHighlighter() {
  highlighter ||= import(new URL("highlight.js/highlight.min.js", VENDOR).href).then((module) => module.default);
  return highlighter;
}

/** KaTeX (a classic script: it sets `window.katex`), loaded the first time a page shows math. */
function loadKatex() {
  katexLoading ||= new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = new URL("katex/katex.min.js", VENDOR).href;
    script.onload = () => resolve(/** @type {any} */ (window).katex);
    script.onerror = () => reject(new Error("KaTeX did not load"));
    document.head.append(script);
  });
  return katexLoading;
}

/** Highlight `code` (a `pre > code.language-*`) once highlight.js is here. */
async function highlight(code, language) {
  const hljs = await loadHighlighter();
  if (!hljs.getLanguage(language) || code.dataset.highlighted === "yes") return;
  const html = hljs.highlight(code.textContent || "", { language, ignoreIllegals: true }).value;
  // highlight.js escapes the code it is given: its output holds only its own spans.
  code.innerHTML = html;
  code.classList.add("hljs");
  code.dataset.highlighted = "yes";
}

/** Replace math placeholders (`code.math-inline`, `pre.math-block`) by KaTeX's MathML. */
async function typeset(nodes) {
  let katex;
  try {
    katex = await loadKatex();
  } catch {
    return; // the TeX stays shown as code
  }
  for (const node of nodes) {
    const display = node.classList.contains("math-block");
    const tex = node.textContent || "";
    let markup;
    try {
      markup = katex.renderToString(tex, { output: "mathml", displayMode: display, throwOnError: true, trust: false });
    } catch {
      node.classList.add("math-error");
      node.title = "This TeX could not be rendered";
      continue;
    }
    const math = DOMPurify.sanitize(markup, {
      USE_PROFILES: { mathMl: true },
      ADD_TAGS: ["span"],
      FORBID_ATTR: ["style"],
      // The TeX source KaTeX keeps in an <annotation> (a tag DOMPurify drops): not shown.
      ADD_FORBID_CONTENTS: ["annotation", "annotation-xml"],
      RETURN_DOM_FRAGMENT: true,
    });
    const wrapper = document.createElement(display ? "div" : "span");
    wrapper.className = display ? "math math-display" : "math";
    wrapper.append(math);
    node.replaceWith(wrapper);
  }
}

/** A code block's frame: the language, a copy button, the block. */
function frameCode(pre) {
  const code = pre.querySelector(":scope > code");
  if (!code || pre.parentElement?.classList.contains("code-block")) return;
  const language = (/(?:^|\s)language-([\w+#.-]+)/.exec(code.className) || [])[1] || "";
  const frame = document.createElement("div");
  frame.className = "code-block";
  const head = document.createElement("div");
  head.className = "code-head";
  const label = document.createElement("span");
  label.className = "code-lang";
  label.textContent = language || "text";
  const copy = document.createElement("button");
  copy.type = "button";
  copy.className = "copy-button code-copy";
  copy.dataset.testid = "code-copy";
  copy.textContent = "Copy";
  copy.setAttribute("aria-label", `Copy the ${language || "text"} code`);
  head.append(label, copy);
  pre.replaceWith(frame);
  frame.append(head, pre);
  if (language) highlight(code, language);
}

/** Frame code blocks and typeset math in `root` (sanitized markdown). */
export function decorate(root) {
  for (const pre of root.querySelectorAll("pre:not(.math-block)")) frameCode(/** @type {HTMLElement} */ (pre));
  const math = root.querySelectorAll("code.math-inline, pre.math-block");
  if (math.length) typeset(Array.from(math, (node) => /** @type {HTMLElement} */ (node)));
}

/** Render `text` as markdown into `body` (its content replaced). */
export function renderMarkdown(body, text) {
  const fragment = toFragment(text);
  decorate(fragment);
  body.replaceChildren(fragment);
  body.classList.add("markdown");
}

/** Where the blocks of `text` that can no longer change end: the start offset of its last
 * top-level block (0 while it has one block only). */
export function stableLength(text) {
  const starts = [];
  for (const token of md.parse(text, {})) {
    if (token.level === 0 && token.nesting >= 0 && token.map && token.block) starts.push(token.map[0]);
  }
  if (starts.length < 2) return 0;
  const line = starts[starts.length - 1];
  let offset = 0;
  for (let seen = 0; seen < line; seen += 1) {
    const next = text.indexOf("\n", offset);
    if (next < 0) return 0;
    offset = next + 1;
  }
  return offset;
}

/**
 * An answer's body as it streams: `append` text; the finished blocks are rendered once, the
 * growing last block again at most once per animation frame (and at once on `flush`).
 */
export class MarkdownStream {
  /** @param {HTMLElement} body */
  constructor(body) {
    this.body = body;
    this.text = "";
    this.done = 0; // the length of `text` rendered for good
    /** @type {ChildNode[]} */
    this.tail = []; // the nodes of the last block, replaced on the next render
    this.scheduled = false;
    this.closed = false; // finished or replaced: later frames change nothing
    body.classList.add("markdown");
  }

  /** Stop rendering into the body (its content is someone else's now). */
  close() {
    this.closed = true;
  }

  /** @param {string} chunk */
  append(chunk) {
    if (!chunk) return;
    this.text += chunk;
    if (this.scheduled) return;
    this.scheduled = true;
    requestAnimationFrame(() => this.flush());
  }

  /** Render what came since the last frame now. */
  flush() {
    this.scheduled = false;
    if (this.closed) return;
    const rest = this.text.slice(this.done);
    const stable = stableLength(rest);
    for (const node of this.tail) node.remove();
    this.tail = [];
    if (stable > 0) {
      const fragment = toFragment(rest.slice(0, stable));
      decorate(fragment);
      this.body.append(fragment);
      this.done += stable;
    }
    const fragment = toFragment(this.text.slice(this.done));
    decorate(fragment);
    this.tail = Array.from(fragment.childNodes);
    this.body.append(fragment);
  }

  /** The answer is stored as `content`: render what is left; a different text is rendered
   * whole (a provider that rewrote its answer). */
  finish(content = this.text) {
    if (this.closed) return;
    if (content !== this.text) {
      this.text = content;
      this.done = 0;
      renderMarkdown(this.body, content);
    } else {
      this.flush();
    }
    this.tail = [];
    this.closed = true;
  }
}

/** Copy `text` to the clipboard; resolves to whether it worked. */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}
