// @ts-check
// Everything a run waits on a person for, in one box above the composer:
// - tool calls waiting for approval, each with its full arguments, answered with an `approve`
//   frame (Approve, Deny with a reason the model reads, or Approve with edited arguments);
// - questions the model asked (`ask_user`), answered with an `answer` frame (a choice, or
//   free text where the question takes it);
// - an MCP server's requests for the user's input (a form, or a page to open: `input_form.js`),
//   answered with a `respond` frame.
// Every tab shows the same lists: the server's `approval`, `question` and `input` frames and the
// `state` frame replace them whole. What comes to wait is brought into view with its first control
// focused, and announced to screen readers.

import { el, prettyJson } from "./dom.js";
import { inputItem, showRefusal } from "./input_form.js";

export class ApprovalPanel {
  /**
   * @param {{send: (frame: object) => boolean, notify: (text: string, kind?: string) => void,
   *          before: Element}} options
   */
  constructor({ send, notify, before }) {
    this.send = send;
    this.notify = notify;
    this.box = el("section", {
      className: "approval-box",
      "data-testid": "approval-box",
      "aria-label": "Waiting for you: tool calls to approve, questions and forms to answer",
      hidden: true,
    });
    before.before(this.box);
    /** @type {any[]} */
    this.approvals = [];
    /** @type {any[]} */
    this.questions = [];
    /** @type {any[]} */
    this.inputs = [];
    /** The input request whose answer went out last (a refusal is shown in its form). */
    this.answering = /** @type {HTMLElement | null} */ (null);
    // Read out when a call comes to wait (the box itself is not a live region: its buttons
    // and fields would be read again on every update).
    this.announcer = el("p", { className: "visually-hidden", "aria-live": "assertive", "data-testid": "approval-announcer" });
    this.box.after(this.announcer);
  }

  /** Show `approvals` (the pending ones; with no question either, the box hides). */
  show(approvals) {
    this.approvals = (approvals || []).filter((approval) => approval.status === "pending");
    this.render();
  }

  /** Show `questions` (the pending ones), beside the approvals. */
  showQuestions(questions) {
    this.questions = (questions || []).filter((question) => question.status === "pending");
    this.render();
  }

  /** Show the MCP servers' requests for input that wait (`requests`), beside the rest. */
  showInputs(requests) {
    this.inputs = requests || [];
    this.render();
  }

  /** The server refused the last answer to a request for input (its content did not fit):
   * its form says why, and its buttons work again. */
  inputRefused(message) {
    const item = this.answering;
    if (!item || !item.isConnected) return false;
    showRefusal(item, message);
    for (const button of item.querySelectorAll("button")) button.disabled = false;
    const first = item.querySelector(".input-form input, .input-form select");
    if (first instanceof HTMLElement) first.focus();
    return true;
  }

  /** Lay out what waits. An item already shown keeps its element, so a reason, an answer
   * being typed or arguments being edited survive the update. */
  render() {
    const shown = new Map(Array.from(this.box.children, (item) => [item.dataset.waitKey, item]));
    const waiting = [
      ...this.approvals.map((approval) => ({ key: `approval:${approval.id}`, approval, question: null, input: null })),
      ...this.questions.map((question) => ({ key: `question:${question.id}`, approval: null, question, input: null })),
      ...this.inputs.map((input) => ({ key: `input:${input.id}`, approval: null, question: null, input })),
    ];
    const fresh = waiting.filter((entry) => !shown.has(entry.key));
    this.box.replaceChildren(
      ...waiting.map((entry) => {
        const item = shown.get(entry.key) || this.itemOf(entry);
        item.dataset.waitKey = entry.key;
        return item;
      }),
    );
    this.box.hidden = waiting.length === 0;
    if (fresh.length) this.present(fresh);
  }

  /** A new item for what waits. */
  itemOf(entry) {
    if (entry.approval) return this.item(entry.approval);
    if (entry.question) return this.questionItem(entry.question);
    return inputItem(entry.input, (item, frame) => {
      this.answering = item;
      this.decide(item, frame);
    });
  }

  /** New things wait: say so, and put the first one's first control where the eye is. */
  present(fresh) {
    const calls = fresh.filter((entry) => entry.approval).map((entry) => entry.approval.tool);
    const asked = fresh.filter((entry) => entry.question).map((entry) => entry.question.question);
    const inputs = fresh.filter((entry) => entry.input).map((entry) => `${entry.input.server} asks you: ${entry.input.message}`);
    const said = [];
    if (calls.length) said.push(`${calls.length === 1 ? "A tool call waits" : `${calls.length} tool calls wait`} for your approval: ${calls.join(", ")}.`);
    if (asked.length) said.push(`The agent asks you: ${asked.join(" ")}`);
    said.push(...inputs);
    this.announcer.textContent = said.join(" ");
    const item = this.box.querySelector(`[data-wait-key="${CSS.escape(fresh[0].key)}"]`);
    if (!item) return;
    item.scrollIntoView({ block: "center" });
    const first = item.querySelector(
      "[data-testid=approval-approve], [data-testid=question-choice], [data-testid=question-text], .input-form input, .input-form select, .input-form button, [data-testid=input-open]",
    );
    if (first instanceof HTMLElement) first.focus({ preventScroll: true });
  }

