// @ts-check
// DOM builders for the chat transcript: its one renderer. The page load (the state embedded in
// the page), every `state` frame and the live frames all build the transcript with these, so
// it reads the same however it was reached. Markdown goes through markdown.js (sanitized with
// the server's allow-list); every other string goes through textContent.

import { renderDocuments } from "./documents.js";
import { el } from "./dom.js";
import { failureClause } from "./failures.js";
import { renderMarkdown } from "./markdown.js";
import { renderToolCard } from "./tool_cards.js";

const ROLE_LABELS = { user: "You", assistant: "Assistant", tool: "Tool result", system: "System" };

/**
 * A thinking block's summary: "Thinking" while it streams, "Thought for 3.2 s" once its
 * duration is known ("Thought" for a stored one whose duration is not).
 */
export function thinkingLabel(seconds, done = false) {
  if (typeof seconds !== "number" || !Number.isFinite(seconds)) return done ? "Thought" : "Thinking";
  return `Thought for ${seconds < 10 ? seconds.toFixed(1) : Math.round(seconds)} s`;
}

/** A message's stored thinking duration (`thinking_ms`) in seconds, or undefined. */
export function thinkingSeconds(message) {
  return typeof message.thinking_ms === "number" ? message.thinking_ms / 1000 : undefined;
}

/** The collapsed reasoning of an answer (live or stored: the one shape of both). */
export function renderThinking(text, label) {
  return el(
    "details",
    { className: "thinking", "data-testid": "thinking" },
    el("summary", { text: label }),
    el("div", { className: "thinking-body", text }),
  );
}

/** What each message item was written as (its markdown), for its Copy button. */
export const SOURCES = new WeakMap();

/** Fill a message body: markdown rendered here when the server rendered it (a non-empty
 * `html`: the same parser and allow-list, markdown.js), else plain text. */
export function fillBody(body, message) {
  if (message.html) {
    renderMarkdown(body, message.content || "");
  } else {
    body.textContent = message.content || "";
    body.classList.add("plain");
  }
  body.classList.remove("streaming");
  body.removeAttribute("aria-busy");
}

/** Where a message's images are served: `<messages url><message id>/images/<index>/`. */
let messagesUrl = "";

/** Set the conversation's messages URL (the page's `data-messages-url`), once. */
export function setMessagesUrl(url) {
  messagesUrl = url || "";
}

/** The images a message was sent with: thumbnails that open full size, with their count. */
function renderImages(message) {
  const count = message.images_count;
  const note = el("p", { className: "msg-note", text: `${count} image${count === 1 ? "" : "s"} attached` });
  if (!message.id || !messagesUrl) return [note];
  const links = [];
  for (let index = 0; index < count; index += 1) {
    const url = `${messagesUrl}${encodeURIComponent(message.id)}/images/${index}/`;
    const label = `Image ${index + 1} of ${count} (opens full size)`;
    links.push(
      el(
        "li",
        {},
        el(
          "a",
          { className: "msg-image-link", href: url, target: "_blank", rel: "noopener", "data-testid": "message-image" },
          el("img", { className: "msg-image", src: url, alt: label, loading: "lazy", width: 96, height: 96 }),
        ),
      ),
    );
  }
  return [el("ul", { className: "msg-images", "aria-label": "Images sent" }, ...links), note];
}

/** Mark the message item `li` as a failed or stopped answer (`mark.kind`): its class and its
 * note at the end, once. */
export function markItem(li, mark) {
  li.classList.add(`is-${mark.kind}`);
  li.querySelector(":scope > .run-note")?.remove();
  li.append(el("p", { className: `msg-note run-note run-note-${mark.kind}`, "data-testid": "run-note", text: mark.text }));
}

/** One message item (`li.msg`), with a tool card per call. */
export function renderMessage(message, tools = []) {
  const li = el("li", {
    className: `msg msg-${message.role}`,
    "data-message-id": message.id || null,
    "data-role": message.role,
  });
  li.append(el("div", { className: "msg-role", text: ROLE_LABELS[message.role] || message.role }));
  if (message.role === "assistant" && message.thinking) {
    li.append(renderThinking(message.thinking, thinkingLabel(thinkingSeconds(message), true)));
  }
  if (message.role === "tool") {
    li.append(el("pre", { className: "msg-body tool-output", text: message.content || "" }));
  } else if (message.content) {
    const body = el("div", { className: "msg-body" });
    fillBody(body, message);
    li.append(body);
  }
  if (message.images_count) li.append(...renderImages(message));
  if (message.documents && message.documents.length) li.append(renderDocuments(message.documents));
  for (const tool of tools) li.append(renderToolCard(tool));
  if (message.content && (message.role === "user" || message.role === "assistant")) {
    SOURCES.set(li, message.content);
    li.append(copyButton());
  }
  if (message.id && (message.role === "user" || message.role === "assistant")) {
    li.append(forkButton(message.id));
  }
  return li;
}

/** A message's Copy button: copies what it was written as (markdown). */
export function copyButton() {
  return el("button", {
    type: "button",
    className: "link-button msg-copy",
    "data-testid": "copy-message",
    "aria-label": "Copy this message as Markdown",
    text: "Copy",
  });
}

/** The "Fork from here" button of a committed message (the chat forks through the API). */
export function forkButton(messageId) {
  return el("button", {
    type: "button",
    className: "link-button msg-fork",
    "data-fork": messageId,
    "data-testid": "fork",
    text: "Fork from here",
  });
}

