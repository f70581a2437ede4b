// @ts-check
// The composer: the message box with its images and `/` suggestions, Send and Stop. It sends
// `send` frames (images uploaded first), shows the user's own message at once (pending until
// the server's `started` names it), and gives the text back when the server refuses it.
// Keys: Enter sends, Shift+Enter adds a line, Esc stops the answer being written (anywhere on
// the page), Up in the empty box edits the last message.

import { Attachments } from "./attachments.js";
import { renderMessage } from "./render.js";
import { embeddedTemplates, SlashMenu } from "./slash.js";

/** @typedef {{li: HTMLElement, content: string}} Outgoing */
/**
 * @typedef {object} ComposerHooks
 * @property {(frame: object) => boolean} send sends a frame (false: not connected)
 * @property {(message: string, kind?: string) => void} notify
 * @property {() => void} reconnect reconnects the socket now
 * @property {(focus: string) => void} compact asks for a compaction
 * @property {() => boolean} editLast opens the editor of the last user message
 * @property {() => boolean} answering whether an answer is being written
 * @property {(li: HTMLElement) => void} show puts the user's own message in the transcript
 */

function nonce() {
  if (window.crypto && typeof window.crypto.randomUUID === "function") return window.crypto.randomUUID();
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}

export class Composer {
  /**
   * @param {HTMLElement} root the `#chat` element (URLs and limits as data attributes)
   * @param {ComposerHooks} hooks
   */
  constructor(root, hooks) {
    this.root = root;
    this.hooks = hooks;
    this.form = /** @type {HTMLFormElement} */ (document.getElementById("composer"));
    this.input = /** @type {HTMLTextAreaElement} */ (document.getElementById("message-input"));
    this.stopButton = /** @type {HTMLButtonElement} */ (document.getElementById("stop"));
    /** Sent, not yet acknowledged by `started`: nonce -> the bubble and its text. @type {Map<string, Outgoing>} */
    this.outbox = new Map();
    this.submitting = false; // images are uploading: another Enter must not send twice
    /** A `/skill` just sent, given back to the box if it is refused. @type {string | null} */
    this.lastCommand = null;
    this.attachments = new Attachments({
      list: document.getElementById("attachment-previews"),
      uploadUrl: root.dataset.attachmentsUrl,
      csrfToken: /** @type {HTMLInputElement | null} */ (document.querySelector("input[name=csrfmiddlewaretoken]"))?.value || "",
      maxBytes: Number(root.dataset.maxImageBytes) || 5 * 1024 * 1024,
      maxDocumentBytes: Number(root.dataset.maxDocumentBytes) || 10 * 1024 * 1024,
      notify: hooks.notify,
    });
    this.attachments.watch({
      input: this.input,
      zone: this.form,
      button: document.getElementById("attach"),
      picker: document.getElementById("attach-input"),
    });
    this.slashMenu = new SlashMenu(document.getElementById("slash-menu"), this.input, embeddedTemplates("prompt-templates"));

    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.submit();
    });
    this.input.addEventListener("keydown", (event) => this.keydown(event));
    this.input.addEventListener("input", () => this.autosize());
    this.stopButton.addEventListener("click", () => {
      this.stop();
      this.input.focus();
    });
    // Esc stops the answer from anywhere on the page, unless something nearer used it (the
    // slash menu, an open editor, a field of a held call).
    document.addEventListener("keydown", (event) => {
      if (event.key !== "Escape" || event.defaultPrevented || this.stopButton.hidden) return;
      const target = /** @type {Element} */ (event.target);
      if (target.closest && target.closest(".msg-editor, .approval-box, .workspace, dialog")) return;
      event.preventDefault();
      this.stop();
    });
  }

  keydown(event) {
    if (this.slashMenu.keydown(event)) return;
    const plain = !event.shiftKey && !event.altKey && !event.ctrlKey && !event.metaKey;
    if (event.key === "ArrowUp" && plain && this.input.value === "" && !this.hooks.answering()) {
      if (this.hooks.editLast()) event.preventDefault();
      return;
    }
    if (event.key !== "Enter" || event.shiftKey || event.isComposing || event.keyCode === 229) return;
    event.preventDefault();
    this.submit();
  }

  /** Stop the answer being written. */
  stop() {
    if (!this.hooks.send({ type: "abort" })) this.hooks.notify("Not connected right now; reconnecting…", "warning");
  }

  /** Show Stop while an answer is written. */
  streaming(on) {
    this.stopButton.hidden = !on;
    this.root.classList.toggle("is-streaming", on);
  }

  focus() {
    this.input.focus({ preventScroll: true });
  }

  autosize() {
    this.input.style.height = "auto";
    this.input.style.height = `${this.input.scrollHeight + 2}px`;
  }

  clear() {
    this.input.value = "";
    this.autosize();
  }

  /** Give `content` back to the box, unless the user has typed something since. */
  restore(content) {
    if (!this.input.value.trim()) {
      this.input.value = content;
      this.autosize();
    }
  }

  /** Texts taken back from the queue go after what the box holds; their images return too. */
  takeBack(texts, images) {
    if (texts && texts.length) {
      const text = texts.filter((part) => part).join("\n\n");
      this.input.value = this.input.value.trim() ? `${this.input.value}\n\n${text}` : text;
      this.autosize();
    }
    if (images && images.length) this.attachments.restore(images);
  }

  /** Send what the composer holds: its text and attached images (uploaded first). */
  async submit() {
    if (this.submitting) return;
    const { hooks, attachments } = this;
    const content = this.input.value;
    if (!content.trim() && !attachments.count) {
      // As the server reads it (seed 004): an empty submission continues, like `/continue`.
      // Not while an answer runs or a message is on its way: that would be refused as busy.
      if (hooks.answering() || this.outbox.size) return;
      if (!hooks.send({ type: "send", content: "", nonce: nonce() })) hooks.notify("Not connected right now; reconnecting…", "warning");
      this.clear();
      return;
    }
    const command = attachments.count ? null : content.trim().match(/^\/compact(?:\s+([\s\S]*))?$/);
    if (command) {
      // Done at once, no run: as the "Compact history" form does.
      hooks.compact(command[1]?.trim() || "");
      this.clear();
      return;
    }
    let images = [];
    if (attachments.count) {
      this.submitting = true;
      this.form.classList.add("is-uploading");
      try {
        images = await attachments.upload();
      } catch (error) {
        hooks.notify(error.message);
        return;
      } finally {
        this.submitting = false;
        this.form.classList.remove("is-uploading");
      }
    }
    const id = nonce();
    /** @type {{type: string, content: string, nonce: string, attachments?: string[]}} */
    const frame = { type: "send", content, nonce: id };
    if (images.length) frame.attachments = images;
    if (!hooks.send(frame)) {
      hooks.notify("Not connected right now; your message is still in the box. Reconnecting…", "warning");
      hooks.reconnect();
      return;
    }
    const shown = attachments.shown();
    attachments.clear();
    this.clear();
    this.input.focus();
    if (!images.length && /^\/skill(?:\s|$)/.test(content.trim())) {
      // Not a message: a notice (or an error) answers it.
      this.lastCommand = content;
      return;
    }
    const li = renderMessage({ id: "", role: "user", content, html: "", ...shown });
    li.classList.add("is-pending");
    li.dataset.nonce = id;
    this.outbox.set(id, { li, content });
    hooks.show(li);
    li.scrollIntoView({ block: "end" });
  }

  /** The server took the message of `nonce` (`started`, or queued): its bubble, if ours. */
  accepted(nonce) {
    const entry = nonce ? this.outbox.get(nonce) : undefined;
    if (entry) this.outbox.delete(nonce);
    return entry || null;
  }

  /** The last message sent was dropped (a duplicate) or refused (then its text comes back). */
  dropLast(refused) {
    const last = Array.from(this.outbox.entries()).pop();
    if (!last) return;
    this.outbox.delete(last[0]);
    last[1].li.remove();
    if (refused) this.restore(last[1].content);
  }

  /** A `skill` command was refused: its text goes back in the box. */
  skillRefused() {
    if (this.lastCommand === null) return;
    this.restore(this.lastCommand);
    this.lastCommand = null;
  }

  /**
   * A message that reached the server is in `state`; after a reconnect, one that is not was
   * lost with the old socket: give its text back rather than show it as sent. Bubbles still
   * on their way go back under the rebuilt transcript.
   */
  reconcile(state, afterReconnect) {
    const users = (state.messages || []).filter((message) => message.role === "user");
    for (const [key, entry] of this.outbox) {
      const index = users.findIndex((message) => message.content === entry.content);
      if (index >= 0) {
        users.splice(index, 1);
        this.outbox.delete(key);
      } else if (afterReconnect) {
        this.outbox.delete(key);
        this.restore(entry.content);
        this.hooks.notify("Your last message may not have been sent; it is back in the message box.", "warning");
      } else {
        this.hooks.show(entry.li);
      }
    }
  }
}
