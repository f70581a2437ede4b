// @ts-check
// The transcript: the list of messages, compaction notices and tool cards. It is rebuilt from
// every `state` frame (render.js is its one renderer), grows with committed messages and
// compactions, and answers its own controls: a compaction's originals (loaded when opened),
// "show earlier messages", Copy (a message as Markdown, a code block as text) and Fork.
// The answer being streamed is the LiveRun's (live.js); branch controls are Branches'.

import { AnswerModels } from "./answered.js";
import { copyText } from "./markdown.js";
import { describeFailure, stopSentence } from "./failures.js";
import { el } from "./dom.js";
import {
  fillOriginals,
  markItem,
  renderEarlier,
  renderMessage,
  renderSection,
  SOURCES,
  transcriptItems,
} from "./render.js";
import { DECISIONS } from "./tool_cards.js";

/** @typedef {import("./api.js").ChatApi} ChatApi */
/** @typedef {{denials: Record<string, any>, failures: Set<string>, displays: Record<string, any>}} Notes */

/** The mark a failed or stopped answer carries, live and after a reload: its note's text and
 * kind (`failed` or `stopped`). `null` for a run that finished. */
export function unfinishedMark(run, retries = 0) {
  if (!run) return null;
  if (run.status === "error") return { kind: "failed", text: `This answer failed: ${lower(describeFailure(run.error, retries).sentence)}` };
  if (run.status === "interrupted") return { kind: "stopped", text: stopSentence("interrupted") };
  return { kind: "stopped", text: stopSentence(run.stop_reason) };
}

function lower(sentence) {
  return `${sentence[0].toLowerCase()}${sentence.slice(1)}`;
}

export class Transcript {
  /**
   * @param {HTMLOListElement} list the `#transcript` element
   * @param {HTMLElement} emptyNote shown while the transcript is empty
   * @param {{api: ChatApi, notify: (message: string, kind?: string) => void,
   *          sectionsUrl: string, messagesUrl: string}} options
   */
  constructor(list, emptyNote, { api, notify, sectionsUrl, messagesUrl }) {
    this.list = list;
    this.emptyNote = emptyNote;
    this.api = api;
    this.notify = notify;
    this.sectionsUrl = sectionsUrl;
    this.messagesUrl = messagesUrl;
    /** What the transcript knows of tool calls beyond their messages. @type {Notes} */
    this.notes = { denials: {}, failures: new Set(), displays: {} };
    // A compaction's originals load the first time they are opened (`toggle` does not
    // bubble: listen in the capture phase).
    list.addEventListener("toggle", (event) => this.loadOriginals(event.target), true);
    list.addEventListener("click", (event) => {
      const target = /** @type {Element} */ (event.target);
      const copy = target.closest(".msg-copy, .code-copy");
      if (copy) this.copy(/** @type {HTMLButtonElement} */ (copy));
      const earlier = target.closest(".earlier-button");
      if (earlier) this.loadEarlier(/** @type {HTMLButtonElement} */ (earlier));
      const fork = target.closest(".msg-fork");
      if (fork) this.fork(/** @type {HTMLButtonElement} */ (fork));
    });
  }

  sectionUrl(id) {
    return `${this.sectionsUrl}${encodeURIComponent(id)}/`;
  }

  earlierUrl(before) {
    return `${this.messagesUrl}?before=${encodeURIComponent(before)}`;
  }

  /** The top-level items (messages, compactions, the "earlier" row). */
  items() {
    return /** @type {HTMLElement[]} */ (Array.from(this.list.children));
  }

  /** The message items that carry an id. */
  messages() {
    return this.items().filter((li) => li.classList.contains("msg") && li.dataset.messageId);
  }

  hasMessage(id) {
    return Boolean(id) && this.items().some((li) => li.dataset.messageId === id);
  }

  /** Rebuild from a `state` frame. */
  render(state) {
    this.notes = {
      denials: state.denials || {},
      failures: new Set(state.failures || []),
      displays: state.displays || {},
    };
    DECISIONS.clear();
    for (const decision of Object.values(state.decisions || {})) DECISIONS.set(decision.call_id, decision);
    const nodes = [];
    for (const section of state.sections || []) nodes.push(renderSection(section, this.notes, this.sectionUrl(section.id)));
    const messages = state.messages || [];
    if (state.earlier && messages.length) nodes.push(renderEarlier(state.earlier, this.earlierUrl(messages[0].id)));
    for (const item of transcriptItems(messages, this.notes)) nodes.push(renderMessage(item.message, item.tools));
    this.list.replaceChildren(...nodes);
    if (!state.run) this.markUnfinished(state.last_run);
  }

  /** The latest run failed or stopped (the state's `last_run`): its answer keeps the mark it
   * had live; a failure that wrote nothing gets an empty answer carrying it, as it did live. */
  markUnfinished(run) {
    const mark = unfinishedMark(run);
    if (!mark) return;
    const last = this.items().at(-1);
    if (last && last.classList.contains("msg-assistant")) {
      markItem(last, mark);
    } else if (mark.kind === "failed" && last && last.classList.contains("msg-user")) {
      const li = el("li", { className: "msg msg-assistant", "data-role": "assistant" }, el("div", { className: "msg-role", text: "Assistant" }));
      markItem(li, mark);
      this.list.append(li);
    }
  }