/** Group messages as the server does: tool results go inside their call's card. */
/** What the transcript knows of tool calls beyond their messages: denials (call id →
 * `{reason, rule}`), failures (a Set of call ids) and displays (call id → what the tool showed). */
export const NO_NOTES = Object.freeze({ denials: {}, failures: new Set(), displays: {} });

export function transcriptItems(messages, notes = NO_NOTES) {
  const { denials = {}, failures = new Set(), displays = {} } = notes;
  const results = new Map();
  const called = new Set();
  for (const message of messages) {
    if (message.role === "tool" && message.tool_call_id) results.set(message.tool_call_id, message);
    for (const call of message.calls || []) called.add(call.id);
  }
  const items = [];
  for (const message of messages) {
    if (message.role === "tool" && called.has(message.tool_call_id)) continue;
    const tools = (message.calls || []).map((call) => {
      const result = results.get(call.id);
      const denial = denials[call.id];
      const tool = { id: call.id, name: call.name, arguments: call.arguments };
      if (denial) Object.assign(tool, { denied: true, reason: denial.reason, rule: denial.rule });
      // A denied or failed call's tool message holds the error text, shaped like a result.
      if (result) tool[denial || failures.has(call.id) ? "error" : "result"] = result.content;
      if (displays[call.id] != null) tool.display = displays[call.id];
      return tool;
    });
    items.push({ message, tools });
  }
  return items;
}

/**
 * A compaction notice: the recap (collapsed) and the original messages (collapsed). `source` is
 * where the originals load from when the section came without them.
 */
export function renderSection(section, notes = NO_NOTES, source = "") {
  const messages = section.messages || [];
  const originals = el("ol", { className: "originals" });
  for (const item of transcriptItems(messages, notes)) {
    originals.append(renderMessage(item.message, item.tools));
  }
  const count = messages.length || section.count || 0;
  const recap = el("div", { className: "recap-body" });
  fillBody(recap, { html: section.html, content: section.summary });
  return el(
    "li",
    { className: "compaction", "data-testid": "compaction-notice", "data-section-id": section.id },
    el("p", { className: "compaction-head", text: "Earlier messages were summarized to save context." }),
    el("details", { className: "compaction-recap" }, el("summary", { text: "Summary" }), recap),
    el(
      "details",
      // Without the originals in hand (a `state` frame counts them), they load when opened.
      { className: "compaction-originals", "data-src": messages.length ? null : source },
      el("summary", { text: `Original messages (${count})` }),
      originals,
    ),
  );
}

/** Fill a compaction's originals list from `messages` (fetched when it was opened). */
export function fillOriginals(list, messages, notes = NO_NOTES) {
  list.replaceChildren();
  for (const item of transcriptItems(messages, notes)) {
    list.append(renderMessage(item.message, item.tools));
  }
}

/** The "show earlier messages" row: `count` live messages before the first one shown. */
export function renderEarlier(count, source) {
  const label = `Show ${count} earlier message${count === 1 ? "" : "s"}`;
  return el(
    "li",
    { className: "earlier", "data-testid": "earlier" },
    el("button", { type: "button", className: "earlier-button", "data-src": source, text: label }),
  );
}

// -- alternatives: regenerated answers and edited messages (the `branches` of a state) ------

/**
 * The `< 1/2 >` switch of a branch point (`{point, message, index, count, error}`): its
 * buttons carry the point and the alternative they choose. An empty chosen alternative (a
 * failed attempt) says why it failed.
 */
export function renderBranchNav(branch) {
  const step = (label, testid, index) =>
    el("button", {
      type: "button",
      className: "link-button branch-step",
      "aria-label": label,
      "data-testid": testid,
      "data-point": branch.point,
      "data-index": index,
      disabled: index < 1 || index > branch.count,
      text: testid === "branch-prev" ? "‹" : "›",
    });
  const nav = el(
    "div",
    { className: "branch-nav", role: "group", "aria-label": "Alternatives", "data-testid": "branch-nav", "data-point": branch.point },
    step("Previous alternative", "branch-prev", branch.index - 1),
    el("span", { className: "branch-count", "data-testid": "branch-count", text: `${branch.index}/${branch.count}` }),
    step("Next alternative", "branch-next", branch.index + 1),
  );
  if (!branch.message) {
    const why = branch.error ? `This attempt failed: ${failureClause(branch.error)}.` : "No answer in this alternative yet.";
    const empty = el("span", { className: "branch-empty", "data-testid": "branch-empty", text: why });
    if (branch.error) empty.title = branch.error; // the technical text, for who wants it
    nav.append(empty);
  }
  return nav;
}

/** A message's action button (`regenerate`, `edit`): `data-message` names the message. */
export function messageAction(action, messageId, label) {
  return el("button", {
    type: "button",
    className: `link-button msg-${action}`,
    "data-action": action,
    "data-message": messageId,
    "data-testid": action,
    text: label,
  });
}

/** The in-place editor of a user message: its text, then Send and Cancel. */
export function renderEditor(messageId, content) {
  return el(
    "form",
    { className: "msg-editor", "data-testid": "editor", "data-message": messageId },
    el("label", { className: "visually-hidden", for: `edit-${messageId}`, text: "Edit your message" }),
    el("textarea", { id: `edit-${messageId}`, className: "msg-editor-input", rows: 3, "data-testid": "edit-input", text: content }),
    el(
      "div",
      { className: "msg-editor-actions" },
      el("button", { type: "submit", className: "primary", "data-testid": "edit-send", text: "Send" }),
      el("button", { type: "button", className: "msg-editor-cancel", "data-testid": "edit-cancel", text: "Cancel" }),
    ),
  );
}
