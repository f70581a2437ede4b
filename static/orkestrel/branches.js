// @ts-check
// Alternatives: regenerate an answer, edit a message, flip between them (`< 1/2 >`). The
// state's `branches` say where the branch points are; after every frame that changes the
// transcript the switches, the Edit buttons and the latest answer's Regenerate are put in
// place again. An edit opens in place (Up in the empty composer opens the last one) and is
// sent as an `edit` frame; the `branches` frame that follows brings the new alternative.

import { messageAction, renderBranchNav, renderEditor } from "./render.js";

/** @typedef {{point: string, message: string | null, index: number, count: number, error: string}} BranchPoint */

export class Branches {
  /**
   * @param {HTMLOListElement} list the transcript element
   * @param {(frame: object) => boolean} send sends a frame (false: not connected)
   * @param {(message: string, kind?: string) => void} notify
   */
  constructor(list, send, notify) {
    this.list = list;
    this.send = send;
    this.notify = notify;
    /** @type {BranchPoint[]} */
    this.points = [];
    /** User message id -> its text, for the editor. @type {Map<string, string>} */
    this.texts = new Map();
    list.addEventListener("click", (event) => this.click(/** @type {Element} */ (event.target)));
    list.addEventListener("submit", (event) => {
      const editor = /** @type {Element} */ (event.target).closest(".msg-editor");
      if (!editor) return;
      event.preventDefault();
      this.submit(/** @type {HTMLFormElement} */ (editor));
    });
    list.addEventListener("keydown", (event) => {
      const field = /** @type {Element} */ (event.target).closest(".msg-editor-input");
      if (!field) return;
      if (event.key === "Escape") {
        event.preventDefault(); // closing the editor is all Escape does here
        this.closeEditor(field.closest(".msg-editor"));
      } else if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        /** @type {HTMLTextAreaElement} */ (field).form.requestSubmit();
      }
    });
  }

  /** Remember the user messages' texts of `messages`. */
  learn(messages) {
    for (const message of messages || []) {
      if (message && message.role === "user" && message.id) this.texts.set(message.id, message.content);
    }
  }

  /** A `state` frame: its branch points and user messages. */
  fromState(state, streaming) {
    this.points = state.branches || [];
    this.learn(state.messages);
    this.layOut(streaming);
  }

  /** After a frame that changed the transcript (`started`, `committed`, `finish`, `error`). */
  afterFrame(frame, streaming) {
    this.learn([frame.message]);
    this.learn(frame.messages);
    this.layOut(streaming);
    // A refused edit (a reply is running) can be sent again.
    if (frame.type === "error") {
      for (const button of this.list.querySelectorAll(".msg-editor [data-testid=edit-send]")) {
        /** @type {HTMLButtonElement} */ (button).disabled = false;
      }
    }
  }

  /** Put the `< i/n >` switches, the Edit buttons and the latest answer's Regenerate in place. */
  layOut(streaming) {
    const stale = ":scope > .msg > .branch-nav, :scope > .msg > .msg-regenerate, :scope > .msg > .msg-edit";
    for (const node of this.list.querySelectorAll(stale)) node.remove();
    const items = /** @type {HTMLElement[]} */ (Array.from(this.list.children)).filter(
      (li) => li.classList.contains("msg") && li.dataset.messageId,
    );
    const byId = new Map(items.map((li) => [li.dataset.messageId, li]));
    for (const branch of this.points) {
      // On the chosen alternative's first message: the one after the point, once it has one
      // (a new answer committed since the state came); until then, under the point.
      const point = byId.get(branch.point);
      const next = point ? items[items.indexOf(point) + 1] : null;
      const first = byId.get(branch.message) || next;
      const shown = first ? { ...branch, message: first.dataset.messageId } : branch;
      const li = first || point;
      if (li) li.append(renderBranchNav(shown));
    }
    for (const li of items) {
      if (li.dataset.role === "user") li.append(messageAction("edit", li.dataset.messageId, "Edit"));
    }
    const last = items[items.length - 1];
    if (last && last.dataset.role === "assistant" && !streaming && !last.classList.contains("is-live")) {
      last.append(messageAction("regenerate", last.dataset.messageId, "Regenerate"));
    }
  }

  click(target) {
    const step = /** @type {HTMLButtonElement | null} */ (target.closest(".branch-step"));
    if (step) {
      if (step.disabled) return;
      const frame = { type: "select_branch", point: step.dataset.point, index: Number(step.dataset.index) };
      if (!this.send(frame)) this.notify("Not connected right now; reconnecting…", "warning");
      return;
    }
    const cancel = target.closest(".msg-editor-cancel");
    if (cancel) {
      this.closeEditor(cancel.closest(".msg-editor"));
      return;
    }
    const action = /** @type {HTMLButtonElement | null} */ (target.closest("[data-action]"));
    if (!action) return;
    if (action.dataset.action === "edit") {
      this.openEditor(action.closest(".msg"), action.dataset.message);
    } else if (action.dataset.action === "regenerate") {
      if (this.send({ type: "regenerate", message: action.dataset.message })) action.disabled = true;
      else this.notify("Not connected right now; reconnecting…", "warning");
    }
  }

  /** Open the editor of the last user message the server has (Up in an empty composer);
   * whether there was one. */
  editLast() {
    const users = this.list.querySelectorAll(":scope > .msg-user[data-message-id]:not(.is-pending)");
    const last = /** @type {HTMLElement | undefined} */ (users[users.length - 1]);
    if (!last) return false;
    this.openEditor(last, last.dataset.messageId);
    last.scrollIntoView({ block: "nearest" });
    return true;
  }

  openEditor(li, messageId) {
    const open = li.querySelector(":scope > .msg-editor textarea");
    if (open) {
      open.focus();
      return;
    }
    const body = li.querySelector(":scope > .msg-body");
    const editor = renderEditor(messageId, this.texts.get(messageId) ?? body?.textContent ?? "");
    if (body) body.hidden = true;
    li.querySelector(":scope > .msg-role").after(editor);
    const field = /** @type {HTMLTextAreaElement} */ (editor.querySelector("textarea"));
    field.focus();
    field.setSelectionRange(field.value.length, field.value.length);
  }

  closeEditor(editor) {
    const body = editor.parentElement?.querySelector(":scope > .msg-body");
    if (body) body.hidden = false;
    editor.remove();
    document.getElementById("message-input")?.focus();
  }

  /** @param {HTMLFormElement} editor */
  submit(editor) {
    const content = /** @type {HTMLTextAreaElement} */ (editor.querySelector("textarea")).value.trim();
    if (!content) return;
    if (!this.send({ type: "edit", message: editor.dataset.message, content })) {
      this.notify("Not connected right now; your edit is still in the box. Reconnecting…", "warning");
      return;
    }
    /** @type {HTMLButtonElement} */ (editor.querySelector("[data-testid=edit-send]")).disabled = true;
  }

  /** Whether a branch point's chosen alternative changed: the points now. */
  replace(points) {
    this.points = points || [];
  }
}
