// @ts-check
// Tool calls waiting for a person: the box above the composer that shows each one with its
// full arguments, and answers it with an `approve` frame (Approve, Deny with a reason the
// model reads, or Approve with edited arguments). Every tab shows the same list: the server's
// `approval` frames and the `state` frame replace it whole. A call that comes to wait is
// brought into view with Approve focused, and announced to screen readers.

import { el, prettyJson } from "./render.js";

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
      "aria-label": "Tool calls waiting for your approval",
      hidden: true,
    });
    before.before(this.box);
    // Read out when a call comes to wait (the box itself is not a live region: its buttons
    // and fields would be read again on every update).
    this.announcer = el("p", { className: "visually-hidden", "aria-live": "assertive", "data-testid": "approval-announcer" });
    this.box.after(this.announcer);
  }

  /** Show `approvals` (the pending ones; an empty list hides the box). A call already shown
   * keeps its item, so a reason being typed or arguments being edited survive the update. */
  show(approvals) {
    const waiting = (approvals || []).filter((approval) => approval.status === "pending");
    const shown = new Map(
      Array.from(this.box.children, (item) => [item.dataset.approvalId, item]),
    );
    const fresh = waiting.filter((approval) => !shown.has(String(approval.id)));
    this.box.replaceChildren(
      ...waiting.map((approval) => shown.get(String(approval.id)) || this.item(approval)),
    );
    this.box.hidden = waiting.length === 0;
    if (fresh.length) this.present(fresh);
  }

  /** New calls wait: say so, and put the first one's Approve where the eye is. */
  present(fresh) {
    const names = fresh.map((approval) => approval.tool).join(", ");
    this.announcer.textContent = `${fresh.length === 1 ? "A tool call waits" : `${fresh.length} tool calls wait`} for your approval: ${names}.`;
    const item = this.box.querySelector(`[data-approval-id="${CSS.escape(String(fresh[0].id))}"]`);
    if (!item) return;
    item.scrollIntoView({ block: "center" });
    const approve = item.querySelector("[data-testid=approval-approve]");
    if (approve instanceof HTMLElement) approve.focus({ preventScroll: true });
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