  /** A tool frame: its denial, failure or display, for cards drawn again later. */
  note(frame) {
    const id = frame.call?.id;
    if (!id) return;
    if (frame.denied) this.notes.denials[id] = { reason: frame.reason, rule: frame.rule };
    else if (frame.result && frame.result.error != null) this.notes.failures.add(id);
    if (frame.display != null) this.notes.displays[id] = frame.display;
  }

  /** Exactly one element is the answer: `liveBody` (the streaming one), else the last
   * assistant text. */
  markAnswer(liveBody) {
    // A streaming answer gets a frame per delta: once it is the one marked, nothing changes.
    if (liveBody && liveBody.dataset.testid === "answer" && this.list.querySelectorAll("[data-testid=answer]").length === 1) return;
    for (const node of this.list.querySelectorAll("[data-testid=answer]")) node.removeAttribute("data-testid");
    let body = liveBody;
    if (!body) {
      const assistants = this.items().filter((li) => li.classList.contains("msg-assistant"));
      for (let index = assistants.length - 1; index >= 0 && !body; index -= 1) {
        body = assistants[index].querySelector(":scope > .msg-body");
      }
    }
    if (body) body.dataset.testid = "answer";
    this.emptyNote.hidden = this.list.children.length > 0;
  }

  /** Whether the end of the transcript is in view (or nearly). */
  nearBottom() {
    return this.list.getBoundingClientRect().bottom <= window.innerHeight + 160;
  }

  scrollToEnd() {
    this.list.lastElementChild?.scrollIntoView({ block: "end" });
  }

  /** Committed messages no live turn claimed: appended (a result whose call is not on the
   * page is left out). */
  appendMessages(messages) {
    for (const message of messages) {
      if (message.role === "tool") continue;
      this.list.append(renderMessage(message));
    }
  }

  /** A `compaction` frame: the section goes after the last one, the messages it folded go. */
  compaction(section) {
    if (!section || this.list.querySelector(`:scope > [data-section-id="${CSS.escape(section.id)}"]`)) return;
    // A fold takes the oldest live messages: any not yet shown are in it too.
    this.list.querySelector(":scope > .earlier")?.remove();
    const folded = new Set((section.messages || []).map((message) => message.id));
    for (const li of this.items()) if (folded.has(li.dataset.messageId)) li.remove();
    const sections = this.list.querySelectorAll(":scope > .compaction");
    const after = sections[sections.length - 1];
    const node = renderSection(section, this.notes);
    if (after) after.after(node);
    else this.list.prepend(node);
  }

  async loadOriginals(target) {
    if (!(target instanceof HTMLDetailsElement) || !target.open || !target.dataset.src) return;
    if (target.dataset.state === "loading" || target.dataset.state === "loaded") return;
    const list = target.querySelector(".originals");
    target.dataset.state = "loading";
    try {
      const body = await this.api.get(target.dataset.src);
      fillOriginals(list, body.messages || [], this.notes);
      target.dataset.state = "loaded";
    } catch {
      delete target.dataset.state; // closing and opening again retries
      list.replaceChildren(el("li", { className: "originals-error", text: "Could not load the original messages." }));
    }
  }

  /** Copy a message as it was written (markdown), a code block as its text. */
  async copy(button) {
    let text = "";
    if (button.classList.contains("code-copy")) {
      text = button.closest(".code-block")?.querySelector("pre > code")?.textContent || "";
    } else {
      const li = button.closest(".msg");
      text = SOURCES.get(li) ?? li?.querySelector(":scope > .msg-body")?.textContent ?? "";
    }
    const copied = await copyText(text);
    button.textContent = copied ? "Copied" : "Copy failed";
    button.dataset.copied = copied ? "true" : "false";
    setTimeout(() => {
      button.textContent = "Copy";
      delete button.dataset.copied;
    }, 1500);
  }

  /** "Show earlier messages": the page before the first live message shown goes above it. */
  async loadEarlier(button) {
    if (button.disabled) return;
    const row = button.closest(".earlier");
    button.disabled = true;
    try {
      const page = await this.api.get(button.dataset.src);
      // A state frame may have re-rendered the transcript meanwhile (it arrives just after
      // the socket opens): the page then goes above the row that replaced this one.
      const target = row.isConnected ? row : this.list.querySelector(":scope > .earlier");
      if (!target) return;
      const messages = page.messages || [];
      const nodes = transcriptItems(messages, this.notes).map((item) => renderMessage(item.message, item.tools));
      target.after(...nodes);
      new AnswerModels(this.list).show(page.models);
      if (page.earlier && messages.length) target.replaceWith(renderEarlier(page.earlier, this.earlierUrl(messages[0].id)));
      else target.remove();
    } catch {
      button.disabled = false;
      this.notify("Could not load the earlier messages.");
    }
  }

  /** Fork the conversation at a message (through the API) and open the fork. */
  async fork(button) {
    button.disabled = true;
    try {
      const fork = await this.api.write("POST", "fork/", { message: button.dataset.fork });
      window.location.assign(`/c/${encodeURIComponent(fork.id)}/`);
    } catch (error) {
      button.disabled = false;
      this.notify(error.message);
    }
  }
}