  /** One question the model asked: its choices as buttons, a text box where free text is
   * taken. */
  questionItem(question) {
    const item = el(
      "div",
      { className: "approval question", "data-testid": "question", "data-question-id": question.id, "data-call-id": question.call_id },
      el("p", { className: "approval-head", text: "The agent asks you:" }),
      el("p", { className: "question-text", "data-testid": "question-asked", text: question.question }),
    );
    const actions = el("div", { className: "approval-actions" });
    for (const choice of question.choices || []) {
      const button = el("button", { type: "button", "data-testid": "question-choice", text: choice });
      button.addEventListener("click", () => this.decide(item, { type: "answer", id: question.id, answer: choice }));
      actions.append(button);
    }
    if (actions.childElementCount) item.append(actions);
    if (question.free_text) {
      const text = el("input", {
        className: "approval-reason",
        "data-testid": "question-text",
        type: "text",
        maxlength: 10000,
        placeholder: question.choices?.length ? "Or type another answer" : "Your answer",
        "aria-label": `Your answer to: ${question.question}`,
      });
      const send = el("button", { type: "button", className: "secondary", "data-testid": "question-send", text: "Answer" });
      const submit = () => {
        const answer = text.value.trim();
        if (!answer) {
          this.notify("Type an answer first.");
          return;
        }
        this.decide(item, { type: "answer", id: question.id, answer });
      };
      send.addEventListener("click", submit);
      text.addEventListener("keydown", (event) => {
        if (event.key === "Enter") {
          event.preventDefault();
          submit();
        }
      });
      item.append(el("div", { className: "approval-actions" }, text, send));
    }
    if (question.expires) {
      const at = new Date(question.expires);
      item.append(el("p", { className: "approval-expires", text: `The agent goes on without an answer at ${at.toLocaleTimeString()}.` }));
    }
    return item;
  }

  /** A decision was refused (bad arguments, decided elsewhere): the buttons work again. */
  released() {
    for (const button of this.box.querySelectorAll("button")) button.disabled = false;
  }

  item(approval) {
    const args = el("textarea", {
      className: "approval-args",
      "data-testid": "approval-arguments",
      rows: 6,
      readonly: true,
      "aria-label": `Arguments of ${approval.tool}`,
    });
    args.value = prettyJson(approval.arguments ?? {});
    const reason = el("input", {
      className: "approval-reason",
      "data-testid": "approval-reason",
      type: "text",
      maxlength: 2000,
      placeholder: "Reason (optional; the model reads it)",
      "aria-label": "Reason for a denial",
    });
    const item = el(
      "div",
      { className: "approval", "data-testid": "approval", "data-approval-id": approval.id, "data-call-id": approval.call_id },
      el(
        "p",
        { className: "approval-head" },
        el("code", { className: "tool-name", text: approval.tool }),
        " waits for your approval",
        approval.rule ? el("span", { className: "tool-rule", text: ` (rule: ${approval.rule})` }) : null,
      ),
      args,
    );
    if (approval.expires) {
      const at = new Date(approval.expires);
      item.append(el("p", { className: "approval-expires", text: `Denied automatically at ${at.toLocaleTimeString()} if nobody decides.` }));
    }
    if (approval.approver === "staff") {
      item.append(el("p", { className: "approval-operator", "data-testid": "approval-operator", text: "An operator decides this call, in the admin." }));
      return item;
    }
    const edit = el("button", { type: "button", className: "secondary", "data-testid": "approval-edit", text: "Edit arguments" });
    const approve = el("button", { type: "button", "data-testid": "approval-approve", text: "Approve" });
    const deny = el("button", { type: "button", className: "danger", "data-testid": "approval-deny", text: "Deny" });
    edit.addEventListener("click", () => {
      args.readOnly = false;
      args.focus();
      edit.hidden = true;
      approve.textContent = "Approve with these arguments";
    });
    approve.addEventListener("click", () => {
      const frame = { type: "approve", id: approval.id, decision: "approve" };
      if (!args.readOnly) {
        try {
          frame.arguments = JSON.parse(args.value);
        } catch {
          this.notify("The arguments are not valid JSON.");
          return;
        }
        if (frame.arguments === null || typeof frame.arguments !== "object" || Array.isArray(frame.arguments)) {
          this.notify("The arguments must be a JSON object.");
          return;
        }
      }
      this.decide(item, frame);
    });
    deny.addEventListener("click", () => {
      this.decide(item, { type: "approve", id: approval.id, decision: "deny", reason: reason.value.trim() });
    });
    item.append(reason, el("div", { className: "approval-actions" }, approve, deny, edit));
    return item;
  }

  decide(item, frame) {
    if (!this.send(frame)) {
      this.notify("Not connected right now; reconnecting…", "warning");
      return;
    }
    for (const button of item.querySelectorAll("button")) button.disabled = true;
  }
}
